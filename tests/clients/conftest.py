"""The client tests drive a real server: reuse the end-to-end fixtures."""

from tests.e2e.conftest import server_env, workspace

__all__ = ["server_env", "workspace"]
