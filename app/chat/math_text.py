"""LaTeX math in a message: found and set aside before Markdown sees it, drawn by matplotlib's mathtext
(environments such as pmatrix, cases and align, which mathtext lacks, through MathML: app/chat/math_svg.py).

`$…$` and `\\(…\\)` are inline, `$$…$$`, `\\[…\\]` and a bare `\\begin{…}…\\end{…}` are display math. A dollar
only opens math when a non-space follows it and closes it when a non-space
precedes it and no digit follows ("$5 and $10" stays text). Inline code spans
are left alone. Each formula is drawn once per (source, colour, size) and kept;
what neither can draw shows as monospace source.
"""

from __future__ import annotations

import functools
import hashlib
import html
import io
import re
from dataclasses import dataclass

MATH = re.compile(
    r"\$\$(?P<display>.+?)\$\$"
    # a bare \begin{pmatrix}…\end{pmatrix} (models write them without dollars): display math
    r"|(?P<environment>\\begin\{(?P<name>[A-Za-z]+\*?)\}.+?\\end\{(?P=name)\})"
    r"|\\\[(?P<bracket>.+?)\\\]"
    r"|\\\((?P<paren>.+?)\\\)"
    r"|(?<![\\$\w])\$(?=[^\s$])(?P<inline>[^$\n]*?[^\s\\$])\$(?![\d$\w])",
    re.DOTALL,
)
CODE_SPAN = re.compile(r"(`+)(?:.+?)\1", re.DOTALL)
TOKEN = "HEARTHMATH{}Z"
TOKEN_PATTERN = re.compile(r"HEARTHMATH(\d+)Z")
MATH_SCHEME = "math"
INLINE_POINTS, DISPLAY_POINTS = 11.0, 14.0


@dataclass(frozen=True)
class Formula:
    source: str  # without its delimiters
    display: bool

    def key(self, color: str, points: float) -> str:
        """A resource name for the drawn image: the same formula in the same colour is drawn once."""
        digest = hashlib.sha1(f"{self.display}|{color}|{points}|{self.source}".encode()).hexdigest()[:16]
        return f"{MATH_SCHEME}:{digest}"


def set_aside(markdown: str) -> tuple[str, list[Formula]]:
    """Replace each formula (outside code spans) with a token Markdown leaves alone."""
    formulas: list[Formula] = []

    def replace(match: re.Match[str]) -> str:
        display = match["display"] is not None or match["bracket"] is not None or match["environment"] is not None
        source = next(group for group in match.group("display", "environment", "bracket", "paren", "inline")
                      if group is not None)
        formulas.append(Formula(" ".join(source.split()), display))
        token = TOKEN.format(len(formulas) - 1)
        return f"\n\n{token}\n\n" if display else token

    pieces, last = [], 0
    for code in CODE_SPAN.finditer(markdown):
        pieces.append(MATH.sub(replace, markdown[last:code.start()]) + code.group(0))
        last = code.end()
    pieces.append(MATH.sub(replace, markdown[last:]))
    return "".join(pieces), formulas


def put_back(body: str, formulas: list[Formula], images: dict[int, str | None]) -> str:
    """The tokens in rendered HTML become <img> of the drawn formula (by resource name) or its source."""

    def replace(match: re.Match[str]) -> str:
        index = int(match.group(1))
        if index >= len(formulas):
            return match.group(0)
        formula, name = formulas[index], images.get(index)
        if name is None:
            delimiter = "$$" if formula.display else "$"
            return f"<code>{html.escape(delimiter + formula.source + delimiter)}</code>"
        return f'<img src="{name}" align="middle">'

    body = re.sub(r"<p>\s*(HEARTHMATH\d+Z)\s*</p>", r'<p align="center">\1</p>', body)
    return TOKEN_PATTERN.sub(replace, body)


@functools.lru_cache(maxsize=512)
def draw_png(source: str, color: str, points: float, dpi: int) -> bytes | None:
    """PNG bytes of one formula; None where neither mathtext nor MathML (app/chat/math_svg.py) can draw it."""
    try:  # QtSvg is imported only once a formula is drawn
        from app.chat.math_svg import draw_svg_png, has_environment
    except ImportError:  # a build without QtSvg: mathtext alone
        return _mathtext_png(source, color, points, dpi)
    if has_environment(source):  # matrices, cases, align: mathtext has no environments
        return draw_svg_png(source, color, points, dpi)
    return _mathtext_png(source, color, points, dpi)


def _mathtext_png(source: str, color: str, points: float, dpi: int) -> bytes | None:
    try:
        from matplotlib import mathtext, rc_context
        from matplotlib.font_manager import FontProperties
    except ImportError:
        return None
    buffer = io.BytesIO()
    try:
        with rc_context({"savefig.transparent": True}):  # on the message's own background, light or dark
            mathtext.math_to_image(f"${source}$", buffer, prop=FontProperties(size=points), dpi=dpi, format="png",
                                   color=color)
    except Exception:  # noqa: BLE001 - mathtext raises ValueError and others on TeX it does not know
        return None
    return buffer.getvalue()

