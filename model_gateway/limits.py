"""Provider limits as the model access declares them, and the retry policy of the gateway.

    limits:
      anthropic: {requests_per_minute: 50, tokens_per_minute: 400000, concurrent_streams: 8}
    retry: {max_retries: 4, max_wait_s: 60, total_wait_s: 300}

A limit of None is no limit. The limiter (model_gateway.limiter) keeps every attempt of a
campaign within them; the retry policy says what the gateway does with a 429 / 529 / 503 the
provider still answers: wait (the provider's `Retry-After`, else an exponential back-off), never
longer than `max_wait_s` at once nor `total_wait_s` for one call, at most `max_retries` times;
after that the provider's answer reaches the agent as it was.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# The answers that mean "not now" rather than "no": rate limited, overloaded (Anthropic), unavailable.
RETRY_STATUSES = (429, 529, 503)


class ProviderLimits(BaseModel):
    """What one provider account allows, shared by every attempt of the campaign."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)
    concurrent_streams: int | None = Field(default=None, ge=1)


class RetryPolicy(BaseModel):
    """How the gateway retries a call the provider answered with a retry status."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_retries: int = Field(default=4, ge=0)
    max_wait_s: float = Field(default=60.0, gt=0, description="cap on one wait, Retry-After included")
    total_wait_s: float = Field(default=300.0, gt=0, description="cap on the waits of one call")
    backoff_s: float = Field(default=1.0, gt=0, description="first back-off without Retry-After (doubles)")

    def wait_for(self, retry: int, retry_after_s: float | None) -> float:
        """The wait before retry number `retry` (0-based): Retry-After if given, else back-off; capped."""
        wait = retry_after_s if retry_after_s is not None else self.backoff_s * (2 ** retry)
        return max(0.0, min(wait, self.max_wait_s))


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds only; an HTTP date is read as absent)."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 and seconds == seconds else None
