"""The llama.cpp backend on llama-cpp-python's low-level API."""
