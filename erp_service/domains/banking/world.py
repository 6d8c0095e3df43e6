"""The world section the bank reads: items the bank itself originates on the statement."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ...sim import SectionModel, WorldDate, world_section


class BankItem(SectionModel):
    """One item the bank puts on the statement on its own (the company books it afterwards):

    - ``fee``: a service charge (a withdrawal of `amount`);
    - ``interest``: interest earned (a deposit of `amount`);
    - ``return``: a released payment that came back (the vendor's account was closed, say): a
      deposit of the payment's cash amount, posted once the payment has cleared — `payment_id`
      names it and `amount` is not given.

    `ref` is the bank's reference (unique); `bank_account_id` defaults to the company's first
    bank account. An item dated on a day the bank does not work appears the next workday."""

    on: WorldDate
    kind: Literal["fee", "interest", "return"]
    ref: str = Field(min_length=1, max_length=40)
    description: str = Field(min_length=1, max_length=200)
    amount: float | None = Field(None, gt=0)
    payment_id: str | None = None
    bank_account_id: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> BankItem:
        if self.kind == "return":
            if not self.payment_id or self.amount is not None:
                raise ValueError("a return names payment_id and no amount (the payment's amount comes back)")
        elif self.amount is None or self.payment_id is not None:
            raise ValueError(f"a {self.kind} gives an amount and no payment_id")
        return self


world_section("bank_items", list[BankItem], owner=__name__,
              doc="fees, interest and returned payments the bank puts on the statement")
