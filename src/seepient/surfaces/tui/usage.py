"""What the session has used so far, as the status line and ``/cost`` show it: tokens in and out, cached reads,
the estimated cost, and how much of the context window the next request would fill. Usage a provider did not
report (or a cost without prices) is shown as unknown, never as 0."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seepient.runtime import Session


def _tokens(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


class UsageMeter:
    """Totals over the turns since the conversation started (``/clear`` starts a new one)."""

    def __init__(self) -> None:
        self.turns = 0
        self.input_tokens: int | None = 0
        self.output_tokens: int | None = 0
        self.cached_tokens: int | None = 0
        self.cost_usd: float | None = None
        self._cost_missing = False

    def add(self, usage: Any) -> None:
        """Add one turn's ``Usage``; a field the provider left out makes the total unknown from then on."""
        self.turns += 1
        self.input_tokens = _sum(self.input_tokens, getattr(usage, "input_tokens", None))
        self.output_tokens = _sum(self.output_tokens, getattr(usage, "output_tokens", None))
        self.cached_tokens = _sum(self.cached_tokens, getattr(usage, "cached_input_tokens", None))
        cost = getattr(usage, "cost_usd", None)
        if cost is None:
            self._cost_missing = True
        else:
            self.cost_usd = (self.cost_usd or 0.0) + cost

    @property
    def cost(self) -> str:
        if self.cost_usd is None:
            return "unknown"
        text = f"${self.cost_usd:.4f}"
        return f"≥ {text}" if self._cost_missing else text

    def status(self) -> str:
        """The status line's part: ``tokens 1,200 in / 80 out · cost $0.0012`` (or unknown)."""
        return (
            f"tokens {_tokens(self.input_tokens)} in / {_tokens(self.output_tokens)} out · cost {self.cost}"
        )

    def report(self, session: Session) -> str:
        """``/cost``: the totals, what the prices cover, and the context window's use by the next request."""
        lines = [
            f"{self.turns} turn(s) in this conversation with {session.model_spec}",
            f"tokens: {_tokens(self.input_tokens)} in (of which {_tokens(self.cached_tokens)} cached), "
            f"{_tokens(self.output_tokens)} out",
        ]
        if self.cost_usd is None:
            lines.append(
                f"cost: unknown (no prices for {session.model_spec}: set models.prices in your settings)"
            )
        elif self._cost_missing:
            lines.append(f"cost: {self.cost} (some turns had no prices, so the total is at least this)")
        else:
            lines.append(f"cost: {self.cost} (estimated from models.prices)")
        context = session.context
        if context is not None:
            used = context.estimate(context.system_prompt(), session.history, tuple(session.registry.specs()))
            window = context.settings.window_tokens
            lines.append(
                f"context window: ~{used:,} of {window:,} tokens ({used / window:.0%}) for the next request; "
                f"history is compacted at {context.settings.compact_at:.0%}"
            )
        return "\n".join(lines)


def _sum(total: int | None, value: int | None) -> int | None:
    if total is None or value is None:
        return None
    return total + value
