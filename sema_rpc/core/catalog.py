"""What is known about common model families without asking anyone: whether a model takes
images, and its list price.

Both answers are for a model id as the provider names it (`claude-sonnet-4-5`,
`gpt-4o-2024-08-06`). A profile in models.json overrides them (`images`, `price`); a model
this module does not know takes no images and has no price (costs are then null, never a
guess).

Stdlib only: imported with the config at startup.
"""

from __future__ import annotations

import re
from typing import Any

from sema_rpc.plain_record import FrozenRecord

__all__ = ["Price", "builtin_price", "infer_images", "price_from_json", "price_key"]


class Price(FrozenRecord):
    """USD per million tokens. `input`: input tokens neither read from nor written to the
    prompt cache; `cache_read` / `cache_write`: the cached ones."""

    # A plain class (every server loads this module; a dataclass costs its creation).
    __slots__ = ("cache_read", "cache_write", "input", "output")
    _fields = ("input", "output", "cache_read", "cache_write")

    input: float
    output: float
    cache_read: float
    cache_write: float

    def __init__(self, input: float, output: float, cache_read: float, cache_write: float) -> None:
        set_field = object.__setattr__
        set_field(self, "input", input)
        set_field(self, "output", output)
        set_field(self, "cache_read", cache_read)
        set_field(self, "cache_write", cache_write)

    def public(self) -> dict[str, float]:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
        }


def _anthropic(inp: float, out: float) -> Price:
    # Anthropic's list prices: a cache read costs 0.1x the input price, a (5-minute)
    # cache write 1.25x.
    return Price(inp, out, round(inp * 0.1, 6), round(inp * 1.25, 6))


def _openai(inp: float, out: float, cached: float) -> Price:
    # OpenAI charges nothing extra to write its automatic prompt cache (and reports no
    # cache-write tokens): a write costs the input price.
    return Price(inp, out, cached, inp)


# List prices (standard tier, prompts within the model's base context window), USD per
# million tokens, keyed by model id without a date suffix.
_PRICES: dict[str, Price] = {
    # Anthropic
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4-1": _anthropic(15.0, 75.0),
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-4-opus": _anthropic(15.0, 75.0),
    "claude-sonnet-4-5": _anthropic(3.0, 15.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-4-sonnet": _anthropic(3.0, 15.0),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "claude-3-5-sonnet": _anthropic(3.0, 15.0),
    "claude-haiku-4-5": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.8, 4.0),
    "claude-3-opus": _anthropic(15.0, 75.0),
    "claude-3-haiku": Price(0.25, 1.25, 0.03, 0.30),
    # OpenAI
    "gpt-5.1": _openai(1.25, 10.0, 0.125),
    "gpt-5": _openai(1.25, 10.0, 0.125),
    "gpt-5-mini": _openai(0.25, 2.0, 0.025),
    "gpt-5-nano": _openai(0.05, 0.40, 0.005),
    "gpt-4.1": _openai(2.0, 8.0, 0.50),
    "gpt-4.1-mini": _openai(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _openai(0.10, 0.40, 0.025),
    "gpt-4o": _openai(2.50, 10.0, 1.25),
    "gpt-4o-mini": _openai(0.15, 0.60, 0.075),
    "gpt-4o-2024-05-13": _openai(5.0, 15.0, 5.0),  # the first GPT-4o snapshot: its own price
    "o1": _openai(15.0, 60.0, 7.50),
    "o3": _openai(2.0, 8.0, 0.50),
    "o3-mini": _openai(1.10, 4.40, 0.55),
    "o4-mini": _openai(1.10, 4.40, 0.275),
}

# A date or `-latest` at the end of a model id names a snapshot of the same model.
_SNAPSHOT = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")


def price_key(model: str) -> str:
    """The model id the price table is keyed by: lower case, without a snapshot suffix."""
    return _SNAPSHOT.sub("", model.strip().lower())


def builtin_price(model: str) -> Price | None:
    """The list price of a known model; None for any other (exact ids only: `o3-pro` is
    not priced as `o3`). A snapshot priced apart from its model is listed by its own id."""
    return _PRICES.get(model.strip().lower()) or _PRICES.get(price_key(model))


# Families that take image input. Anything else (older models, the `-mini` reasoning
# models, local servers, replay) is assumed not to.
_IMAGES = re.compile(
    r"^(claude-(3|4|opus|sonnet|haiku)"
    r"|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|gpt-5|chatgpt-4o"
    r"|o1(?!-mini|-preview)|o3(?!-mini)|o4-mini)"
)


def infer_images(provider: str, model: str) -> bool:
    """Whether a model of a known family takes images (false for an unknown one)."""
    if provider == "replay":
        return False
    return bool(_IMAGES.match(model.strip().lower()))


def price_from_json(raw: Any, where: str) -> Price:
    """A models.json `price`: `{input, output, cacheRead?, cacheWrite?}` in USD per million
    tokens; a missing cache price is the input price. Raises ValueError with a message."""
    if not isinstance(raw, dict):
        raise ValueError(f'{where}: "price" must be an object like {{"input": 3, "output": 15}}')
    values: dict[str, float] = {}
    for key in ("input", "output", "cacheRead", "cacheWrite"):
        val = raw.get(key)
        if val is None and key in ("input", "output"):
            raise ValueError(f'{where}: "price" needs "{key}" (USD per million tokens)')
        if val is None:
            continue
        if isinstance(val, bool) or not isinstance(val, int | float) or not val >= 0:
            raise ValueError(f'{where}: price "{key}" must be a number >= 0, got {val!r}')
        values[key] = float(val)
    return Price(
        values["input"],
        values["output"],
        values.get("cacheRead", values["input"]),
        values.get("cacheWrite", values["input"]),
    )
