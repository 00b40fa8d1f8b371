"""The interleaving suite's short profile (part of the normal test run) and the shrunk
examples it found, kept as regression tests. The long profile: `make soak`
(tests/stateful/soak.py)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.stateful.machine import SessionLifeMachine
from tests.support.raw_peer import DIALECTS

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


def _replay(dialect: str, *steps: tuple[str, dict[str, object]]) -> None:
    """Run one interleaving as Hypothesis printed it, every invariant after each step."""
    state = SessionLifeMachine()
    try:
        state.start(dialect=dialect, seed=0)
        for name, args in steps:
            getattr(state, name)(**args)
            state.check_all()
    finally:
        state.teardown()


# Shrunk by Hypothesis against the build before the session model (content-length
# found first; the same sequence in each dialect): the stop in the prompt's own write
# answered `interrupted: false` and the turn ran to its end.
@pytest.mark.parametrize("dialect", DIALECTS)
def test_shrunk_prompt_then_stop(dialect: str):
    _replay(dialect, ("prompt_then_stop", {}))


# ACP close during a turn answered the prompt `end_turn`.
def test_shrunk_acp_prompt_then_close():
    _replay("acp", ("prompt", {"delay": 0.05}), ("close", {}))
