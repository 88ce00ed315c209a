"""Cost estimates from token usage and the prices configured under ``models.prices`` (USD per million tokens)."""

from __future__ import annotations

from collections.abc import Mapping

from seepient.config.sections import PriceSettings
from seepient.protocol import Usage


def estimate_cost(usage: Usage, price: PriceSettings) -> float | None:
    """US dollars for ``usage``: fresh input, cache reads, cache writes and output, each at its own price;
    ``None`` when the provider did not report the tokens."""
    if usage.input_tokens is None or usage.output_tokens is None:
        return None
    cached = usage.cached_input_tokens
    written = usage.cache_write_input_tokens
    fresh = max(usage.input_tokens - cached - written, 0)
    cached_price = price.input if price.cached_input is None else price.cached_input
    write_price = price.input if price.cache_write is None else price.cache_write
    total = (
        fresh * price.input
        + cached * cached_price
        + written * write_price
        + usage.output_tokens * price.output
    )
    return total / 1_000_000


def priced(usage: Usage, target: str, prices: Mapping[str, PriceSettings]) -> Usage:
    """``usage`` with ``cost_usd`` set when ``prices`` names ``target`` (a ``provider:model`` spec)."""
    price = prices.get(target)
    if price is None:
        return usage
    return usage.model_copy(update={"cost_usd": estimate_cost(usage, price)})
