"""The status bar's gauge and the memory probes behind it."""
