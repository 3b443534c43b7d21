"""Which of a repo's files fits this machine, from the same estimate the settings dialog shows.

The decision tree (the usual advice: the model within ~70% of memory, the rest for
the KV cache and parallel chats): full precision if it fits with room for the KV
cache, else 8-bit, else 4-bit, else a smaller model. In between sizes (6-bit,
5-bit) count too: the most precise file that fits is recommended.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from engine.catalog.description import ModelDescription
from engine.catalog.devices import DeviceMemory, cuda_devices, system_memory
from engine.catalog.memory import Level, estimate, verdict
from engine.catalog.models import describe
from engine.hub.cache_layout import CacheLayout
from engine.hub.errors import GatedRepo
from engine.hub.listing import ModelChoice, RepoListing, list_repo
from engine.hub.quants import precision_label
from engine.hub.remote import describe_choices
from engine.hub.settings import HubSettings
from engine.protocol import ModelConfig
from engine.units import format_bytes


@dataclass(frozen=True)
class Fit:
    choice: ModelChoice
    level: Level
    need_bytes: int  # on the device that must hold it (VRAM on a GPU, else RAM)
    message: str  # "Needs about 1.0 GiB once loaded, up to 1.2 GiB with every chat full; 14.0 GiB of 15.5 GiB RAM free."
    suggestion: str  # what would make it fit; "" when it fits
    after_load_bytes: int = 0  # on that device right after load, before the chats fill (need_bytes: all full)


@dataclass(frozen=True)
class FitReport:
    fits: tuple[Fit, ...]  # in the listing's order: most precise first
    recommended: ModelChoice | None
    why: str  # one line
    memory: DeviceMemory
    ram_bytes: int = 0  # the machine's RAM the verdicts were made for (the prompt copy's "auto" depends on it)
    # choice key -> its model's description: a choice changed after the look (another projector) is judged again
    descriptions: dict[str, ModelDescription] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def fit(self, key: str) -> Fit:
        return next(fit for fit in self.fits if fit.choice.key == key)

    def refit(self, choice: ModelChoice, config: ModelConfig) -> Fit | None:
        """The verdict for `choice` as changed since (its projector picked by the user), read from nothing new."""
        model = self.descriptions.get(choice.key)
        if model is None:
            return None
        return _fit(choice, model, config, self.memory, self.memory.device != "cpu", self.ram_bytes)


def target_memory(config: ModelConfig) -> tuple[DeviceMemory, bool]:
    """The memory a model will live in with this config (a GPU's VRAM if one is in use, else RAM)."""
    gpus = [] if config.device == "cpu" else cuda_devices()
    if gpus:
        wanted = config.device if config.device.startswith("cuda:") else "cuda:0"
        return next((gpu for gpu in gpus if gpu.device == wanted), gpus[0]), True
    return system_memory(), False


def assess(listing: RepoListing, descriptions: dict[str, ModelDescription], config: ModelConfig,
           memory: DeviceMemory | None = None, has_gpu: bool | None = None) -> FitReport:
    """A verdict for every choice at the user's context and parallel chats, and the one to take.

    `memory` is the device the model will live in (this machine's, read here, when not given); the
    estimate also needs the machine's RAM: that device's size when it is the RAM, else read here."""
    if memory is None or has_gpu is None:
        memory, has_gpu = target_memory(config)
    ram_bytes = memory.total_bytes if memory.device == "cpu" else system_memory().total_bytes
    fits = tuple(_fit(choice, descriptions[choice.key], config, memory, has_gpu, ram_bytes)
                 for choice in listing.choices if choice.key in descriptions)
    recommended, why = recommend(fits, memory, config)
    return FitReport(fits, recommended, why, memory, ram_bytes, dict(descriptions))


def config_for(choice: ModelChoice, config: ModelConfig, path: str = "") -> ModelConfig:
    """The user's settings, with the backend and quantization this choice loads with."""
    if choice.kind == "hf":
        return dataclasses.replace(config, path=path or config.path, backend="hf", gguf_file=None,
                                   quantization=choice.quant)  # type: ignore[arg-type]
    return dataclasses.replace(config, path=path or config.path, backend="llamacpp", gguf_file=None)


def _fit(choice: ModelChoice, model: ModelDescription, config: ModelConfig, memory: DeviceMemory,
         has_gpu: bool, ram_bytes: int) -> Fit:
    projector = choice.projector.size if choice.projector else None  # fetched with the model, loaded with it
    result = estimate(model, config_for(choice, config, model.path), has_gpu=has_gpu, total_memory=ram_bytes,
                      projector_bytes=projector)
    answer = verdict(result, memory.free_bytes, memory.total_bytes)
    return Fit(choice, answer.level, result.device_bytes, answer.message, answer.suggestion,
               result.device_after_load_bytes)


def _what(choice: ModelChoice) -> str:
    return precision_label(choice.quant) if choice.quant else choice.label


def recommend(fits: tuple[Fit, ...], memory: DeviceMemory, config: ModelConfig) -> tuple[ModelChoice | None, str]:
    """The most precise choice that fits with room to spare; else the most precise tight one; else none."""
    where = "VRAM" if memory.device != "cpu" else "RAM"
    room = (f"{format_bytes(memory.free_bytes)} free {where}, with the KV cache of {config.slots} chat"
            f"{'s' if config.slots != 1 else ''} x {config.context_length:,} tokens")
    if not fits:
        return None, "This repo has no GGUF file or safetensors folder Hearth can load."
    roomy = [fit for fit in fits if fit.level == "fits"]
    if roomy:
        best = roomy[0]
        better = fits[: fits.index(best)]
        reason = f"{_what(best.choice)} is the most precise that fits in {room}"
        if better:
            reason += f"; {_what(better[-1].choice)} would need {format_bytes(better[-1].need_bytes)}"
        return best.choice, reason + "."
    tight = [fit for fit in fits if fit.level == "tight"]
    if tight:
        return tight[0].choice, (f"{_what(tight[0].choice)} fits, but tightly: it needs "
                                 f"{format_bytes(tight[0].need_bytes)} of {room}; other programs may run short.")
    smallest = min(fits, key=lambda fit: fit.need_bytes)
    hint = f" {smallest.suggestion}" if smallest.suggestion and "smaller model" not in smallest.suggestion else ""
    return None, (f"Nothing here fits: the smallest needs {format_bytes(smallest.need_bytes)} and there is "
                  f"{room}. Choose a smaller model (fewer parameters).{hint}")


@dataclass(frozen=True)
class RepoView:
    """A repo as Get models shows it: its models, what fits here, and which are downloaded already."""

    listing: RepoListing
    report: FitReport | None  # None when the headers cannot be read (a gated repo without a token)
    problem: str  # why there is no report
    local: dict[str, str]  # choice key -> its local path, for choices complete in the cache
    quantizations: dict[str, str] = dataclasses.field(default_factory=dict)  # downloaded GGUFs: from the header

    def quantization(self, choice: ModelChoice) -> str:
        """The file type its header gives once downloaded, else what its name says ("" when it says nothing)."""
        return self.quantizations.get(choice.key) or choice.quant


def repo_view(repo_id: str, settings: HubSettings, config: ModelConfig, revision: str | None = None) -> RepoView:
    """A repo's files and what fits here; a gated repo still lists its files, with the reason there is no verdict."""
    listing = list_repo(repo_id, settings, revision)
    local = downloaded_choices(listing, settings)
    headers = {key: describe(path).quantization for key, path in local.items() if path.lower().endswith(".gguf")}
    try:
        descriptions = describe_choices(listing, settings, local)  # what is here is read exactly, from disk
    except GatedRepo as error:
        return RepoView(listing, None, f"No verdicts: the files' headers cannot be read. {error}", local, headers)
    return RepoView(listing, assess(listing, descriptions, config), "", local, headers)


def downloaded_choices(listing: RepoListing, settings: HubSettings) -> dict[str, str]:
    layout = CacheLayout(settings.cache, listing.repo_id)
    snapshot = layout.snapshot(listing.commit)
    return {choice.key: str(layout.in_snapshot(listing.commit, choice.key) if choice.kind == "gguf" else snapshot)
            for choice in listing.choices if all(layout.is_linked(listing.commit, file) for file in choice.files)}
