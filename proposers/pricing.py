"""What a proposer call costs: USD per million tokens by model, from the provider's price list."""

from .base import Exchange


# USD per million tokens; edit to follow the price list. Cache writes by lifetime: `cache_write`
# for the 5-minute cache (1.25x input; the breakpoints of proposers/prompts.py use it) and
# `cache_write_1h` for the 1-hour cache (2x input; ANTHROPIC_CACHE_TTL=1h); reads 0.1x input.
LLM_PRICES = PRICES = {
    "claude-opus-4-1": {"input": 15.0, "output": 75.0, "cache_write": 18.75, "cache_write_1h": 30, "cache_read": 1.5},
    "claude-opus-4-6": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_write_1h": 10, "cache_read": 0.5},
    "claude-opus-4-5": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_write_1h": 10, "cache_read": 0.5},
    "claude-sonnet-4-6": {"input": 3.0, "output": 15.0, "cache_write": 3.75, "cache_write_1h": 6, "cache_read": 0.3},
    "claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "cache_write": 3.75, "cache_write_1h": 6, "cache_read": 0.3},
    "claude-haiku-4-5": {"input": 1.0, "output": 5.0, "cache_write": 1.25, "cache_write_1h": 2, "cache_read": 0.1},
}
DEFAULT_PRICE = {"input": 15.0, "output": 75.0, "cache_write": 18.75, "cache_write_1h": 30, "cache_read": 1.5}


def call_cost(exchange: Exchange) -> float:
    """USD for one call (unknown models are priced high, so budgets err on the safe side)."""
    if not (exchange.input_tokens or exchange.output_tokens or exchange.cache_read_tokens or exchange.cache_write_tokens):
        return 0.0
    price = PRICES.get(exchange.model) or price_by_prefix(exchange.model) or DEFAULT_PRICE
    return (
        exchange.input_tokens * price["input"]
        + exchange.output_tokens * price["output"]
        + (exchange.cache_write_tokens - exchange.cache_write_1h_tokens) * price["cache_write"]
        + exchange.cache_write_1h_tokens * price["cache_write_1h"]
        + exchange.cache_read_tokens * price["cache_read"]
    ) / 1_000_000


def price_by_prefix(model: str) -> dict | None:
    # Dated model ids ("claude-sonnet-4-5-20250929") share their family's price.
    for name, price in PRICES.items():
        if model.startswith(name):
            return price
    return None
