"""The sans-I/O core: plain state machines fed bytes and JSON, never doing I/O."""
