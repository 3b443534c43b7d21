"""Getting models from the Hugging Face Hub: the Get models dialog, its background work, the download indicator."""
