"""Model > Check quantization…: the dialog over engine.quantcheck, its worker thread and saved results."""
