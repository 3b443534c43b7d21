"""Loading progress from inside transformers: its "Loading weights" loop, reported and cancellable.

transformers (5.x) lets a caller hook the creation of its tqdm bars; the hook
wraps the weights loop so each step reports a fraction and checks cancel, and
raising LoadCancelled there stops `from_pretrained` between two tensors. A
GGUF's dequantizing loop uses tqdm directly, so that module's `tqdm` name is
swapped for the duration of the load (and put back).
"""

from __future__ import annotations

from typing import Any, Callable

from engine.runners.base import LoadCancelled, Progress
WEIGHTS_START, WEIGHTS_END = 0.15, 0.95  # share of the progress bar that loading weights takes
GGUF_SPLIT = 0.75  # a GGUF spends most of its load dequantizing, before "Loading weights"


class weights_progress:
    """Report the weights loops as progress and honour cancel there."""

    def __init__(self, progress: Progress, cancelled: Callable[[], bool], gguf: bool = False) -> None:
        self.progress, self.cancelled, self.gguf = progress, cancelled, gguf
        self.previous: Any = None
        self.previous_gguf_tqdm: Any = None

    def __enter__(self) -> None:
        from transformers.utils import logging as hf_logging

        if hasattr(hf_logging, "set_tqdm_hook"):  # transformers >= 5.x; older ones just skip the bar
            self.previous = hf_logging.set_tqdm_hook(self._hook)
        if self.gguf:
            module = _gguf_module()
            if module is not None and hasattr(module, "tqdm"):
                self.previous_gguf_tqdm = module.tqdm
                module.tqdm = self._gguf_tqdm

    def __exit__(self, *exc: object) -> None:
        from transformers.utils import logging as hf_logging

        if hasattr(hf_logging, "set_tqdm_hook"):
            hf_logging.set_tqdm_hook(self.previous)
        module = _gguf_module()
        if self.previous_gguf_tqdm is not None and module is not None:
            module.tqdm = self.previous_gguf_tqdm

    def _hook(self, factory: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        kwargs = dict(kwargs, disable=True)
        bar = factory(*args, **kwargs)
        if not args or kwargs.get("desc") != "Loading weights":
            return bar
        start = GGUF_SPLIT if self.gguf else WEIGHTS_START
        return _ReportingIterable(args[0], self.progress, self.cancelled, (start, WEIGHTS_END), "loading weights")

    def _gguf_tqdm(self, items: Any, *args: Any, **kwargs: Any) -> Any:
        span = (WEIGHTS_START, GGUF_SPLIT)
        return _ReportingIterable(items, self.progress, self.cancelled, span, "dequantizing GGUF tensors")


def _gguf_module() -> Any:
    try:
        from transformers import modeling_gguf_pytorch_utils
    except ImportError:
        return None
    return modeling_gguf_pytorch_utils


class _ReportingIterable:
    def __init__(
        self, items: Any, progress: Progress, cancelled: Callable[[], bool], span: tuple[float, float], what: str
    ) -> None:
        self.items, self.progress, self.cancelled = items, progress, cancelled
        self.span, self.what = span, what

    def __iter__(self) -> Any:
        total = max(1, len(self.items))
        start, end = self.span
        for done, item in enumerate(self.items):
            if self.cancelled():
                raise LoadCancelled()
            if done % max(1, total // 50) == 0:
                self.progress(start + (end - start) * done / total, f"{self.what} {done}/{total}")
            yield item
        self.progress(end, f"{self.what} {total}/{total}")
