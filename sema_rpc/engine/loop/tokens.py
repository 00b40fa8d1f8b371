"""Token accounting: the provider's usage first, then a local tokenizer for what
the provider has not counted yet, then chars/2.5 when no tokenizer can be loaded.

    counter = counter_for_model("claude-sonnet-4-5")   # cl100k_base, loaded lazily
    tracker = TokenTracker(counter)
    tracker.set_overhead(system_prompt, tool_specs)
    tracker.count(history)                     # the prompt size before a model call
    tracker.record_response(history, message, prompt_tokens, output_tokens)  # after one

`TokenTracker` keeps one local count per message (a parallel list of cumulative sums,
checked by identity against the history), and the last figure the provider reported
together with the message it covered. A count therefore costs O(messages added since the
last response), not O(history).

tiktoken is imported lazily and only ever reads its encodings from the local cache
(`$TIKTOKEN_CACHE_DIR`, else tiktoken's default `<tmp>/data-gym-cache`): an encoding whose
file is missing or corrupt is never downloaded; the counter falls back to chars/2.5.
`SEMA_TIKTOKEN=off` disables tiktoken altogether.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sema_rpc.core.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 2.5
MESSAGE_OVERHEAD = 4
"""Tokens every message costs beyond its content (role markers, block framing)."""

IMAGE_TOKENS = 1600
"""What one image is counted as (its base64 is never tokenized): about what the providers
charge for an image of the largest size they take without scaling it down."""

ESTIMATE = "estimate"

# tiktoken's own URLs and sha256 (tiktoken_ext/openai_public.py): the cache file is
# named by the sha1 of the URL, and we check the hash ourselves so that tiktoken never
# finds a corrupt file, deletes it and goes to the network.
_ENCODING_FILES = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

_encodings: dict[tuple[str, str], Any] = {}
"""(encoding name, cache file) → tiktoken.Encoding, or None when it cannot be loaded offline."""
_load_lock = threading.Lock()


def estimate_tokens(chars: int) -> int:
    return int(chars / CHARS_PER_TOKEN)


def encoding_for_model(model: str) -> str:
    """The tiktoken encoding that approximates a model's tokenizer.

    OpenAI's gpt-4o / gpt-4.1 / gpt-5 / o-series use o200k_base; older GPT models
    cl100k_base. Claude's tokenizer is not public: cl100k_base is a close stand-in.
    """
    m = model.lower().rsplit("/", 1)[-1]
    if m.startswith(
        ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt", "gpt-oss")
    ):
        return "o200k_base"
    return "cl100k_base"


def tiktoken_cache_file(name: str) -> Path | None:
    """Where tiktoken would find `name` in its cache; None when tiktoken would not look."""
    if name not in _ENCODING_FILES:
        return None
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(_temp_dir(), "data-gym-cache")
    if not cache_dir:  # tiktoken's "no cache": it would download every time
        return None
    url = _ENCODING_FILES[name][0]
    return Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()


def _temp_dir() -> str:
    """`tempfile.gettempdir()`, where tiktoken keeps its default cache, without importing
    `tempfile` (with `shutil`, `random`, `bz2`, `lzma`: ms of every session's start) when
    nothing has yet: the same candidates in the same order ($TMPDIR, $TEMP, $TMP, /tmp,
    /var/tmp, /usr/tmp, the working directory), the first a writable folder."""
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        return str(tempfile.gettempdir())
    named = [os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")]
    for candidate in [*filter(None, named), "/tmp", "/var/tmp", "/usr/tmp"]:
        folder = os.path.abspath(candidate)
        if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
            return folder
    return os.getcwd()


def tiktoken_enabled() -> bool:
    return os.environ.get("SEMA_TIKTOKEN", "").strip().lower() not in ("off", "0", "false", "no")


def _key(name: str) -> tuple[str, str]:
    return (name, str(tiktoken_cache_file(name)))


def load_encoding(name: str) -> Any:
    """The tiktoken encoding `name`, or None when it cannot be loaded without the network.

    Blocking (0.5-1 s the first time: it parses the BPE file); call it from a thread.
    The result, None included, is cached for the process (per cache location).
    """
    key = _key(name)
    if key in _encodings:
        return _encodings[key]
    with _load_lock:
        if key not in _encodings:
            _encodings[key] = _load_offline(name)
        return _encodings[key]


def _load_offline(name: str) -> Any:
    if not tiktoken_enabled():
        return None
    path = tiktoken_cache_file(name)
    if path is None or not path.is_file():
        log.info("tiktoken encoding %s not cached (%s): estimating chars/2.5", name, path)
        return None
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        log.warning("cannot read tiktoken cache %s: %s", path, exc)
        return None
    if digest != _ENCODING_FILES[name][1]:
        log.warning("tiktoken cache %s is corrupt (sha256 mismatch): estimating chars/2.5", path)
        return None
    try:
        import tiktoken

        return tiktoken.get_encoding(name)
    except Exception as exc:  # a broken install must not break the session
        log.warning("cannot load tiktoken encoding %s: %s", name, exc)
        return None


# --------------------------------------------------------------------------- counting


class TokenCounter:
    """Counts text and messages with one tiktoken encoding, or estimates chars/2.5."""

    def __init__(self, encoding_name: str | None):
        self.encoding_name = encoding_name if tiktoken_enabled() else None
        self._encoding: Any = None
        self._resolved = self.encoding_name is None
        self._key = _key(self.encoding_name) if self.encoding_name else ("", "")

    @property
    def name(self) -> str:
        """The encoding actually in use: an encoding name, or `estimate`."""
        self._resolve_if_loaded()
        if self.encoding_name is None or self._encoding is None:
            return ESTIMATE
        return self.encoding_name

    @property
    def ready(self) -> bool:
        self._resolve_if_loaded()
        return self._resolved

    def _resolve_if_loaded(self) -> None:
        if not self._resolved and self._key in _encodings:
            self._encoding = _encodings[self._key]
            self._resolved = True

    def load(self) -> None:
        """Blocking: load the encoding (see `load_encoding`)."""
        if not self._resolved and self.encoding_name is not None:
            self._encoding = load_encoding(self.encoding_name)
            self._resolved = True

    async def ensure_loaded(self) -> None:
        if not self.ready:
            await asyncio.to_thread(self.load)

    def warm_up(self) -> None:
        """Load the encoding in a background thread (no-op when loaded or disabled)."""
        if self.ready:
            return
        threading.Thread(target=self.load, name="tiktoken-warm-up", daemon=True).start()

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        self._resolve_if_loaded()
        if self._encoding is not None:
            return len(self._encoding.encode_ordinary(text))
        return estimate_tokens(len(text))

    def count_message(self, message: Message) -> int:
        images = sum(isinstance(b, ImageBlock) for b in message.content)
        return (
            MESSAGE_OVERHEAD
            + IMAGE_TOKENS * images
            + sum(self.count_text(t) for t in _texts(message))
        )


def _texts(message: Message) -> Iterable[str]:
    for block in message.content:
        if isinstance(block, TextBlock):
            yield block.text
        elif isinstance(block, ThinkingBlock):
            yield block.thinking
        elif isinstance(block, ToolResultBlock):
            yield block.content
        elif isinstance(block, ToolUseBlock):
            yield block.name
            yield json.dumps(block.input, ensure_ascii=False)
        elif isinstance(block, RedactedThinkingBlock):
            # Opaque base64: count its size, not its (meaningless) tokens.
            yield "x" * (len(block.data) // 4)


def message_chars(message: Message) -> int:
    return sum(len(t) for t in _texts(message))


def counter_for_model(model: str) -> TokenCounter:
    return TokenCounter(encoding_for_model(model))


# --------------------------------------------------------------------------- tracking


class TokenTracker:
    """The size of one conversation's prompt, kept up to date in O(new messages).

    The history is the list the loop sends to the model. Mutations the tracker expects:
    appending, replacing the last message (user messages are merged), and replacing the
    whole list (compaction, /clear). Each is detected by identity: the cache is valid up
    to the last position where `history[i] is cached[i]`. Messages the provider's last
    figure already covers are never tokenized.
    """

    def __init__(self, counter: TokenCounter | None = None):
        self.counter = counter or TokenCounter(None)
        self._refs: list[Message] = []
        self._counts: list[int | None] = []
        """Local count of history[i], None until needed."""
        self._overhead = 0
        self._overhead_key: tuple[str, int, int] | None = None
        self._mark_len = 0
        self._mark_msg: Message | None = None
        self._mark_tokens = 0
        self._sum_from = -1
        self._sum_to = 0
        self._sum = 0
        """sum(counts[_sum_from:_sum_to]): a turn adds only the new messages' counts,
        also when no provider figure bounds the range (a provider without usage)."""

    # ---- inputs

    def set_overhead(self, system: str, tools: Iterable[Any] = ()) -> None:
        """System prompt and tool definitions: counted once per distinct content."""
        specs = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in tools
        ]
        tools_json = json.dumps(specs, sort_keys=True) if specs else ""
        # The encoding is part of the key: an overhead estimated while the encoding was
        # still loading (the warm-up may come first) is counted again once it is there.
        key = (self.counter.name, hash(system), hash(tools_json))
        if key != self._overhead_key:
            self._overhead_key = key
            self._overhead = self.counter.count_text(system) + self.counter.count_text(tools_json)

    @property
    def overhead(self) -> int:
        return self._overhead

    def record_response(
        self, history: list[Message], message: Message, prompt_tokens: int, output_tokens: int
    ) -> None:
        """The provider counted `prompt_tokens` for `history` and `output_tokens` for
        `message`, which is (or is about to be) appended to it."""
        if prompt_tokens <= 0:
            return
        covered = len(history) + (0 if history and history[-1] is message else 1)
        self.set_mark(covered, message, prompt_tokens + output_tokens)

    def set_mark(self, length: int, last: Message, tokens: int) -> None:
        """The provider's figure `tokens` covers the first `length` messages, the last of
        which is `last` (a restored history uses this with the persisted figure)."""
        self._mark_len, self._mark_msg, self._mark_tokens = length, last, tokens

    def reset(self) -> None:
        self._refs.clear()
        self._counts.clear()
        self._mark_len, self._mark_msg, self._mark_tokens = 0, None, 0
        self._sum_from = -1

    # ---- outputs

    def mark_for(self, message: Message) -> tuple[int, int] | None:
        """(covered length, tokens) when the provider's last figure ends with `message`."""
        if self._mark_msg is message:
            return self._mark_len, self._mark_tokens
        return None

    def provider_covered(self, history: list[Message]) -> int:
        """How many of `history`'s first messages the provider's last figure covers (0
        when it covers none: the count is then local throughout)."""
        start, _ = self._start(history)
        return start

    def count(self, history: list[Message]) -> int:
        """Prompt tokens for `history`: the provider's last figure plus local counts for
        the messages after it (or system + tools + every message when there is none)."""
        self._sync(history)
        start, base = self._start(history)
        if self._sum_from != start:
            self._sum_from, self._sum_to, self._sum = start, start, 0
        counts = self._counts
        total = self._sum
        for i in range(self._sum_to, len(history)):
            c = counts[i]
            if c is None:
                c = counts[i] = self.counter.count_message(history[i])
            total += c
        self._sum_to, self._sum = len(history), total
        return base + total

    async def count_async(self, history: list[Message]) -> int:
        """`count`, loading the encoding first and tokenizing a large backlog off the loop."""
        self._sync(history)
        start, _ = self._start(history)
        first = self._sum_to if self._sum_from == start else start
        pending = [history[i] for i in range(first, len(history)) if self._counts[i] is None]
        if not pending:
            return self.count(history)
        await self.counter.ensure_loaded()
        if len(pending) > 64 or sum(message_chars(m) for m in pending) > 200_000:
            return await asyncio.to_thread(self.count, history)
        return self.count(history)

    # ---- internals

    def _start(self, history: list[Message]) -> tuple[int, int]:
        k = self._mark_len
        if 0 < k <= len(history) and history[k - 1] is self._mark_msg:
            return k, self._mark_tokens
        return 0, self._overhead

    def _sync(self, history: list[Message]) -> None:
        refs = self._refs
        keep = min(len(refs), len(history))
        while keep > 0 and history[keep - 1] is not refs[keep - 1]:
            keep -= 1
        if keep < len(refs):
            del refs[keep:]
            del self._counts[keep:]
            if keep < self._sum_to:
                self._sum_from = -1
        for message in history[keep:]:
            refs.append(message)
            self._counts.append(None)
