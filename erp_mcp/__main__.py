"""`python -m erp_mcp serve --erp-url URL --bind HOST:PORT` (see erp_mcp.serve)."""
from erp_mcp.serve import main

raise SystemExit(main())
