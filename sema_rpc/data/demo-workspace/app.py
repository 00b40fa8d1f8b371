"""tasklist: a tiny command-line to-do list."""

import sys

from utils import load_tasks, save_tasks

USAGE = "usage: app.py add <text> | list | done <n>"


def main(argv: list[str]) -> int:
    if not argv:
        print(USAGE)
        return 2
    tasks = load_tasks()
    command, args = argv[0], argv[1:]
    if command == "add" and args:
        tasks.append({"text": " ".join(args), "done": False})
        save_tasks(tasks)
        print(f"added #{len(tasks)}")
    elif command == "list":
        for n, task in enumerate(tasks, 1):
            mark = "x" if task["done"] else " "
            print(f"{n:>3} [{mark}] {task['text']}")
    elif command == "done" and args and args[0].isdigit():
        index = int(args[0]) - 1
        if not 0 <= index < len(tasks):
            print(f"no task #{args[0]}")
            return 1
        tasks[index]["done"] = True
        save_tasks(tasks)
    else:
        print(USAGE)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
