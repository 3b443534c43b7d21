"""One chat tab and its parts: the message list, Markdown view, branch bar, message actions."""
