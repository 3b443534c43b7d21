"""The bundle's entry script: PyInstaller runs this file as __main__ and freezes what it imports.

It lives outside app/ so that PyInstaller, which puts a script's folder on the
search path, does not make app's modules importable as top-level names.
"""

import sys

from app.main import main

if __name__ == "__main__":
    sys.exit(main())
