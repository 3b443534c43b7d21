"""Text out of a file, page by page, so that a citation can name the page it came from.

Plain text, Markdown and source code are read as text (a file that is not text says so);
HTML through the standard library's parser; PDF through pypdf; DOCX through python-docx;
PPTX (a page per slide) through python-pptx, XLSX (a page per sheet) through openpyxl and
EPUB (a page per chapter) through zipfile and the HTML parser. markitdown was compared and
not taken: it pulls onnxruntime and magika (a neural file-type guesser) and pandas for XLSX,
and its PDF path is pypdf's text anyway, without page numbers.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

Progress = Callable[[int, int], None]  # pages done, pages in all

_SAMPLE_BYTES = 65536
_CONTROL_SHARE_BINARY = 0.05  # more control bytes than this in the sample: not a text file
_HTML_SUFFIXES = {".html", ".htm", ".xhtml"}


class ExtractionError(Exception):
    """A file whose text cannot be read; the message is for the user's eyes (shown on its chip)."""


@dataclass(frozen=True)
class Page:
    number: int  # from 1, as a reader counts them
    text: str


@dataclass(frozen=True)
class Document:
    name: str
    kind: str  # "text", "html", "pdf", "docx", "pptx", "xlsx", "epub"
    pages: tuple[Page, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(page.text for page in self.pages)


def extract(path: Path, on_progress: Progress | None = None) -> Document:
    """The text of `path`, or ExtractionError with a message that says what is wrong with the file."""
    path = Path(path)
    if not path.is_file():
        raise ExtractionError(f"{path.name}: the file is not there (moved or deleted?)")
    suffix = path.suffix.lower()
    readers: dict[str, Callable[[Path, Progress], tuple[str, list[Page]]]] = {
        ".pdf": _read_pdf, ".docx": _read_docx, ".pptx": _read_pptx, ".xlsx": _read_xlsx, ".epub": _read_epub,
    }
    report = on_progress or (lambda done, total: None)
    reader = readers.get(suffix, _read_html if suffix in _HTML_SUFFIXES else _read_text)
    kind, pages = reader(path, report)
    if not any(page.text.strip() for page in pages):
        raise ExtractionError(_no_text_message(path.name, kind))
    return Document(path.name, kind, tuple(pages))


def _no_text_message(name: str, kind: str) -> str:
    if kind == "pdf":
        return (f"{name}: this PDF has no text to read, only images (a scanned document?). "
                "Reading text from pictures is not supported yet.")
    return f"{name}: the file has no text in it."


def _read_text(path: Path, report: Progress) -> tuple[str, list[Page]]:
    data = path.read_bytes()
    if _looks_binary(data[:_SAMPLE_BYTES]):
        raise ExtractionError(f"{path.name}: this is not a text file (it holds binary data), so it cannot be read as text.")
    text = _decode(data)
    report(1, 1)
    return "text", [Page(1, text)]


def _looks_binary(sample: bytes) -> bool:
    if b"\x00" in sample and not sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    control = sum(1 for byte in sample if byte < 32 and byte not in (9, 10, 12, 13, 27))
    return bool(sample) and control / len(sample) > _CONTROL_SHARE_BINARY


def _decode(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")  # older Windows text files


class _TextOfHtml(HTMLParser):
    """Visible text of an HTML page; headings become Markdown headings so chunks can cut at them."""

    _SKIPPED = frozenset({"script", "style", "head", "noscript", "template"})
    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "section", "article", "pre", "blockquote", "table", "ul", "ol"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIPPED:
            self._skipping += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1].isdigit():
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in self._BLOCKS:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag in self._BLOCKS or (len(tag) == 2 and tag[0] == "h" and tag[1].isdigit()):
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextOfHtml()
    parser.feed(html)
    parser.close()
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    return "\n".join(lines).strip()


def _read_html(path: Path, report: Progress) -> tuple[str, list[Page]]:
    _, pages = _read_text(path, report)
    return "html", [Page(1, html_to_text(pages[0].text))]


def _read_pdf(path: Path, report: Progress) -> tuple[str, list[Page]]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):  # an owner password alone still opens
            raise ExtractionError(f"{path.name}: this PDF is encrypted with a password; "
                                  "open it elsewhere and save a copy without one.")
        total = len(reader.pages)
        pages = []
        for index, page in enumerate(reader.pages):
            pages.append(Page(index + 1, page.extract_text() or ""))
            report(index + 1, total)
    except ExtractionError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as error:
        raise ExtractionError(f"{path.name}: this PDF is damaged or not a PDF, and could not be read ({error}).") from error
    return "pdf", pages


