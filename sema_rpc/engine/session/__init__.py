"""A session's data (built whole), the registry of sessions, turns and their lifecycle, the parts a turn is assembled from, subagents, rewind, the transcript."""
