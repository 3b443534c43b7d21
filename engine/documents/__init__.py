"""Documents attached to a chat: text extracted page by page, chunked, indexed with FTS5 BM25, and
the prompt built from them (whole when a document fits the room left, its best chunks with
numbered citations when it does not). Qt-free: the window only calls these off its GUI thread."""
