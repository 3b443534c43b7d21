"""MCP tools for the window's chats: the servers' config, their connections, and what a call returns."""
