"""The continuation check: a final reply that announces an action it did not take.

Models sometimes end a turn with "Now I'll run the tests." and no tool call: the turn is
over, the tests never run, and the user has to type "go on". With the check on (per
session, `session/create` `checkContinuation`), a reply without a tool call goes through:

1. a cheap pre-filter: the reply's last sentence looks like an announcement of the
   speaker's own next step ("I'll …", "Let me …", "Next, I will …", "Now running …");
   questions and anything else end the turn as before, without a model call;
2. the quick model (the `quick` pointer of models.json, else the session's model) is
   asked whether the reply promises an action it has not done yet; only a clear "yes"
   counts (a failure, an interrupt or any other answer ends the turn as before);
3. on "yes" the loop continues once with `NUDGE` as a user message (`turn:continued`).

At most once per prompt (the loop enforces it): a model that keeps announcing does not
keep the turn going.
"""

from __future__ import annotations

import logging
import re
from contextlib import aclosing
from dataclasses import dataclass

from sema_rpc.core.messages import Message
from sema_rpc.core.stream import ModelRequest, Provider, ResponseDone, ResponseFailed
from sema_rpc.engine.loop.control import TurnControl

log = logging.getLogger(__name__)

NUDGE = "Go ahead: take the action you just announced."
"""The user message a continued turn goes on with."""

TAIL_CHARS = 2000
"""How much of the reply's end the quick model sees."""

_ANNOUNCES = re.compile(
    r"\b(?:I(?:'|’)ll|I\s+will|I(?:'|’)m\s+going\s+to|I\s+am\s+going\s+to|I\s+shall"
    r"|let\s+me|let(?:'|’)s|now\s+I|next,?\s+I|I(?:'|’)m\s+now|I\s+now)\b"
    r"|^\s*(?:now|next),?\s+\w+ing\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")

SYSTEM = (
    "You classify the last message of an AI coding assistant that has tools (it can "
    "read and edit files and run commands). Answer with one word: yes or no."
)
QUESTION = (
    "The assistant ended its reply like this:\n\n<reply>\n{reply}\n</reply>\n\n"
    "Does the reply end by announcing an action the assistant itself is about to take "
    "now (for example running a command, editing a file, reading something) but did not "
    "take? Answer no if it asks the user something, waits for the user, offers an option, "
    "or describes work already done. Answer yes or no."
)


@dataclass(frozen=True, slots=True)
class Continuation:
    sentence: str
    """The reply's sentence that announced the action."""
    nudge: str = NUDGE


def last_sentence(text: str) -> str:
    """The reply's last sentence (its last line's last sentence), trimmed of markdown
    emphasis and list markers."""
    pieces = [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    if not pieces:
        return ""
    return pieces[-1].strip("*_`> -").strip()


def plausible(text: str) -> str | None:
    """The pre-filter: the last sentence when it may announce an action, else None."""
    sentence = last_sentence(text)
    if not sentence or sentence.endswith("?") or len(sentence) > 400:
        return None
    return sentence if _ANNOUNCES.search(sentence) else None


@dataclass
class ContinuationCheck:
    """Asks the quick model about one reply (see the module's doc)."""

    provider: Provider
    model: str

    async def __call__(self, reply: Message, control: TurnControl) -> Continuation | None:
        """The continuation when the reply announces an action it did not take; None
        otherwise, also on any failure. Does not raise."""
        text = reply.text()
        sentence = plausible(text)
        if sentence is None:
            return None
        tail = text.strip()[-TAIL_CHARS:]
        request = ModelRequest(
            model=self.model,
            system=SYSTEM,
            messages=[Message.user_text(QUESTION.format(reply=tail))],
            tools=[],
            max_tokens=256,
            thinking_budget=None,
        )
        outcome: ResponseDone | ResponseFailed | None = None
        try:
            with control.cancellable():
                async with aclosing(self.provider.stream(request)) as events:
                    async for event in events:
                        if isinstance(event, ResponseDone | ResponseFailed):
                            outcome = event
        except Exception:  # the check is an extra: it never fails the turn
            log.warning("continuation check failed", exc_info=True)
            return None
        if control.interrupted or not isinstance(outcome, ResponseDone):
            if isinstance(outcome, ResponseFailed):
                log.warning("continuation check failed: %s", outcome.error.message)
            return None
        answer = outcome.message.text().strip().lower()
        return Continuation(sentence) if re.match(r"\W*yes\b", answer) else None
