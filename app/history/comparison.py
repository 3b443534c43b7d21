"""A comparison (Compare…) as one stored chat: one branch per model below the shared first question.

The chat's settings carry the marker: {"compare": {"panes": [{"model": path, "name": name, "answer": id}]}},
the panes in their order left to right, each with the id of its first answer. The messages are an ordinary
branch tree: the question is the root, each pane's first answer is one of its children (one alternative
per model, created in pane order) and a follow-up continues below that pane's last answer. So a
comparison needs no table of its own: search finds every pane's answers, the export's "hearth" tree
holds them all, and a Hearth without this module still opens it as a chat with "< 1/3 >" on the answer.
An import renumbers the ids: a pane whose first answer id is unknown takes its place among the children.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.history.records import ChatSnapshot, StoredMessage, children_of

COMPARE = "compare"


@dataclass(frozen=True)
class StoredPane:
    """One pane of a stored comparison: its model and its own conversation, question first."""

    model: str
    name: str
    messages: tuple[StoredMessage, ...]


def compare_settings(panes: list[dict[str, str]]) -> dict[str, Any]:
    """The chat settings' marker for these panes ({"model", "name", "answer"} each)."""
    return {COMPARE: {"panes": [dict(pane) for pane in panes]}}


def is_comparison(settings: dict[str, Any]) -> bool:
    marker = settings.get(COMPARE)
    return isinstance(marker, dict) and isinstance(marker.get("panes"), list) and bool(marker["panes"])


def stored_panes(snapshot: ChatSnapshot) -> list[StoredPane]:
    """Each pane's conversation: the question, its first answer and each later turn down its branch."""
    described = [pane for pane in snapshot.chat.settings.get(COMPARE, {}).get("panes", []) if isinstance(pane, dict)]
    children = children_of(snapshot.messages)
    roots = children.get(None, [])
    if not roots:
        return [StoredPane(str(p.get("model", "")), str(p.get("name", "")), ()) for p in described]
    question = roots[0]
    answers = children.get(question.id, [])
    by_id = {answer.id: answer for answer in answers}
    panes = []
    for index, pane in enumerate(described):
        first = by_id.get(str(pane.get("answer", ""))) or (answers[index] if index < len(answers) else None)
        branch = [question] + (_down_from(first, children) if first is not None else [])
        panes.append(StoredPane(str(pane.get("model", "")), str(pane.get("name", "")), tuple(branch)))
    return panes


def _down_from(message: StoredMessage, children: dict[str | None, list[StoredMessage]]) -> list[StoredMessage]:
    """`message` and below it its newest child at each level (a pane's branch does not fork)."""
    branch = [message]
    while children.get(branch[-1].id):
        branch.append(children[branch[-1].id][-1])
    return branch


def exported_panes(snapshot: ChatSnapshot) -> list[dict[str, Any]]:
    """The export's "compare" list: each pane's model and its messages as role/content pairs."""
    return [{"model": pane.model, "name": pane.name,
             "messages": [{"role": m.role, "content": m.text} for m in pane.messages]}
            for pane in stored_panes(snapshot)]


def comparison_markdown(snapshot: ChatSnapshot) -> list[str]:
    """The Markdown export's body for a comparison: each pane under its model's name."""
    lines: list[str] = []
    for pane in stored_panes(snapshot):
        lines += [f"## {pane.name or pane.model}", "", f"Model: `{pane.model}`", ""]
        for message in pane.messages:
            lines += [f"### {'You' if message.role == 'user' else 'Answer'}", "", message.text.rstrip(), ""]
            if message.state != "complete":
                lines += [f"*({message.state})*", ""]
    return lines
