"""`policy_kit.checked_write` (check-before-resend, the alt policies' write hygiene) against the
real serve process under faults: a write that failed before committing is sent again even when
the check is a yes/no predicate, and one whose answer was lost after committing is not."""
from __future__ import annotations

from pathlib import Path

import pytest
from erp_finance_support import finance_company
from erp_server import copy_db, message, start_server

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import checked_write


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    c = finance_company(tmp_path_factory.mktemp("policy-kit-template"))
    c.builder.db.close()
    return c.path, dict(c.tokens)


@pytest.mark.parametrize("fault", ["fail_before:POST /outbox@1", "lost_response:POST /outbox@1"])
def test_checked_write_sends_again_only_when_the_effect_is_absent(tmp_path, template, fault):
    _, tokens = template
    user = "ap_clerk" if "ap_clerk" in tokens else sorted(tokens)[0]
    s = start_server(tmp_path, copy_db(template, tmp_path), faults=fault)
    try:
        with ErpClient(s.ready["agent"], tokens[user]) as client:
            body = message("checked")

            def there() -> bool:  # a predicate: False (not None) when the ERP holds nothing
                return any(m.get("subject") == body["subject"] for m in client.list_all("/outbox"))

            checked_write(lambda: client.post("/outbox", body), there)
            sent = [m for m in client.list_all("/outbox") if m.get("subject") == body["subject"]]
    finally:
        s.stop()
    assert len(sent) == 1, (fault, sent)  # fail_before: sent again once; lost_response: not twice
