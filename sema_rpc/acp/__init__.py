"""The Agent Client Protocol (v1) dialect: `sema-rpc --acp`.

A translation layer beside rpc/ (the native dialect) over the same engine; see
protocol/acp.md for what is mapped, advertised, and not supported yet.
"""
