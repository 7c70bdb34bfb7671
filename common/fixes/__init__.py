"""The fix records every line applies, one module per fix, found by composition/fix_registry.py."""
