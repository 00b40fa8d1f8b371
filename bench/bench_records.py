"""The hand-written value classes (`sema_rpc/plain_record.py`) against the dataclasses they
replaced: what creating the classes costs, and what building the per-chunk stream events
costs.

(1) *class creation*: the milliseconds to create dataclass twins of the stream events,
`ModelProfile` and `LoopConfig` (each compiles its methods with `exec`), best of
`--rounds`; the plain classes are created at import with no `exec`.
(2) *construction*: nanoseconds per `TextDelta("x")` / `ThinkingDelta("x")` /
`ResponseFailed(error)` (built once per streamed delta), the plain class and a
`@dataclass(slots=True)` twin measured in alternation: the median of `--rounds` rounds of
`--count` each, and their ratio.

Run: `.venv/bin/python bench/bench_records.py [--rounds N] [--count N]`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sema_rpc.core.stream import ProviderError, ResponseFailed, TextDelta, ThinkingDelta


def _twins() -> dict[str, type]:
    """Dataclass twins of some converted classes (fields and flags as they were)."""

    @dataclass(slots=True)
    class TextDeltaDC:
        text: str

    @dataclass(slots=True)
    class ThinkingDeltaDC:
        text: str

    @dataclass(slots=True)
    class ProviderErrorDC:
        kind: str
        message: str
        status: int | None = None
        code: str | None = None

    @dataclass(slots=True)
    class ResponseFailedDC:
        error: Any

    @dataclass(slots=True)
    class ModelRequestDC:
        model: str
        system: str
        messages: list[Any]
        tools: list[Any] = field(default_factory=list)
        max_tokens: int = 8192
        thinking_budget: int | None = None
        temperature: float | None = None

    @dataclass(slots=True)
    class ModelProfileDC:
        name: str
        provider: str
        model_name: str
        base_url: str | None = None
        api_key: str | None = field(default=None, repr=False)
        max_tokens: int = 8192
        context_length: int = 200_000
        thinking: bool = False
        stream_idle_timeout: float | None = None
        transport: str = "http"
        images: bool | None = None
        price: Any = None

    @dataclass(frozen=True)
    class LoopConfigDC:
        model: str
        system_prompt: str
        tool_specs: list[Any]
        max_tokens: int
        context_length: int
        thinking_budget: int | None = None
        max_turns: int = 100
        emits_usage: bool = True
        compacts: bool = True

    return {
        "TextDelta": TextDeltaDC,
        "ThinkingDelta": ThinkingDeltaDC,
        "ProviderError": ProviderErrorDC,
        "ResponseFailed": ResponseFailedDC,
        "ModelRequest": ModelRequestDC,
        "ModelProfile": ModelProfileDC,
        "LoopConfig": LoopConfigDC,
    }


def _per_op(make: Callable[[], object], count: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(count):
        make()
    return (time.perf_counter_ns() - t0) / count


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--count", type=int, default=200_000)
    args = ap.parse_args()

    creation = []
    for _ in range(args.rounds):
        t0 = time.perf_counter_ns()
        twins = _twins()
        creation.append((time.perf_counter_ns() - t0) / 1e6)
    print(
        f"class creation: {len(twins)} dataclasses {min(creation):.2f} ms"
        f" ({min(creation) / len(twins):.2f} ms each); the plain classes: no exec"
    )

    error = ProviderError("overloaded", "busy")
    text_dc, thinking_dc, failed_dc = (
        twins["TextDelta"],
        twins["ThinkingDelta"],
        twins["ResponseFailed"],
    )
    text, thinking, failed = TextDelta, ThinkingDelta, ResponseFailed  # both sides: cells
    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        ("TextDelta", lambda: text("x"), lambda: text_dc("x")),
        ("ThinkingDelta", lambda: thinking("x"), lambda: thinking_dc("x")),
        ("ResponseFailed", lambda: failed(error), lambda: failed_dc(error)),
    ]
    print(f"construction, ns per object (median of {args.rounds} x {args.count}):")
    for name, plain, dc in cases:
        a, b = [], []
        for _ in range(args.rounds):
            a.append(_per_op(plain, args.count))
            b.append(_per_op(dc, args.count))
        ratios = [x / y for x, y in zip(a, b, strict=True)]
        print(
            f"  {name:15} plain {statistics.median(a):6.1f}  dataclass {statistics.median(b):6.1f}"
            f"  plain/dataclass {statistics.median(ratios):.3f}"
        )


if __name__ == "__main__":
    main()
