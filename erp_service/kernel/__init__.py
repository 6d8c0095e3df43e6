"""The kernel every domain builds on: schema helpers, transactions, actors, audit, idempotency."""
