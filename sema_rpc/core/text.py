"""Text the process can always encode: the one rule for lone surrogates.

A lone UTF-16 surrogate (U+D800–U+DFFF) is not text: it cannot be encoded as UTF-8, so a
request body, a history line or a notification holding one fails to serialise, and every
later model request of the session fails with it. Such code points come from three
places: a JSON escape in a client's message (`"\\ud800"`, what JavaScript's
`JSON.stringify` gives for a string cut inside an emoji), a file name that is not UTF-8
(Python decodes it with `surrogateescape`), and a history file written before this rule.
Each entry point passes what it reads through `without_surrogates`, which puts U+FFFD in
place of each lone surrogate and leaves everything else as it was.
"""

from __future__ import annotations

import re
from typing import Any

SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A JSON escape that may decode to a surrogate: a cheap test before walking a message."""
_SURROGATES = re.compile("[\ud800-\udfff]")


def without_surrogates(value: Any) -> Any:
    """`value` (a str, or JSON-shaped lists and dicts of them) with every lone surrogate
    replaced by U+FFFD. A str without one is returned as it is (no copy)."""
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value) if _SURROGATES.search(value) else value
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    return value
