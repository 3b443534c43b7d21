"""What the GPU check carries to the GPU machine, run by run, and whether it fits.

One ignored folder of the checkout (`.gpucheck/`) holds what that machine
lacks, in three subfolders so that each run carries only what it needs:
`common/` (the manifest, the gguf and diskcache wheels, the default model's
skeleton), `llama/` (the stripped llama-cpp-python sources) and `hf/` (the
bitsandbytes wheel). A run carries the working tree too, so its size counts
against the 64 MiB. Each run needs nothing from the one before: a fresh
machine per run works.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CARRY_LIMIT_BYTES = 64 << 20  # the working tree and every carried path of one run
FOLDER = ".gpucheck"
MANIFEST = "common/manifest.json"
LLAMA_CPP_PYTHON = "0.3.36"
BITSANDBYTES = "0.50.2"
GPU_PYTHON = "3.12"  # the GPU machine's python3 (/opt/torch/.venv)
SKELETON = "common/smollm2-135m-skeleton.gguf"
# The part's command line there; the device tool sets $OUT.
COMMAND = "PYTHONUNBUFFERED=1 python3 -m engine.gpucheck --part {part} --out $OUT"
RUN_FOLDERS = {"llama": ("common", "llama"), "hf": ("common", "hf")}
# Minutes of device time each part is planned for (the machine's start comes on top, ~1-2 minutes).
EXPECTED_MINUTES = {"llama": 7.0, "hf": 4.5}  # llama: ~4-6 of them compile ggml-cuda
DEADLINE_S = {"llama": 540, "hf": 540}  # later steps are skipped, not cut, past this


@dataclass(frozen=True)
class Artifact:
    path: str  # relative to the folder: "hf/bitsandbytes-0.50.2-....whl"
    what: str
    bytes: int
    sha256: str


@dataclass(frozen=True)
class RunPlan:
    part: str
    carry: tuple[str, ...]  # paths relative to the checkout, for the device tool's `carry`
    carried_bytes: int
    tree_bytes: int  # the working tree that travels anyway
    command: str
    expected_minutes: float

    @property
    def total_bytes(self) -> int:
        return self.carried_bytes + self.tree_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= CARRY_LIMIT_BYTES


@dataclass
class Manifest:
    artifacts: list[Artifact]
    model: str  # how the default model reaches the GPU machine
    created: str = ""
    runs: list[RunPlan] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"created": self.created, "model": self.model, "carry_limit_bytes": CARRY_LIMIT_BYTES,
                "artifacts": [asdict(a) for a in self.artifacts], "runs": [asdict(r) for r in self.runs]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        runs = [RunPlan(**{**r, "carry": tuple(r["carry"])}) for r in data.get("runs", [])]
        return cls([Artifact(**a) for a in data["artifacts"]], data.get("model", ""), data.get("created", ""), runs)

    def save(self, folder: Path) -> Path:
        path = folder / MANIFEST
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        return path


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def artifact(folder: Path, relative: str, what: str) -> Artifact:
    path = folder / relative
    return Artifact(relative, what, path.stat().st_size, sha256(path))


def tree_bytes(checkout: Path) -> int:
    """What travels anyway: tracked files and untracked ones git does not ignore."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=checkout, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):  # a copy without .git (the GPU machine's): every file
        return sum(p.stat().st_size for p in checkout.rglob("*")
                   if p.is_file() and not {FOLDER, ".git"} & set(p.relative_to(checkout).parts))
    total = 0
    for name in filter(None, listed.split(b"\0")):
        path = checkout / name.decode("utf-8", "surrogateescape")
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_size
    return total


def run_plans(artifacts: list[Artifact], checkout: Path, folder_name: str = FOLDER) -> list[RunPlan]:
    tree = tree_bytes(checkout)
    plans = []
    for part, folders in RUN_FOLDERS.items():
        carried = sum(a.bytes for a in artifacts if a.path.split("/")[0] in folders)
        plans.append(RunPlan(part, tuple(f"{folder_name}/{f}" for f in folders), carried, tree,
                             COMMAND.format(part=part), EXPECTED_MINUTES[part]))
    return plans


def check(folder: Path, checkout: Path, parts: tuple[str, ...] = tuple(RUN_FOLDERS)) -> list[str]:
    """What is wrong with a prepared folder for `parts`: missing or changed files, a run over the limit. [] = ready.

    On the GPU machine a run has only its own folders, so only those are checked there.
    """
    carried = {name for part in parts for name in RUN_FOLDERS[part]}
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return [f"{manifest_path} is missing: run `python -m engine.gpucheck --prepare` first"]
    manifest = Manifest.from_json(json.loads(manifest_path.read_text(encoding="utf-8")))
    problems = []
    for item in (a for a in manifest.artifacts if a.path.split("/")[0] in carried):
        path = folder / item.path
        if not path.is_file():
            problems.append(f"{item.path} is missing")
        elif path.stat().st_size != item.bytes or sha256(path) != item.sha256:
            problems.append(f"{item.path} changed since it was prepared")
    for run in run_plans(manifest.artifacts, checkout, folder.name):
        if run.part in parts and not run.fits:
            problems.append(f"run {run.part} carries {run.total_bytes / 2**20:.1f} MiB, over the "
                            f"{CARRY_LIMIT_BYTES >> 20} MiB limit")
    return problems


def describe(manifest: Manifest) -> str:
    """The manifest for a person: every file and each run's total."""
    lines = [f"{'file':<62} {'MiB':>6}  what"]
    lines += [f"{a.path:<62} {a.bytes / 2**20:6.1f}  {a.what}" for a in manifest.artifacts]
    for run in manifest.runs:
        lines.append(f"run {run.part}: carry {list(run.carry)} = {run.carried_bytes / 2**20:.1f} MiB + working tree "
                     f"{run.tree_bytes / 2**20:.1f} MiB = {run.total_bytes / 2**20:.1f} of "
                     f"{CARRY_LIMIT_BYTES >> 20} MiB ({'fits' if run.fits else 'OVER THE LIMIT'}); "
                     f"about {run.expected_minutes:g} min: {run.command}")
    lines.append(f"default model: {manifest.model}")
    return "\n".join(lines)
