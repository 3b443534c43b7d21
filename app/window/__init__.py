"""The main window and what frames the chats: tab strip, menus, theme, welcome."""
