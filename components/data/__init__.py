"""data components (see registry.py for the build contract)."""
