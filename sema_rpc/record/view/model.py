"""What a page shows: sessions as timelines of prompts, answers, tool calls and notes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FOLD_CHARS = 1_500
"""Text longer than this (or than FOLD_LINES lines) is folded (<details>)."""
FOLD_LINES = 20
BLOCK_CAP = 200_000
"""At most this many characters of one block go into the page (the rest is counted)."""
CHART_POINTS = 1_500


class ViewError(Exception):
    """The input cannot be read or is not a recording nor a history (exit code 2)."""


# --------------------------------------------------------------------------- model


@dataclass
class Item:
    t: float
    kind: str
    agent: str = "main"


@dataclass
class Prompt(Item):
    text: str = ""
    delivery: str | None = None
    id: Any = None
    end: float | None = None
    stop: str | None = None
    error: str | None = None
    message_id: str | None = None
    cost: float | None = None
    """The turn's cost in USD, when the server reported it."""
    context: list[str] = field(default_factory=list)
    """What the engine added to the input for the model (system reminders), folded."""


@dataclass
class Answer(Item):
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    end: float | None = None
    stop: str | None = None
    message_id: str | None = None
    redacted_thinking: int = 0


@dataclass
class Permission:
    t: float
    title: str
    content: str
    options: list[str]
    rule: str | None
    decision: str | None = None
    by: str | None = None
    feedback: str | None = None
    decided: float | None = None


@dataclass
class ToolCall(Item):
    call_id: str = ""
    name: str = ""
    title: str = ""
    input: Any = None
    output: list[str] = field(default_factory=list)
    result: str | None = None
    summary: str | None = None
    error: bool = False
    end: float | None = None
    approx: bool = False
    """The duration comes from history timestamps (a batch's results are written together)."""
    permission: Permission | None = None


@dataclass
class Note(Item):
    """Everything else: a label, one line of text, optional folded details."""

    label: str = ""
    text: str = ""
    details: str | None = None
    css: str = "note"


@dataclass
class Session:
    id: str
    working_dir: str | None = None
    models: list[str] = field(default_factory=list)
    mode: str | None = None
    permission_mode: str | None = None
    items: list[Item] = field(default_factory=list)
    usage: list[tuple[float, int, int | None, float | None]] = field(default_factory=list)
    """(t, context tokens, window, session cost in USD)."""
    totals: dict[str, Any] | None = None
    earlier: View | None = None
    """A resumed session's conversation before the recording (its saved history)."""
    first: float | None = None
    last: float | None = None

    def seen(self, t: float) -> None:
        if self.first is None or t < self.first:
            self.first = t
        if self.last is None or t > self.last:
            self.last = t

    def add_model(self, model: Any) -> None:
        if isinstance(model, str) and model and (not self.models or self.models[-1] != model):
            self.models.append(model)


@dataclass
class View:
    source: str
    kind: str
    """`recording` or `history`."""
    epoch: float | None = None
    """The Unix time of t=0 (approximate for a recording), when known."""
    sessions: dict[str, Session] = field(default_factory=dict)
    skipped: int = 0

    def session(self, sid: str) -> Session:
        s = self.sessions.get(sid)
        if s is None:
            s = self.sessions[sid] = Session(sid)
        return s
