"""What the window needs around it: About, crash reports, logs, the self-test, the desktop entry, Qt guards."""
