"""`python -m engine.server`: the same as `hearth-serve`."""

import sys

from engine.server.cli import main

sys.exit(main())
