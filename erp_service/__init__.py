"""bb-erp: the benchmark's own ERP, served over HTTP to one attempt at a time.

Layers, from the bottom up:
- `kernel/`: database, business clock, actors and permissions, problems, audit, idempotency
  and the write pipeline every change goes through (API, counterparties and generators alike);
- `domains/`: one package per business domain (tables, service functions, routes, actors;
  docs/erp-domains.md), and `roles.py`, the action codes every domain's routes use;
- `sim/`: the counterparties that act when the host advances the clock;
- `http/`: the agent API and the control API (FastAPI), the fault layer and the server.
"""
