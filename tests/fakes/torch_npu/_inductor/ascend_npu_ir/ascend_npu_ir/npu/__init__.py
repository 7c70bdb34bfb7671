"""Test stand-in package."""
