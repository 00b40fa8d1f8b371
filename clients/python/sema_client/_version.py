"""The client's version (its own module, so that `client.py` need not import the package)."""

__version__ = "0.1.0"
