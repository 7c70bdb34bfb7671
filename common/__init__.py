"""Mechanisms several torch lines share (backends, layers, providers, the NPU launch), driven by a line's adapters.

Nothing here imports a version module or a tool; importing this package imports no torch module.
"""
