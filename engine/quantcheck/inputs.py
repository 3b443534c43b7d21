"""What both models are asked: the reference text and the questions.

The built-in text and the 30 questions ship in resources/quantcheck/ (see
SOURCES.md there). A user's own questions come as a text file with one
question a line, or JSON Lines with `prompt`, optional `kind` and optional
`expected` (the answers that count as right). In a plain file a question that
mentions JSON is checked for a JSON answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.quantcheck.errors import InputError

QuestionKind = Literal["fact", "arithmetic", "reasoning", "instruction", "json", "question"]
KINDS: tuple[str, ...] = ("fact", "arithmetic", "reasoning", "instruction", "json", "question")
HARD_KINDS = ("arithmetic", "reasoning")  # the seed's "hard reasoning"
FEWEST_QUESTIONS, MOST_QUESTIONS = 20, 50


@dataclass(frozen=True)
class Question:
    prompt: str
    kind: QuestionKind = "question"
    expected: tuple[str, ...] = ()  # any of these, case-insensitive, makes an answer right

    @property
    def wants_json(self) -> bool:
        return self.kind == "json"

    @property
    def hard(self) -> bool:
        return self.kind in HARD_KINDS


def builtin_text() -> str:
    import resources

    return resources.resource_path("quantcheck/reference_text.txt").read_text(encoding="utf-8")


def builtin_questions() -> tuple[Question, ...]:
    import resources

    path = resources.resource_path("quantcheck/questions.jsonl")
    return _parse_jsonl(path, path.read_text(encoding="utf-8"))


def read_text(path: str | Path) -> str:
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"The text file {file} cannot be read ({error}). Give a UTF-8 text file.") from error
    if not text.strip():
        raise InputError(f"The text file {file} is empty.")
    return text


def read_questions(path: str | Path, check_count: bool = True) -> tuple[Question, ...]:
    """A user's questions; 20-50 of them unless `check_count` is off (tests, --limit)."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"The questions file {file} cannot be read ({error}).") from error
    lines = [line for line in text.splitlines() if line.strip()]
    jsonl = bool(lines) and all(line.lstrip().startswith("{") for line in lines)
    questions = _parse_jsonl(file, text) if jsonl else tuple(_plain(line.strip()) for line in lines)
    if check_count and not FEWEST_QUESTIONS <= len(questions) <= MOST_QUESTIONS:
        raise InputError(
            f"{file} has {len(questions)} questions; give {FEWEST_QUESTIONS} to {MOST_QUESTIONS} "
            "(one a line, or JSON Lines with a \"prompt\" each) so the share of same answers means something."
        )
    return questions


def _plain(line: str) -> Question:
    return Question(line, "json" if "json" in line.lower() else "question")


def _parse_jsonl(file: Path, text: str) -> tuple[Question, ...]:
    questions = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{file}, line {number}: not valid JSON ({error.msg}).") from error
        questions.append(_question(file, number, item))
    return tuple(questions)


def _question(file: Path, number: int, item: object) -> Question:
    where = f"{file}, line {number}"
    if not isinstance(item, dict) or not isinstance(item.get("prompt"), str) or not item["prompt"].strip():
        raise InputError(f"{where}: each line needs a \"prompt\" with the question's text.")
    kind = item.get("kind", "json" if item.get("json") is True else "question")
    if kind not in KINDS:
        raise InputError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}.")
    expected = item.get("expected", ())
    if isinstance(expected, str):
        expected = (expected,)
    if not isinstance(expected, (list, tuple)) or not all(isinstance(e, str) for e in expected):
        raise InputError(f"{where}: \"expected\" must be a text or a list of texts.")
    return Question(item["prompt"].strip(), kind, tuple(expected))
