"""The interleaving suite's long profile, for a nightly run: `make soak`.

    .venv/bin/python -m tests.stateful.soak [--minutes M] [--seed S] [--steps N]

Runs the machine (tests/stateful/machine.py) over seeded random interleavings for about
`--minutes`, then prints what it covered: examples (interleavings) and steps per minute,
each rule's count, and every failure Hypothesis found, shrunk (add each as a regression
test in tests/stateful/test_interleavings.py). The same seed runs the same sequences
(the server's own timing still varies: a race found once may need a few runs to show).
Exit status 1 when it found a failure.
"""

from __future__ import annotations

import argparse
import sys
import time

import hypothesis.core
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.stateful import machine


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--steps", type=int, default=40, help="steps per interleaving, at most")
    args = parser.parse_args()
    started = time.monotonic()
    deadline = started + args.minutes * 60
    failures: list[str] = []
    seed = args.seed
    rounds = 0
    while time.monotonic() < deadline:
        profile = settings(
            max_examples=25,
            stateful_step_count=args.steps,
            deadline=None,
            database=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
        )
        # What pytest's --hypothesis-seed sets: the seed of every example this round.
        hypothesis.core.global_force_seed = seed  # type: ignore[attr-defined]
        try:
            run_state_machine_as_test(machine.SessionLifeMachine, settings=profile)
        except BaseException as exc:  # a failure, shrunk: print it and go on
            if isinstance(exc, KeyboardInterrupt):
                raise
            failures.append(f"seed {seed}: {exc!r}")
            print(f"--- failure (seed {seed}) ---\n{exc}", flush=True)
        rounds += 1
        seed += 1
    minutes = (time.monotonic() - started) / 60
    stats = machine.STATS
    steps = sum(
        n for k, n in stats.items() if not k.startswith(("examples", "dialect", "consent "))
    )
    print(f"seeds {args.seed}..{seed - 1}, {minutes:.1f} min")
    print(
        f"interleavings: {stats['examples']} ({stats['examples'] / minutes:.1f}/min); "
        f"steps: {steps} ({steps / minutes:.1f}/min)"
    )
    for name, count in sorted(stats.items()):
        print(f"  {name:32} {count}")
    print(f"failures: {len(failures)}")
    for line in failures:
        print(f"  {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
