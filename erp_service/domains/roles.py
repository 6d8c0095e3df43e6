"""The roles of the company and the action codes each may perform.

Action codes are the vocabulary of permissions and of the audit log's ``action`` column; every
write route uses one as its operation_id. ``box.<name>`` grants an inbox; ``x.*`` grants every
action under ``x``; ``*`` grants everything (admin only).
"""
from __future__ import annotations

_PURCHASING = ["req.create", "req.submit", "req.cancel", "req.forward", "po.create", "po.add_line", "po.update_line",
               "po.send", "po.cancel", "po.close_line", "po.close", "vendor.request", "msg.send", "msg.dispose",
               "escalate", "call", "box.purchasing"]
_AP = ["ap.enter", "ap.update_line", "ap.hold", "ap.validate", "ap.reject", "msg.send", "msg.dispose",
       "escalate", "call", "vendor.request", "box.ap"]

ROLES: dict[str, tuple[str, list[str]]] = {
    "staff": ("Any employee: requests and messages.", ["req.create", "req.submit", "req.cancel", "req.forward",
                                                       "msg.send",
                                                       "escalate", "call", "box.general"]),
    "dept_head": ("Department head: approves requisitions within limit.",
                  ["req.create", "req.submit", "req.cancel", "req.approve", "req.reject", "req.return",
                   "req.forward", "msg.send", "escalate", "call", "box.general"]),
    "purchasing_manager": ("Purchasing manager: approves requisitions and POs within limit.",
                           _PURCHASING + ["req.approve", "req.reject", "req.return", "req.forward", "po.approve",
                                          "vendor.create", "vendor.update", "item.update"]),
    "buyer": ("Buyer: converts requisitions into purchase orders.", _PURCHASING),
    "receiver": ("Receiver: posts and reverses receipts.",
                 ["rcv.post", "rcv.reverse", "msg.send", "msg.dispose", "escalate", "call",
                  "box.receiving", "box.warehouse"]),
    "ap_clerk": ("AP clerk: enters and matches vendor invoices.", _AP),
    "ap_supervisor": ("AP supervisor: invoices, holds, payment runs, vendor bank details.",
                      _AP + ["ap.release_hold", "ap.approve", "ap.void", "pay.create_run", "pay.add",
                             "pay.remove", "pay.submit", "pay.cancel", "vendor.bank.request",
                             "vendor.bank.verify", "vendor.bank.reject", "vendor.bank.withdraw",
                             "vendor.update"]),
    "controller": ("Controller: approves and releases payment runs and journal entries, closes periods.",
                   ["pay.approve", "pay.return", "pay.release", "je.create", "je.edit", "je.attach",
                    "je.submit", "je.approve", "je.return", "je.post", "je.reverse", "period.close",
                    "period.reopen", "ap.approve", "ap.release_hold", "msg.send", "msg.dispose",
                    "escalate", "call", "box.accounting", "box.ap", "audit.read"]),
    "staff_accountant": ("Staff accountant: journal entries and reconciliations.",
                         ["je.create", "je.edit", "je.attach", "je.submit", "je.post", "je.reverse",
                          "msg.send", "msg.dispose", "escalate", "call", "box.accounting"]),
    "planner": ("Production planner: MRP and item planning data.",
                ["mrp.run", "mrp.release", "item.update", "vendor.request", "wo.create", "msg.send",
                 "msg.dispose", "escalate", "call", "box.planning"]),
    "production_supervisor": ("Production supervisor: work orders.",
                              ["wo.create", "wo.release", "wo.issue", "wo.reverse_issue", "wo.complete",
                               "wo.close", "wo.cancel", "msg.send", "msg.dispose", "escalate", "call",
                               "box.production"]),
    "inventory_controller": ("Inventory controller: transfers and adjustments.",
                             ["inv.transfer", "inv.adjust", "msg.send", "msg.dispose", "escalate", "call",
                              "box.warehouse"]),
    "order_entry": ("Order entry: sales orders.",
                    ["so.create", "so.update_line", "so.hold", "so.cancel", "so.allocate", "msg.send", "msg.dispose",
                     "escalate", "call", "box.sales"]),
    "shipping": ("Shipping and billing: shipments and customer invoices.",
                 ["so.ship", "so.allocate", "ar.invoice", "msg.send", "msg.dispose", "escalate", "call", "box.shipping"]),
    "credit_manager": ("Credit manager: credit holds and releases.",
                       ["so.release_hold", "so.hold", "customer.update", "msg.send", "msg.dispose",
                        "escalate", "call", "box.credit"]),
    "ar_clerk": ("AR clerk: cash receipts and applications.",
                 ["ar.cash", "ar.apply", "msg.send", "msg.dispose", "escalate", "call", "box.ar"]),
    "auditor": ("Auditor: reads everything including the full audit log.", ["audit.read", "box.*"]),
    "analyst": ("Analyst: read-only.", []),
    "admin": ("Administrator: everything.", ["*"]),
    "vendor_bot": ("Counterparty: vendors.", ["po.acknowledge", "vendor.respond", "msg.deliver"]),
    "bank_bot": ("Counterparty: the bank.", ["bank.post", "ar.remit"]),
    "mail_bot": ("Counterparty: mail delivery.", ["msg.deliver"]),
}

BOXES = ("ap", "receiving", "purchasing", "accounting", "sales", "credit", "ar", "planning",
         "production", "warehouse", "shipping", "general")


def readable_boxes(actor) -> list[str]:
    """The boxes `actor` (a kernel `Actor`) may read: ``box.<name>``, ``box.*`` or ``*``."""
    return [b for b in BOXES if actor.can(f"box.{b}")]
