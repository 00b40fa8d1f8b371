"""The interleaving suite's short profile (part of the normal test run) and the shrunk
examples it found, kept as regression tests. The long profile: `make soak`
(tests/stateful/soak.py)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.stateful.machine import SessionLifeMachine

SHORT = settings(
    max_examples=int(os.environ.get("SEMA_INTERLEAVE_EXAMPLES", "6")),
    stateful_step_count=12,
    derandomize=True,  # the same sequences on every run: CI is reproducible
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def test_random_interleavings_keep_the_session_model():
    run_state_machine_as_test(SessionLifeMachine, settings=SHORT)
