"""Real files for the documents tests, written in the test: PDFs with fpdf2, a DOCX with python-docx."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.bench.documents import PLANTED_SENTENCE, write_sample_pdf
from engine.documents.extract import Document, extract

PAGES = 300
PLANTED_PAGE = 217
__all__ = ["PAGES", "PLANTED_PAGE", "PLANTED_SENTENCE"]


@pytest.fixture(scope="session")
def long_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 300-page PDF, written once per session (the planted sentence is on page 217)."""
    return write_sample_pdf(tmp_path_factory.mktemp("pdf") / "harbour.pdf", PAGES, PLANTED_PAGE)


@pytest.fixture(scope="session")
def long_document(long_pdf: Path) -> Document:
    return extract(long_pdf)


@pytest.fixture
def markdown_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nThe first paragraph.\n\n## Recipes\n\nBread needs flour, water and salt.\n")
    return path


@pytest.fixture
def docx_file(tmp_path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("Sales of blue umbrellas rose by twelve percent.")
    path = tmp_path / "report.docx"
    document.save(str(path))
    return path


@pytest.fixture
def encrypted_pdf(tmp_path: Path) -> Path:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt(user_password="secret", owner_password="owner")
    path = tmp_path / "locked.pdf"
    with path.open("wb") as file:
        writer.write(file)
    return path


@pytest.fixture
def image_only_pdf(tmp_path: Path) -> Path:
    """A 'scanned' page: one picture and no text."""
    from fpdf import FPDF
    from PIL import Image

    picture = tmp_path / "scan.png"
    Image.new("RGB", (64, 64), (200, 180, 160)).save(picture)
    pdf = FPDF()
    pdf.add_page()
    pdf.image(str(picture), x=10, y=10, w=100)
    path = tmp_path / "scan.pdf"
    pdf.output(str(path))
    return path


@pytest.fixture
def binary_txt(tmp_path: Path) -> Path:
    path = tmp_path / "program.txt"
    path.write_bytes(bytes(range(256)) * 64)
    return path
