"""The window's MCP tools: the servers of mcp.json as the chats and the Tools settings use them."""
