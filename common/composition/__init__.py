"""How a line is put together: adapters, line specs, backends, providers, the option and the fix registry."""
