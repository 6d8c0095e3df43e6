"""requisition-approval-queue (A1): a task pack (task.yaml, generator, policies, projections, handbook)."""
