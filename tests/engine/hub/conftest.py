"""The stand-in Hub's fixtures (tests/engine/hub/fixtures.py) for the tests here."""

from tests.engine.hub.fixtures import gguf_repo_files, hub, hub_env  # noqa: F401
from tests.engine.hub.voice_fixtures import voice_hub  # noqa: F401
