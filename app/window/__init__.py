"""The main window and what frames the chats: tab strip, menus, theme, welcome, the model's life cycle, the self-test."""
