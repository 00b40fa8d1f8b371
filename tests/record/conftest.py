"""The end-to-end fixtures (a real server, the scripted model server, a temp workspace)."""

from tests.e2e.conftest import client, server_env, workspace

__all__ = ["client", "server_env", "workspace"]
