"""Settings declared once and stored as JSON, and the dialog that edits them."""
