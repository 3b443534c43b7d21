"""The speculative case of `python -m engine.bench`: the same turns with drafts off and on.

Two workloads: `chat` (the story prompts of the other cases: open-ended text,
where drafts rarely help and must not hurt) and `edit` (a ~600-token passage
and "repeat it exactly, changing only X", where most of the answer is in the
prompt). Each tab count runs off, then on, in the same run. Every prompt is
read into its chat's cache by a one-token turn first, so the timed turns
compare decoding, the only part drafts change; the timed turn reuses all of
its prompt but the last token.

With `--draft-model` the model is loaded with that draft model beside it, and each row also says the
draft model's share of the drafts accepted and of the decoding time (its `busy_seconds`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from engine.bench.harness import Bench, decode_timed
from engine.bench.workloads import story_request
from engine.protocol import ChatMessage, SamplingParams, Submit
from engine.runners.base import drafter_of

WORKLOADS = ("chat", "edit")
EDIT_PASSAGE = """\
The lighthouse at Gull Point was built in 1871 from granite quarried on the island itself. It stands
forty-two metres tall, and its lamp could once be seen from thirty kilometres out at sea. For most of
its life the light was kept by one family, the Marrows, who lived in the small stone cottage at the
foot of the tower and rowed to the mainland once a week for bread, oil and letters.

Every evening, an hour before sunset, the keeper climbed the one hundred and sixty steps of the spiral
stair, trimmed the wick, polished the great glass lens and wound the clockwork that turned it. Through
the night he returned every four hours to wind it again and to write in the logbook: the time, the
weather, the state of the sea and the ships that passed. In fog he rang the bell by hand, once every
thirty seconds, sometimes until morning.

The logbooks survive, eighty-three of them, bound in green cloth and kept in the harbour museum. They
record storms that tore slates from the cottage roof, a winter when the bay froze so hard that the
keeper walked to the mainland across the ice, and the night in 1903 when the steamer Alder ran onto
the reef below the tower. The keeper and his two sons rowed out through the surf and brought all
nineteen of her crew ashore; the ship's bell still hangs above the cottage door.

In 1958 the lamp was fitted with an electric bulb and an automatic switch, and the last keeper, Thomas
Marrow, left the island. For twenty years nobody lived there. The cottage windows were boarded up, the
garden went wild, and gulls nested on the gallery rail. Then a group of volunteers from the town
began to repair the buildings, one summer at a time. They replaced the roof, painted the tower white
again and rebuilt the jetty so that visitors could land.

Today the light is still working, though it is managed from a control room two hundred kilometres
away. On open days, the volunteers take small groups up the stair to the lamp room, where the old lens
still turns. From the gallery you can see the whole bay: the harbour, the reef, the fishing boats
and, on a clear day, the blue line of the far coast. Most visitors stay longer than they planned."""
EDIT_CHANGES = (("keeper", "warden"), ("island", "isle"), ("volunteers", "helpers"), ("harbour", "port"))


def edit_request(chat_id: str, tab: int, max_tokens: int) -> Submit:
    old, new = EDIT_CHANGES[tab % len(EDIT_CHANGES)]
    question = f"Repeat the following text exactly, changing only the word '{old}' to '{new}'.\n\n{EDIT_PASSAGE}"
    return Submit(chat_id, (ChatMessage("user", question),), SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=max_tokens))


def _request(workload: str, chat_id: str, tab: int, max_tokens: int) -> Submit:
    return edit_request(chat_id, tab, max_tokens) if workload == "edit" else story_request(chat_id, tab, max_tokens)


def run_speculative(bench: Bench, workload: str, tabs: int, max_tokens: int, on_first: bool = False) -> dict[str, Any]:
    """Aggregate decode tokens/s with drafts off and on, the share of drafted tokens accepted (in all, and of
    the row's source), and the draft model's share of the time drafts were on.

    Repeats alternate which half runs first: with no draft at all, the second half came out
    1.08x to 1.15x of the first in three runs on this VM."""
    drafting = draft_model_seconds(bench)
    source = "draft" if drafting is not None else "lookup"
    result: dict[str, Any] = {"tabs": tabs, "workload": workload,
                              "source": "draft model" if drafting is not None else "prompt lookup and pool"}
    for mode in (("auto", "off") if on_first else ("off", "auto")):
        requests = [_request(workload, f"spec-{mode}-{tabs}-{i}", i, max_tokens) for i in range(tabs)]
        requests = [replace(r, sampling=replace(r.sampling, speculative=mode)) for r in requests]
        before = drafting() if drafting is not None else 0.0
        elapsed, turns = decode_timed(bench, requests)
        stats = [t.finished.stats for t in turns if t.finished]
        result["on_tok_s" if mode == "auto" else "off_tok_s"] = sum(s.generated_tokens for s in stats) / elapsed
        if mode == "auto":
            drafted = sum(s.drafted_tokens for s in stats)
            result["acceptance"] = sum(s.accepted_tokens for s in stats) / drafted if drafted else 0.0
            result["drafted_tokens"] = drafted
            counts = [(d, a) for s in stats for name, d, a in s.drafts_by_source if name == source or source == "lookup"]
            from_source = sum(d for d, _ in counts)
            result["accepted_fraction"] = sum(a for _, a in counts) / from_source if from_source else 0.0
            # the one-token turns that read the prompts are outside `elapsed`, and the draft model reads them too
            result["draft_ms_share"] = (drafting() - before) / elapsed if drafting is not None else 0.0
    return result


def draft_model_seconds(bench: Bench) -> Callable[[], float] | None:
    """The draft model's time spent drafting so far, read between turns; None without a draft model."""
    model = bench.loop.pool.last()
    drafter = drafter_of(model.runner) if model is not None else None
    if drafter is None:
        return None
    return lambda: float(getattr(drafter, "busy_seconds", 0.0))
