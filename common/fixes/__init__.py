"""The fix records every line applies, one module per fix: found by common.composition.fix_registry, so adding a fix is
one new file here (``FIXES``, or ``line_fixes(adapters)`` for records built with a line's adapters) and its test."""
