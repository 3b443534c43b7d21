"""Getting models from the Hugging Face Hub: search, a repo's files, what fits here, verified downloads.

Qt-free; the Get models dialog and `python -m engine.hub` share it. Every call
reads HF_ENDPOINT, HF_TOKEN, HF_HOME / HF_HUB_CACHE and HF_HUB_OFFLINE when it
runs, and files land in the standard Hugging Face cache so other tools share them.
"""
