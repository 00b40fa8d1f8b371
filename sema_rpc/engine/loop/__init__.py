"""The agent loop (conversation.py) and what a model call or a tool batch runs with: the tool runner, turn control, token counting, usage, budgets, compaction, the continuation check."""
