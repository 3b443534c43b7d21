"""`python -m engine.bench`."""

import sys

from engine.bench.cli import main

sys.exit(main())
