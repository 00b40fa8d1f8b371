"""The continuation check's pre-filter: which replies are worth asking the quick model
about (the last sentence announces the speaker's own next step)."""

from __future__ import annotations

import pytest

from sema_rpc.engine.loop.continuation import last_sentence, plausible


@pytest.mark.parametrize(
    "reply, sentence",
    [
        ("The fix is in place. Now I'll run the tests.", "Now I'll run the tests."),
        ("Found it.\n\nLet me check the other callers.", "Let me check the other callers."),
        ("Done with the parser. Next, I will update the docs.", "Next, I will update the docs."),
        ("I’m going to rebuild the index now.", "I’m going to rebuild the index now."),
        ("**I'll run `make test` next.**", "I'll run `make test` next."),
        ("Now running the linter...", "Now running the linter..."),
    ],
)
def test_announcements_pass(reply: str, sentence: str) -> None:
    assert plausible(reply) == sentence


@pytest.mark.parametrize(
    "reply",
    [
        "All tests pass.",
        "Should I also update the docs?",
        "I'll run the tests. Does that work for you?",  # ends with a question
        "Let me know if you want more changes?",
        "The function returns None when the list is empty.",
        "",
    ],
)
def test_anything_else_asks_no_one(reply: str) -> None:
    assert plausible(reply) is None


def test_last_sentence_of_a_multi_line_reply() -> None:
    assert last_sentence("Summary:\n- a\n- b\n\nI will now commit.") == "I will now commit."
