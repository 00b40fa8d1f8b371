"""Built-in tools, one per file. `registry.builtin_tools()` lists them."""
