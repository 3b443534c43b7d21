"""`hearth --check-parts`: draw math, read a web page and start the voice libraries headless; print one JSON line.

A frozen build leaves out what its analysis cannot see: package data (matplotlib's fonts, trafilatura's
settings.cfg, justext's stop lists, Piper's eSpeak data), libraries loaded by name, modules the spec
excludes. Each part here goes through the code the window uses, so the bundle test can run this in the
bundle and in the venv it was built from and require the same outcome of both. No network, no device:
the page is given as HTML, the microphone is only imported, the MP3 encoder is fed silence.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

OK, MISSING, FAILED = "ok", "missing", "failed"  # missing: not installed (in a bundle: not bundled)
COLOR, POINTS, DPI = "#202020", 14.0, 96
FORMULA = r"\frac{a^2}{\sqrt{b}} + \sum_{i=1}^{n} x_i"
ENVIRONMENT = r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}"
ARTICLE = "A banked fire keeps a hearth warm through the night; whoever rakes it open at dawn has flames in minutes. "
PAGE = f"""<html><head><title>Hearth check</title></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/about">About us</a></li><li><a href="/shop">Shop</a></li></ul></nav>
<article><h1>Banked fires</h1><p>{ARTICLE * 2}</p><p>{ARTICLE}</p></article>
<footer><p>Copyright 2026 Example Corp. All rights reserved.</p></footer></body></html>"""
BOILERPLATE = ("About us", "All rights reserved")  # the whole page's text has them, trafilatura's main text not


class CheckFailed(Exception):
    """The part is there but did not do its work."""


def _drawn(png: bytes | None) -> str:
    """The size of a drawn formula; CheckFailed where it would show as source or drew nothing visible."""
    from PySide6.QtGui import QImage

    if png is None:
        raise CheckFailed("not drawn: the window would show the TeX source")
    image = QImage.fromData(png)
    inked = any(image.pixelColor(x, y).alpha() > 0 for x in range(image.width()) for y in range(image.height()))
    if image.isNull() or not inked:
        raise CheckFailed(f"the PNG ({len(png)} bytes) is empty or blank")
    return f"{image.width()}x{image.height()} px"


def check_math_text() -> str:
    """An inline formula through matplotlib's mathtext (the Agg canvas, its fonts in mpl-data)."""
    import matplotlib  # noqa: F401 - missing, not failed, where it is not installed

    from app.chat.math_text import draw_png

    return _drawn(draw_png(FORMULA, COLOR, POINTS, DPI))


def check_math_environment() -> str:
    """A matrix through ziamath's MathML layout to SVG, painted by QtSvg."""
    import PySide6.QtSvg  # noqa: F401
    import ziamath  # noqa: F401

    from app.chat.math_text import draw_png

    return _drawn(draw_png(ENVIRONMENT, COLOR, POINTS, DPI))


def check_web_page() -> str:
    """fetch_page's reading of an HTML page: trafilatura's main text, without the menu and the footer."""
    import trafilatura  # noqa: F401 - without it fetch_page gives the whole page's text

    from engine.tools.builtin.fetch_page import readable_text
    from engine.tools.builtin.web_client import Body

    title, text = readable_text(Body("http://127.0.0.1/check", 200, "text/html", "utf-8", PAGE.encode(), False))
    if ARTICLE.strip() not in text or any(words in text for words in BOILERPLATE):
        raise CheckFailed(f"not the article's text alone: {text[:200]!r}")
    return f"{title!r}: {len(text)} characters"


def check_web_stoplists() -> str:
    """justext's stop lists, which trafilatura falls back on for pages its own rules cannot read."""
    import justext

    return f"{len(justext.get_stoplist('English'))} English stop words"


def check_web_search() -> str:
    import ddgs

    return f"ddgs {ddgs.__version__}"


def check_microphone() -> str:
    """sounddevice and the PortAudio library it loads (OSError where the library is not found)."""
    import sounddevice

    return str(sounddevice.get_portaudio_version()[1])


def check_speech_to_text() -> str:
    """faster-whisper's imports (CTranslate2, tokenizers, PyAV, huggingface_hub) and CTranslate2's CPU kernels."""
    import ctranslate2
    import faster_whisper  # noqa: F401

    return f"ctranslate2 {ctranslate2.__version__}: {', '.join(sorted(ctranslate2.get_supported_compute_types('cpu')))}"


def check_mp3() -> str:
    """The API's MP3 speech: PyAV's LAME encoder on a second of silence."""
    from engine.voice.encoders import Mp3Encoder

    encoder = Mp3Encoder(16_000)
    data = encoder.start() + encoder.feed(b"\0\0" * 16_000) + encoder.finish()
    if not data:
        raise CheckFailed("LAME wrote nothing")
    return f"{len(data)} bytes"


def check_text_to_speech() -> str:
    """Piper's phonemes through its eSpeak NG bridge and data, and ONNX Runtime's CPU provider."""
    import onnxruntime
    from piper.phonemize_espeak import ESPEAK_DATA_DIR, EspeakPhonemizer

    if not (ESPEAK_DATA_DIR / "phontab").is_file():  # eSpeak NG ends the process when its data is not there
        raise CheckFailed(f"no eSpeak NG data in {ESPEAK_DATA_DIR}")
    phonemes = "".join("".join(sentence) for sentence in EspeakPhonemizer().phonemize("en-us", "Hello"))
    if not phonemes or "CPUExecutionProvider" not in onnxruntime.get_available_providers():
        raise CheckFailed(f"phonemes {phonemes!r}, providers {onnxruntime.get_available_providers()}")
    return phonemes


CHECKS: dict[str, Callable[[], str]] = {
    "math_text": check_math_text, "math_environment": check_math_environment,
    "web_page": check_web_page, "web_stoplists": check_web_stoplists, "web_search": check_web_search,
    "microphone": check_microphone, "speech_to_text": check_speech_to_text, "mp3": check_mp3,
    "text_to_speech": check_text_to_speech,
}


def run_check(check: Callable[[], str]) -> dict[str, str]:
    try:
        return {"status": OK, "detail": check()}
    except ImportError as error:
        return {"status": MISSING, "detail": str(error)}
    except Exception as error:  # noqa: BLE001 - whatever a part raises is its outcome, reported
        return {"status": FAILED, "detail": f"{type(error).__name__}: {error}"}


def main(qt_args: list[str]) -> int:
    """Run every check, print {name: {status, detail}} as one JSON line; 0 even where parts fail."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0], *qt_args])  # QImage, QPainter, QtSvg
    print(json.dumps({name: run_check(check) for name, check in CHECKS.items()}), flush=True)
    del app
    return 0
