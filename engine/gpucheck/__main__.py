"""`python -m engine.gpucheck`."""

import sys

from engine.gpucheck.cli import main

sys.exit(main())
