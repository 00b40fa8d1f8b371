"""The JSON-RPC layer: framing, dispatch, and the translation of engine events to the wire."""
