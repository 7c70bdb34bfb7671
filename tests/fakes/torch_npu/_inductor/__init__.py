"""Test stand-in for torch_npu._inductor: applies nothing on import (the real one patches Inductor)."""
