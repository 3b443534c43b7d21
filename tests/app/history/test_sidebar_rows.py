"""The sidebar's rows as plain data (app/history/sidebar_rows.py): no window, no history thread."""

from __future__ import annotations

from app.history.records import Chat, Folder
from app.history.sidebar_rows import ChatRow, FolderRow, HeaderRow, Row, arrange, matching

WORK = Folder("f-work", "Work")
HOME = Folder("f-home", "Home", position=1, collapsed=True)
PINNED = Chat("c-pinned", "Pinned plan", 0, 3, pinned=True, folder_id=WORK.id)  # pinned wins over its folder
REPORT = Chat("c-report", "Quarterly report", 0, 2, folder_id=WORK.id)
GARDEN = Chat("c-garden", "Garden beds", 0, 1, folder_id=HOME.id)
LOOSE = Chat("c-loose", "Loose ends", 0, 0, folder_id="f-gone")  # a folder that no longer exists
CHATS = [PINNED, REPORT, GARDEN, LOOSE]


def _shown(rows: list[Row]) -> list[str]:
    def one(row: Row) -> str:
        if isinstance(row, HeaderRow):
            return f"# {row.title}"
        if isinstance(row, FolderRow):
            return f"{'v' if row.unfolded else '>'} {row.folder.name} {row.count}"
        assert isinstance(row, ChatRow)
        return f"{row.chat.id}@{row.folder_id}"
    return [one(row) for row in rows]


def test_pinned_first_then_each_folder_then_the_rest_and_a_folded_folder_hides_its_chats() -> None:
    assert _shown(arrange(CHATS, [WORK, HOME], searching=False, within=None)) == [
        "# Pinned", "c-pinned@None", "v Work 1", "c-report@f-work", "> Home 1", "# Recent", "c-loose@None"]


def test_a_search_keeps_matching_chats_and_shows_only_their_folders_unfolded() -> None:
    kept = matching(CHATS, {"c-garden": "…tomatoes…"}, "garden", within=None)
    assert kept == [GARDEN]
    assert _shown(arrange(kept, [WORK, HOME], searching=True, within=None)) == ["v Home 1", "c-garden@f-home"]
    assert matching(CHATS, {}, "REPORT quarterly", within=None) == [REPORT]  # every word, in any case
    assert _shown(arrange([], [WORK, HOME], searching=True, within=None)) == ["# Nothing found."]


def test_a_search_kept_to_one_folder_lists_that_folder_alone() -> None:
    kept = matching(CHATS, {}, "", within=HOME.id)
    assert kept == [GARDEN]
    assert _shown(arrange(kept, [WORK, HOME], searching=False, within=HOME.id)) == ["v Home 1", "c-garden@f-home"]


def test_without_folders_or_pins_there_is_no_header_and_an_empty_list_says_so() -> None:
    plain = [Chat("a", "A", 0, 1), Chat("b", "B", 0, 0)]
    assert _shown(arrange(plain, [], searching=False, within=None)) == ["a@None", "b@None"]
    assert _shown(arrange([], [], searching=False, within=None)) == ["# No chats yet."]
