"""The chat history: a Qt-free SQLite store, its worker thread, and the glue to the tabs."""
