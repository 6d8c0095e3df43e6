"""bb-erp's MCP server: the agent API's tools, generated from its OpenAPI document (issue 17).

It imports nothing of the project: it reads the ERP's `/openapi.json` and calls the agent API
over HTTP with the token of whoever calls it, so every tool call goes through the ERP's own
pipeline (permissions, hard controls, idempotency, faults, audit).
"""
