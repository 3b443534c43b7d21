"""The transformers (+ bitsandbytes) backend."""
