"""File helpers for tasklist."""

import json
from pathlib import Path

TASKS_FILE = Path(__file__).with_name("tasks.json")


def load_tasks() -> list[dict]:
    """Read the task list; a missing file is an empty list."""
    if not TASKS_FILE.exists():
        return []
    return json.loads(TASKS_FILE.read_text(encoding="utf-8"))


def save_tasks(tasks: list[dict]) -> None:
    """Write the task list back, pretty-printed."""
    TASKS_FILE.write_text(json.dumps(tasks, indent=2) + "\n", encoding="utf-8")
