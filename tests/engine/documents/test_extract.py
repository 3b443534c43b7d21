"""Extraction from real files written in the test: each kind gives its text, each bad file its message."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from engine.documents.extract import ExtractionError, extract, html_to_text
from tests.engine.documents.conftest import PAGES, PLANTED_PAGE, PLANTED_SENTENCE


def test_markdown_is_read_whole(markdown_file: Path) -> None:
    document = extract(markdown_file)
    assert document.kind == "text" and len(document.pages) == 1
    assert "## Recipes" in document.text and "flour, water and salt" in document.text


def test_pdf_keeps_its_pages(long_pdf: Path) -> None:
    seen: list[tuple[int, int]] = []
    document = extract(long_pdf, on_progress=lambda done, total: seen.append((done, total)))
    assert len(document.pages) == PAGES and seen[-1] == (PAGES, PAGES)
    planted = [page.number for page in document.pages if "Ottoline Brackwater" in page.text]
    assert planted == [PLANTED_PAGE]
    assert " ".join(PLANTED_SENTENCE.split()[-4:]) in " ".join(document.pages[PLANTED_PAGE - 1].text.split())


def test_docx_headings_become_markdown(docx_file: Path) -> None:
    document = extract(docx_file)
    assert document.kind == "docx"
    assert document.text.splitlines()[0] == "# Quarterly report"
    assert "blue umbrellas" in document.text


def test_html_keeps_visible_text_only(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text("<html><head><style>p{}</style><script>var x=1</script></head>"
                    "<body><h2>Title</h2><p>Visible &amp; kept.</p></body></html>")
    text = extract(path).text
    assert text.startswith("## Title") and "Visible & kept." in text
    assert "var x" not in text and "p{}" not in text
    assert html_to_text("<p>a</p><p>b</p>") == "a\n\n\n\nb"


def test_source_code_is_text(tmp_path: Path) -> None:
    path = tmp_path / "tool.py"
    path.write_text("def main():\n    return 42\n")
    assert extract(path).text == "def main():\n    return 42\n"


def test_epub_chapters_are_pages(tmp_path: Path) -> None:
    path = tmp_path / "book.epub"
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("META-INF/container.xml", '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                      '<rootfiles><rootfile full-path="OEBPS/content.opf"/></rootfiles></container>')
        book.writestr("OEBPS/content.opf", '<package xmlns="http://www.idpf.org/2007/opf"><manifest>'
                      '<item id="b" href="two.xhtml"/><item id="a" href="one.xhtml"/></manifest>'
                      '<spine><itemref idref="a"/><itemref idref="b"/></spine></package>')
        book.writestr("OEBPS/one.xhtml", "<html><body><p>First chapter.</p></body></html>")
        book.writestr("OEBPS/two.xhtml", "<html><body><p>Second chapter.</p></body></html>")
    document = extract(path)
    assert [page.text for page in document.pages] == ["First chapter.", "Second chapter."]


def test_pptx_and_xlsx_pages(tmp_path: Path) -> None:
    pptx = pytest.importorskip("pptx")
    openpyxl = pytest.importorskip("openpyxl")
    presentation = pptx.Presentation()
    for title in ("Opening", "Closing"):
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = title
    presentation.save(str(tmp_path / "deck.pptx"))
    workbook = openpyxl.Workbook()
    workbook.active.title = "Prices"
    workbook.active.append(["apple", 3])
    workbook.save(str(tmp_path / "book.xlsx"))
    assert [page.text for page in extract(tmp_path / "deck.pptx").pages] == ["Opening", "Closing"]
    assert extract(tmp_path / "book.xlsx").text == "# Prices\n\napple | 3"


def _message(path: Path) -> str:
    with pytest.raises(ExtractionError) as raised:
        extract(path)
    return str(raised.value)


def test_encrypted_pdf_says_so(encrypted_pdf: Path) -> None:
    assert _message(encrypted_pdf).startswith("locked.pdf: this PDF is encrypted with a password")


def test_scanned_pdf_says_it_has_no_text(image_only_pdf: Path) -> None:
    assert "no text to read, only images (a scanned document?)" in _message(image_only_pdf)


def test_broken_pdf_says_so(tmp_path: Path, long_pdf: Path) -> None:
    path = tmp_path / "cut.pdf"
    path.write_bytes(b"%PDF-1.4\n" + b"garbage " * 100)
    assert _message(path).startswith("cut.pdf: this PDF is damaged or not a PDF")


def test_binary_renamed_txt_says_so(binary_txt: Path) -> None:
    assert _message(binary_txt) == ("program.txt: this is not a text file (it holds binary data), "
                                    "so it cannot be read as text.")


def test_broken_docx_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "fake.docx"
    path.write_text("not a zip")
    assert _message(path).startswith("fake.docx: this Word file is damaged or not a .docx")
    assert _message(tmp_path / "gone.md") == "gone.md: the file is not there (moved or deleted?)"
