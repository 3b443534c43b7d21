"""The documents tests' real files (a 300-page PDF, a Markdown file, a binary .txt) and the tiny LLaVA
for the window's tests too."""

from tests.engine.conftest import vision_model
from tests.engine.documents.conftest import binary_txt, long_pdf, markdown_file

__all__ = ["binary_txt", "long_pdf", "markdown_file", "vision_model"]
