"""The difference between two normalised message lists, as a unified diff."""

from __future__ import annotations

import difflib


def diff(expected: list[str], actual: list[str]) -> str:
    return "".join(
        difflib.unified_diff(
            [line + "\n" for line in expected],
            [line + "\n" for line in actual],
            fromfile="recorded",
            tofile="replayed",
            n=2,
        )
    )
