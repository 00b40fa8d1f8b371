"""AskUserQuestion: ask the user 1-4 multiple-choice questions and wait for the answers.

The engine provides the asking: `ctx.services.ask_user` is an async callable taking the
questions (wire-shaped dicts `{question, header, options: [{label, description}],
multiSelect}`) and this call's id (the request names it) and returning `{"answers": {question: answer}}`, or None when the client
cannot answer (no `askQuestion` capability). The user may answer with free text instead
of an option; a multi-select answer is the labels joined with ", ".
"""

from __future__ import annotations

from typing import Any

from .base import Tool, ToolContext, ToolOutput
from .input_plain import AskUserQuestionInput

NOT_ASKED = (
    "The user could not be asked: this client does not answer questions. Continue with your "
    "best judgement and state the assumptions you made, or ask in your reply as plain text."
)


class AskUserQuestionTool(Tool):
    name = "AskUserQuestion"
    description = (
        "Asks the user 1-4 multiple-choice questions and waits for the answers.\n"
        "- Use it when a decision is genuinely the user's (requirements, preferences, a choice "
        "between approaches), not for things you can find out by reading the code.\n"
        "- Each question has a short header and 2-4 options with a label and a description; the "
        "user can always answer with their own text instead. Set multiSelect when several "
        "options may apply.\n"
        "- Put the recommended option first and add '(Recommended)' to its label."
    )
    Input = AskUserQuestionInput
    read_only = True

    def title(self, args: AskUserQuestionInput) -> str:
        return "Ask: " + "; ".join(q.header for q in args.questions)

    async def validate_input(self, args: AskUserQuestionInput, ctx: ToolContext) -> str | None:
        texts = [q.question.strip() for q in args.questions]
        if len(set(texts)) != len(texts):
            return "Each question must be different (answers are keyed by question text)."
        for q in args.questions:
            labels = [o.label.strip() for o in q.options]
            if len(set(labels)) != len(labels):
                return f"The options of {q.question!r} must have different labels."
        return None

    async def call(self, args: AskUserQuestionInput, ctx: ToolContext) -> ToolOutput:
        ask = ctx.services.ask_user
        questions = [q.model_dump() for q in args.questions]
        answer: Any = await ask(questions, ctx.tool_call_id) if ask is not None else None
        answers = answer.get("answers") if isinstance(answer, dict) else None
        if not isinstance(answers, dict):
            return ToolOutput(content=NOT_ASKED, summary="The user could not be asked")
        lines = []
        for q in args.questions:
            value = answers.get(q.question)
            text = "(no answer)" if value in (None, "") else str(value)
            lines.append(f'"{q.question}" = "{text}"')
        content = (
            "The user answered your questions:\n"
            + "\n".join(lines)
            + "\nContinue with these answers in mind."
        )
        summary = f"{sum(1 for q in args.questions if answers.get(q.question))} answer(s)"
        return ToolOutput(content=content, summary=summary)
