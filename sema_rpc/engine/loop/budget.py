"""The context budget of tool results: what one batch may add to the model's context.

A batch of tool results joins the history whole only when it fits: each result holds at
most `RESULT_SHARE` of the model's context window (`contextLength`) and the batch
together at most `BATCH_SHARE`. A result over its share is cut in the middle, at line
boundaries, and says so in the text the model reads (the client has already seen the
whole output in `tool:execution:complete`). Small results of a batch are never cut to
make room for large ones: the batch's budget is shared fairly, largest results last.

    capped = cap_results(results, per_result=32_000, per_batch=64_000, counter=counter)

Compaction uses the same cut to make the batch the model is waiting for fit in what is
left of the window after the older history was summarised (compaction.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from sema_rpc.core.messages import ToolResultBlock
from sema_rpc.engine.loop.tokens import TokenCounter

RESULT_SHARE = 0.25
"""One tool result holds at most this share of the context window."""
BATCH_SHARE = 0.5
"""The results of one batch together hold at most this share of the context window."""
MIN_RESULT_TOKENS = 64
"""A cut result keeps at least this much of its output (plus the note)."""

CUT_NOTE = (
    "[… {chars} characters ({lines} lines) cut here: this output is larger than the share "
    "of the model's context window it may take ({budget} tokens of {context}). Read the rest "
    "in smaller parts (e.g. Read with offset and limit) or narrow the command or search …]"
)
HEAD_SHARE = 2 / 3
"""Of what a cut result keeps, the beginning gets this share and the end the rest."""


def batch_budgets(context_length: int) -> tuple[int, int]:
    """(per result, per batch) in tokens for a model with this context window."""
    return (
        max(MIN_RESULT_TOKENS, int(context_length * RESULT_SHARE)),
        max(MIN_RESULT_TOKENS, int(context_length * BATCH_SHARE)),
    )


def fair_shares(sizes: Sequence[int], per_result: int, per_batch: int) -> list[int]:
    """The budget of each result: small ones whole, the rest of the batch's budget split
    evenly among the larger ones, none above `per_result`."""
    shares = [0] * len(sizes)
    remaining = per_batch
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for j, i in enumerate(order):
        even = remaining // (len(order) - j)
        shares[i] = max(0, min(sizes[i], per_result, even))
        remaining -= shares[i]
    return shares


def cap_results(
    results: Sequence[ToolResultBlock],
    *,
    per_result: int,
    per_batch: int,
    counter: TokenCounter,
    context_length: int,
) -> list[ToolResultBlock]:
    """`results` with each one cut to its share of the budget (the same objects when
    they fit). Blocking on large outputs (tokenizes them): call from a thread then."""
    sizes = [counter.count_text(r.content) for r in results]
    if sum(sizes) <= per_batch and max(sizes, default=0) <= per_result:
        return list(results)
    shares = fair_shares(sizes, per_result, per_batch)
    out: list[ToolResultBlock] = []
    for block, size, share in zip(results, sizes, shares, strict=True):
        if size <= share:
            out.append(block)
            continue
        text = cut_text(block.content, size, max(share, MIN_RESULT_TOKENS), context_length)
        out.append(block.model_copy(update={"content": text}))
    return out


def cut_text(text: str, tokens: int, budget: int, context_length: int) -> str:
    """`text` (`tokens` long) cut in the middle to about `budget` tokens, with the note."""
    keep = int(len(text) * budget / tokens) if tokens else len(text)
    if keep >= len(text):
        return text
    head_end = _line_end(text, int(keep * HEAD_SHARE))
    tail_start = _line_start(text, len(text) - (keep - head_end), head_end)
    removed = text[head_end:tail_start]
    note = CUT_NOTE.format(
        chars=f"{len(removed):,}",
        lines=f"{removed.count(chr(10)):,}",
        budget=f"{budget:,}",
        context=f"{context_length:,}",
    )
    head, tail = text[:head_end], text[tail_start:]
    return f"{head}{'' if head.endswith(chr(10)) else chr(10)}{note}\n{tail}"


def _line_end(text: str, pos: int) -> int:
    """The end of the last whole line before `pos` (or `pos` when the line is long)."""
    cut = text.rfind("\n", 0, pos)
    return cut + 1 if cut >= pos // 2 else pos


def _line_start(text: str, pos: int, floor: int) -> int:
    """The start of the first whole line at or after `pos` (never before `floor`)."""
    pos = max(pos, floor)
    nl = text.find("\n", pos, pos + max(200, (len(text) - pos) // 2))
    return nl + 1 if nl >= 0 else pos