def _read_docx(path: Path, report: Progress) -> tuple[str, list[Page]]:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as error:
        raise ExtractionError(f"{path.name}: this Word file is damaged or not a .docx, and could not be read.") from error
    blocks = [_docx_paragraph(p.style.name if p.style is not None else "", p.text) for p in document.paragraphs]
    for table in document.tables:
        blocks.extend(" | ".join(cell.text for cell in row.cells) for row in table.rows)
    report(1, 1)
    return "docx", [Page(1, "\n\n".join(block for block in blocks if block.strip()))]


def _docx_paragraph(style: str, text: str) -> str:
    if style.startswith("Heading ") and style[8:].isdigit():
        return "#" * int(style[8:]) + " " + text
    return "# " + text if style == "Title" else text


def _read_pptx(path: Path, report: Progress) -> tuple[str, list[Page]]:
    pptx = _optional("pptx", "python-pptx", path)
    presentation = _open_zip_document(lambda: pptx.Presentation(str(path)), path)
    slides = list(presentation.slides)
    pages = []
    for number, slide in enumerate(slides, 1):
        texts = [shape.text_frame.text for shape in slide.shapes if shape.has_text_frame and shape.text_frame.text.strip()]
        pages.append(Page(number, "\n\n".join(texts)))
        report(number, len(slides))
    return "pptx", pages


def _read_xlsx(path: Path, report: Progress) -> tuple[str, list[Page]]:
    openpyxl = _optional("openpyxl", "openpyxl", path)
    workbook = _open_zip_document(lambda: openpyxl.load_workbook(path, read_only=True, data_only=True), path)
    pages = []
    for number, sheet in enumerate(workbook.worksheets, 1):
        rows = (" | ".join("" if value is None else str(value) for value in row) for row in sheet.iter_rows(values_only=True))
        pages.append(Page(number, f"# {sheet.title}\n\n" + "\n".join(row for row in rows if row.strip(" |"))))
        report(number, len(workbook.worksheets))
    return "xlsx", pages


def _read_epub(path: Path, report: Progress) -> tuple[str, list[Page]]:
    book = _open_zip_document(lambda: zipfile.ZipFile(path), path)
    with book:
        chapters = list(_epub_chapters(book))
        pages = []
        for number, name in enumerate(chapters, 1):
            pages.append(Page(number, html_to_text(book.read(name).decode("utf-8", errors="replace"))))
            report(number, len(chapters))
    return "epub", pages


def _epub_chapters(book: zipfile.ZipFile) -> Iterable[str]:
    """The chapters in reading order: container.xml names the package, its spine orders the items."""
    container = ElementTree.fromstring(book.read("META-INF/container.xml"))
    package_path = next(el.attrib["full-path"] for el in container.iter() if el.tag.endswith("rootfile"))
    package = ElementTree.fromstring(book.read(package_path))
    base = package_path.rpartition("/")[0]
    items = {el.attrib["id"]: el.attrib["href"] for el in package.iter() if el.tag.endswith("}item")}
    for ref in (el for el in package.iter() if el.tag.endswith("itemref")):
        href = items.get(ref.attrib.get("idref", ""))
        if href:
            yield f"{base}/{href}" if base else href


def _optional(module: str, package: str, path: Path):  # type: ignore[no-untyped-def]
    try:
        return __import__(module)
    except ImportError as error:
        raise ExtractionError(f"{path.name}: reading {path.suffix} files needs the '{package}' package "
                              "(pip install 'hearth-chat[documents]').") from error


def _open_zip_document(opener: Callable[[], object], path: Path):  # type: ignore[no-untyped-def]
    try:
        return opener()
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, StopIteration, ElementTree.ParseError) as error:
        raise ExtractionError(f"{path.name}: this file is damaged or not a {path.suffix} file, and could not be read.") from error
