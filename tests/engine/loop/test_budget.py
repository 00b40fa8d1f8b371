"""The tool-result budget: fair shares of a batch, cuts at line boundaries, with a note."""

from __future__ import annotations

from sema_rpc.core.messages import ToolResultBlock
from sema_rpc.engine.loop.budget import batch_budgets, cap_results, fair_shares
from sema_rpc.engine.loop.tokens import TokenCounter


def test_small_results_keep_their_size_and_large_ones_share_the_rest():
    assert fair_shares([10, 1000, 5000], per_result=4000, per_batch=3000) == [10, 1000, 1990]
    assert fair_shares([3000, 3000], per_result=4000, per_batch=3000) == [1500, 1500]
    assert fair_shares([100, 200], per_result=4000, per_batch=3000) == [100, 200]
    assert fair_shares([9000], per_result=4000, per_batch=10_000) == [4000]


def test_budgets_follow_the_context_window():
    assert batch_budgets(128_000) == (32_000, 64_000)
    assert batch_budgets(8_000) == (2_000, 4_000)


def test_a_cut_result_keeps_its_beginning_and_end_at_line_boundaries_and_says_so():
    counter = TokenCounter(None)  # chars / 2.5
    big = "".join(f"line {n}\n" for n in range(1, 5001))  # ~18,000 tokens
    small = "a short result"
    capped = cap_results(
        [
            ToolResultBlock(tool_use_id="a", content=small),
            ToolResultBlock(tool_use_id="b", content=big),
        ],
        per_result=1000,
        per_batch=1500,
        counter=counter,
        context_length=4000,
    )
    assert capped[0].content == small
    text = capped[1].content
    assert capped[1].tool_use_id == "b"
    assert text.startswith("line 1\n") and text.endswith("line 5000\n")
    lines = text.split("\n")
    (note_at,) = [i for i, line in enumerate(lines) if line.startswith("[…")]
    assert lines[note_at - 1].startswith("line ") and lines[note_at + 1].startswith("line ")
    first_cut = int(lines[note_at - 1].split()[1]) + 1
    last_cut = int(lines[note_at + 1].split()[1]) - 1
    assert f"{last_cut - first_cut + 1:,} lines) cut here" in lines[note_at]
    assert "(1,000 tokens of 4,000)" in lines[note_at]
    assert counter.count_text(text) <= 1000 + 100


def test_results_that_fit_are_the_same_objects():
    counter = TokenCounter(None)
    results = [ToolResultBlock(tool_use_id=str(i), content="x" * 100) for i in range(3)]
    assert all(
        a is b
        for a, b in zip(
            cap_results(
                results, per_result=100, per_batch=300, counter=counter, context_length=1000
            ),
            results,
            strict=True,
        )
    )
