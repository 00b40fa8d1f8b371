"""What one user input becomes before the loop sees it: content blocks, `@path` references, the system prompt, the input pipeline (tools, reminders)."""
