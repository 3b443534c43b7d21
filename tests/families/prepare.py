"""Makes every family fixture the suite loads, once per machine: `make test` runs this as part of its set-up
(after the vocabularies and templates are fetched), so that the tests' time is spent on tests.

The family GGUFs take seconds each; a transformers folder takes ~30-80 s (transformers converting a
152k-token vocabulary). Already made ones are kept (their names carry what they were made from), so a
second run returns at once. Each is also made on demand by the test that wants it, where this was not run.
"""

from __future__ import annotations

import importlib.util
import sys
import time

from tests.families.build import family_model
from tests.families.recipes import FAMILIES


def main() -> int:
    start = time.monotonic()
    for name in sorted(FAMILIES):
        family_model(name)
    if importlib.util.find_spec("transformers") is not None:
        from tests.families.hf_folder import HF_FAMILIES, family_hf_folder

        for name in HF_FAMILIES:
            family_hf_folder(name)
    print(f"family fixtures ready ({time.monotonic() - start:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
