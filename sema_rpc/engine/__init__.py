"""The agent engine. It knows nothing of JSON-RPC: it emits typed events on an EventBus."""
