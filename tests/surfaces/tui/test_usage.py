"""The usage meter behind the status line and ``/cost``: totals, and unknown (never 0) where a provider sent no
usage or no prices are set."""

from __future__ import annotations

from seepient.protocol import Usage
from seepient.surfaces.tui.usage import UsageMeter


def test_totals_and_cost_from_prices():
    meter = UsageMeter()
    meter.add(Usage(input_tokens=1200, output_tokens=80, cached_input_tokens=1000, cost_usd=0.0012))
    meter.add(Usage(input_tokens=300, output_tokens=20, cost_usd=0.0003))
    assert meter.turns == 2
    assert meter.status() == "tokens 1,500 in / 100 out · cost $0.0015"


def test_no_prices_is_unknown_cost_and_a_partly_priced_total_is_a_floor():
    meter = UsageMeter()
    meter.add(Usage(input_tokens=10, output_tokens=2))
    assert meter.status() == "tokens 10 in / 2 out · cost unknown"
    meter.add(Usage(input_tokens=10, output_tokens=2, cost_usd=0.5))
    assert meter.cost == "≥ $0.5000"


def test_usage_the_provider_did_not_send_makes_the_total_unknown():
    meter = UsageMeter()
    meter.add(Usage(input_tokens=10, output_tokens=2))
    # A provider that sent no usage: the fields are absent (None), not 0.
    meter.add(Usage.model_construct(input_tokens=None, output_tokens=None, cached_input_tokens=None))
    assert meter.status() == "tokens unknown in / unknown out · cost unknown"
    meter.add(Usage(input_tokens=5, output_tokens=1))
    assert meter.input_tokens is None  # once unknown, the total stays unknown
