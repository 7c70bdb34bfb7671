"""The `diff` command: two codegen outputs read, paired graph by graph, compared and reported."""
