"""What the lines share, driven by each line's adapters: composition/, device/, fixes/ (no torch import)."""
