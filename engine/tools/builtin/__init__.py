"""Hearth's own tools, beside MCP servers: web search, fetching a page, the user's chats, and memory.

Qt-free; each tool is a spec, a run function and its limits (one module each). What a tool needs from
the app (the chats' search, the notes' storage) is handed in, never imported. Web content comes back
framed as untrusted data with its sources named, so the window can hold any call that follows it for
the person's approval.
"""
