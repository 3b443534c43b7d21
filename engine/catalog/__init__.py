"""Finding, describing and sizing models: GGUF headers, HF folders, the default model, the memory estimate."""
