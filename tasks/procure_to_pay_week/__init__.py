"""procure-to-pay-week (B1): a task pack (task.yaml, generator, policies, projections, handbook)."""
