"""What a run costs: tokens in and out and the estimated cost, as far as the server says (pure, no I/O).

Servers say it in different places, all read here into one :class:`Cost`:

* a session row's ``token_usage`` and ``estimated_cost`` (our server sums what the agent reported with its
  model calls; Preloop its gateway's calls; a Dendrux run's token totals and ``total_cost_usd``);
* each model call's :class:`client.models.CallUsage` (a ``model.step``'s ``usage``), which is what a
  window ("+$0.42 · 12k tokens since 14:00") and a live header between two rows add up.

A figure the server does not give is never shown as zero: a session with no usage has no :class:`Cost`
(None: the column, the header and the digest show nothing), a cost of exactly 0 with tokens reads as the
tokens alone (Preloop answers 0.0 for a model it has no price for), and "$0.00" is never written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from client.models import CallUsage, Session

__all__ = ["Cost", "cost_json", "cost_words", "money", "row_cost", "tokens"]


@dataclass(frozen=True, slots=True)
class Cost:
    """Tokens and money; ``input_tokens`` / ``output_tokens`` None when the server gave only a total,
    ``usd`` None when it gave no (non-zero) cost."""

    total_tokens: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    usd: float | None = None

    @property
    def known(self) -> bool:
        """Whether there is anything to say (some tokens, or a cost above zero)."""
        return self.total_tokens > 0 or bool(self.usd)

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.total_tokens + other.total_tokens,
            _plus(self.input_tokens, other.input_tokens),
            _plus(self.output_tokens, other.output_tokens),
            _plus(self.usd, other.usd),
        )

    @staticmethod
    def of_call(usage: CallUsage) -> Cost:
        """One model call's usage."""
        return Cost(usage.tokens, usage.input_tokens, usage.output_tokens, usage.cost_usd or None)

    @staticmethod
    def of_calls(usages: Iterable[CallUsage]) -> Cost | None:
        """Calls added up; None when none of them said anything."""
        total = sum((Cost.of_call(u) for u in usages), Cost())
        return total if total.known else None


def _plus(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def row_cost(row: Session | None) -> Cost | None:
    """A session row's tokens and cost; None when the row gives none (no usage, or only zeros)."""
    if row is None:
        return None
    usage = row.token_usage
    usd = row.estimated_cost if row.estimated_cost else None
    if usage is None:
        return Cost(usd=usd) if usd else None
    inputs = usage.input_tokens or usage.prompt_tokens
    outputs = usage.output_tokens or usage.completion_tokens
    total = usage.total_tokens or inputs + outputs
    cost = Cost(
        total,
        inputs if inputs or outputs else None,
        outputs if inputs or outputs else None,
        usd,
    )
    return cost if cost.known else None


def money(usd: float | None) -> str | None:
    """``$0.42``, ``<$0.01``, ``$1,234``; None for no cost (never ``$0.00``)."""
    if not usd or usd <= 0:
        return None
    if usd < 0.01:
        return "<$0.01"
    if usd < 1000:
        return f"${usd:,.2f}"
    return f"${usd:,.0f}"


def tokens(count: int) -> str:
    """``950``, ``9.8k``, ``12k``, ``1.2M``: a count of tokens at a glance."""
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    if count < 1_000_000:
        return f"{count // 1000}k"
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


def cost_words(cost: Cost | None, *, split: bool = True, unit: str = " tokens") -> str | None:
    """``$0.42 · 12k tokens (9.8k in / 2.2k out)``: the cost first when known, then the tokens, with the
    split in and out when the server gave it (``split``); None when there is nothing to say."""
    if cost is None or not cost.known:
        return None
    parts = []
    price = money(cost.usd)
    if price is not None:
        parts.append(price)
    if cost.total_tokens:
        words = f"{tokens(cost.total_tokens)}{unit}"
        if split and cost.input_tokens is not None and cost.output_tokens is not None:
            words += f" ({tokens(cost.input_tokens)} in / {tokens(cost.output_tokens)} out)"
        parts.append(words)
    return " · ".join(parts)


def cost_json(cost: Cost | None) -> dict[str, Any] | None:
    """The cost for scripts: the figures as the server gave them, None for each it did not."""
    if cost is None:
        return None
    return {
        "input_tokens": cost.input_tokens,
        "output_tokens": cost.output_tokens,
        "total_tokens": cost.total_tokens,
        "cost_usd": round(cost.usd, 6) if cost.usd is not None else None,
    }
