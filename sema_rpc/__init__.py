"""sema-rpc: a coding-agent backend spoken to over stdio with JSON-RPC 2.0."""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
