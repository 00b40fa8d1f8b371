"""The conversation's messages in process: importing them, and building, dumping and reading
back 10,000 of them.

    .venv/bin/python bench/bench_messages.py [import|build|all] [--messages N] [--rounds N]

`import`: the milliseconds `import sema_rpc.core.messages` takes in a fresh process, and
whether it loaded pydantic (one figure per process: run it under an A/B timer for a
median, e.g. against a baseline build's venv, from outside both checkouts so each venv
imports its own tree). `build`: `--messages` assistant messages built as a provider builds
them (thinking with a signature, text, a tool call), each dumped as the history writer
dumps it (`model_dump(mode="json", exclude_none=True)`), then each dump read back as the
history reader reads a line (`Message.model_validate`); the best and median of `--rounds`
rounds, per phase (the first round includes pydantic building its validators, lazily).
The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def bench_import() -> dict[str, object]:
    start = time.perf_counter()
    import sema_rpc.core.messages  # noqa: F401

    took = (time.perf_counter() - start) * 1000
    return {"import_ms": round(took, 2), "pydantic_loaded": "pydantic" in sys.modules}


def bench_build(count: int, rounds: int) -> dict[str, object]:
    from sema_rpc.core.messages import Message, TextBlock, ThinkingBlock, ToolUseBlock

    phases: dict[str, list[float]] = {"build": [], "dump": [], "read": []}
    for _ in range(rounds):
        t0 = time.perf_counter()
        built = [
            Message(
                role="assistant",
                content=[
                    ThinkingBlock(thinking="Let me look at the file.", signature="sig-" + str(i)),
                    TextBlock(text=f"Reading a{i}.py."),
                    ToolUseBlock(id=f"toolu_{i}", name="Read", input={"file_path": f"a{i}.py"}),
                ],
                id=f"m_{i:012x}",
            )
            for i in range(count)
        ]
        t1 = time.perf_counter()
        lines = [m.model_dump(mode="json", exclude_none=True) for m in built]
        t2 = time.perf_counter()
        back = [Message.model_validate({"t": "message", "n": 1, **line}) for line in lines]
        t3 = time.perf_counter()
        if back != built:
            print("a message read back differs from the one written", file=sys.stderr)
            sys.exit(1)
        phases["build"].append((t1 - t0) * 1000)
        phases["dump"].append((t2 - t1) * 1000)
        phases["read"].append((t3 - t2) * 1000)
    out: dict[str, object] = {"messages": count, "rounds": rounds}
    for name, times in phases.items():
        out[f"{name}_ms_best"] = round(min(times), 1)
        out[f"{name}_ms_median"] = round(statistics.median(times), 1)
    out["pydantic_loaded"] = "pydantic" in sys.modules
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="all", choices=["import", "build", "all"])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    summary: dict[str, object] = {}
    if args.what in ("import", "all"):
        summary.update(bench_import())
        print(f"import sema_rpc.core.messages: {summary['import_ms']} ms", flush=True)
    if args.what in ("build", "all"):
        figures = bench_build(args.messages, args.rounds)
        summary.update(figures)
        for name in ("build", "dump", "read"):
            print(
                f"{name} {args.messages} messages: best {figures[f'{name}_ms_best']} ms, "
                f"median {figures[f'{name}_ms_median']} ms",
                flush=True,
            )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
