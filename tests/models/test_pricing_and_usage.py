"""Cost estimates, usage arithmetic, and the image part's validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from seepient.config.sections import PriceSettings
from seepient.config.settings import Settings
from seepient.models.pricing import estimate_cost, priced
from seepient.protocol import ImagePart, Usage


def test_each_kind_of_token_is_priced_on_its_own():
    price = PriceSettings.model_validate(
        {"input": 3.0, "output": 15.0, "cachedInput": 0.3, "cacheWrite": 3.75}
    )
    usage = Usage(
        input_tokens=10_000, cached_input_tokens=6_000, cache_write_input_tokens=2_000, output_tokens=1_000
    )
    assert estimate_cost(usage, price) == pytest.approx(
        (2_000 * 3.0 + 6_000 * 0.3 + 2_000 * 3.75 + 1_000 * 15.0) / 1e6
    )


def test_cache_prices_default_to_the_input_price():
    price = PriceSettings.model_validate({"input": 1.0, "output": 2.0})
    usage = Usage(input_tokens=100, cached_input_tokens=40, cache_write_input_tokens=10, output_tokens=5)
    assert estimate_cost(usage, price) == pytest.approx((100 * 1.0 + 5 * 2.0) / 1e6)


def test_priced_only_when_the_target_has_prices():
    prices = Settings.model_validate(
        {"models": {"prices": {"openai:gpt-4.1": {"input": 2, "output": 8}}}}
    ).models.prices
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert priced(usage, "openai:gpt-4.1", prices).cost_usd == pytest.approx(10.0)
    assert priced(usage, "openai:gpt-4o", prices).cost_usd is None


def test_negative_prices_are_refused():
    with pytest.raises(ValidationError):
        PriceSettings.model_validate({"input": -1, "output": 1})


def test_usage_adds_up_and_keeps_an_unknown_cost_unknown():
    a = Usage(
        input_tokens=10, output_tokens=2, cached_input_tokens=4, cache_write_input_tokens=1, cost_usd=0.5
    )
    b = Usage(input_tokens=5, output_tokens=1)
    total = a + b
    assert (
        total.input_tokens,
        total.output_tokens,
        total.cached_input_tokens,
        total.cache_write_input_tokens,
    ) == (15, 3, 4, 1)
    assert total.cost_usd == 0.5
    assert (b + b).cost_usd is None


def test_usage_nobody_reported_stays_unknown_through_sums_prices_and_display():
    unknown = Usage()
    total = Usage.zero() + Usage(input_tokens=5, output_tokens=1) + unknown
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (None, None, None)
    assert total.tokens_summary() == "unknown in / unknown out"
    assert (Usage.zero() + Usage(input_tokens=1234, output_tokens=5)).tokens_summary() == "1,234 in / 5 out"
    prices = Settings.model_validate({"models": {"prices": {"llama:smollm": {"input": 1, "output": 1}}}})
    assert priced(unknown, "llama:smollm", prices.models.prices).cost_usd is None
    assert Usage.model_validate_json(unknown.model_dump_json()) == unknown


@pytest.mark.parametrize(
    "fields",
    [
        {"media_type": "image/png"},
        {"media_type": "image/png", "data": "aGk=", "url": "https://x/y.png"},
        {"media_type": "text/plain", "data": "aGk="},
    ],
)
def test_an_image_needs_an_image_type_and_exactly_one_source(fields):
    with pytest.raises(ValidationError):
        ImagePart(**fields)
