"""What the window needs around it: About, crash reports, logs, the desktop entry, paths, Qt guards."""
