"""bb-erp in a browser: server-rendered pages that act only through the agent API.

Every page and every button is one or more requests to bb-erp's agent API made with the
signed-in user's token, so a click is audited, permissioned and fault-injected exactly like an
agent's request. This package never imports erp_service: it knows the ERP only over HTTP and
through its OpenAPI document.

`app.create_app` builds the app from `routes/` (one router per area) and `deps.py` (the app's
state and the signed-in person's ERP client, as FastAPI dependencies).
"""
