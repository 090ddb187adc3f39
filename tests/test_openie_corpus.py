"""The offline OpenIE's corpus-level rules on small hand-made inputs: relations between the named
things of one sentence, and stop-entities learned from document frequency."""
from __future__ import annotations

from dgrag.config import Settings
from dgrag.enrich import heuristic_openie
from dgrag.enrich.heuristic_openie import clause_relation, extract
from dgrag.enrich.openie_packs import lexicon
from dgrag.enrich.steps import offline_openie_for_corpus, stop_entities


LAKE = "Lake Zurich\nIt lies between Zurich and Rapperswil. The Linth flows into it from Glarus."


def test_named_things_of_one_sentence_relate_to_each_other_not_only_to_the_topic():
    ents, triples = extract(LAKE, "Lake Zurich", "en")
    assert [e for e, _ in ents] == ["Lake Zurich", "Zurich", "Rapperswil", "Linth", "Glarus"]
    assert triples == [
        ("Linth", "flows into it from", "Glarus"),      # neighbours with a short clause between them
        ("Lake Zurich", "mentions", "Zurich"),          # the topic's links (topic_star), before ...
        ("Lake Zurich", "mentions", "Rapperswil"),
        ("Lake Zurich", "mentions", "Linth"),
        ("Lake Zurich", "mentions", "Glarus"),
        ("Lake Zurich", "lies between", "Zurich"),      # ... the co-occurrences: "It ..." speaks of the topic
        ("Zurich", "appears with", "Rapperswil"),       # " and " says nothing
        ("Lake Zurich", "appears with", "Rapperswil"),  # one further on in the sentence
    ]


def test_without_the_topic_star_only_unrelated_names_keep_a_topic_link():
    no_star = lexicon((), topic_star=False)
    _, triples = extract(LAKE, "Lake Zurich", "en", None, no_star)
    assert triples == [
        ("Linth", "flows into it from", "Glarus"),
        ("Lake Zurich", "lies between", "Zurich"),
        ("Zurich", "appears with", "Rapperswil"),
        ("Lake Zurich", "appears with", "Rapperswil"),
    ]
    _, triples = extract("Lake Zurich\nThe lake is popular. Boats reach Rapperswil.", "Lake Zurich", "en", None, no_star)
    assert triples == [("Lake Zurich", "mentions", "Rapperswil")]


def test_clause_relation_is_the_last_short_clause_between_two_names():
    assert clause_relation(" was born in ") == "was born in"
    assert clause_relation(", the capital of ") == "the capital of"
    assert clause_relation(" and ") is None                      # no content word
    assert clause_relation(" is a peer-reviewed journal published monthly by the ") == \
        "journal published monthly by the"                       # its last five words
    assert clause_relation("位于") == "位于"


def test_stop_entities_count_pages_not_sections():
    chunks = [("a.md", ["ArkUI-X", "router"]), ("a.md", ["router", "ArkUI-X"]), ("a.md", ["router"]),
              ("b.md", ["ArkUI-X", "Toast"]), ("c.md", ["ArkUI-X"]), ("d.md", ["iOS"])]
    # 4 pages: ArkUI-X on 3, router on 1 (in three of its sections), Toast and iOS on 1
    assert stop_entities(chunks, share=0.5, min_docs=2) == {"arkui-x"}
    assert stop_entities(chunks, share=0.5, min_docs=4) == set()      # the floor wins on a small corpus
    assert stop_entities(chunks, share=0.2, min_docs=1) == {"arkui-x", "router", "toast", "ios"}
    assert stop_entities(chunks, share=0, min_docs=1) == set()        # turned off
    # a name with a page of its own is where links lead: never a stop-entity
    assert stop_entities(chunks, share=0.5, min_docs=2, titles=["ArkUI-X"]) == set()


def test_the_offline_step_drops_stop_entities_before_its_caps():
    nodes = [{"rowid": i, "source_path": f"p{i}.md", "breadcrumb": f"Page {i}", "language": "en", "text": "",
              "meta": {}, "prose": f"Page {i}\nThe Kestrel app runs on Android and talks to Server{i} daily."}
             for i in range(4)]
    settings = Settings(openie_stop_entity_share=0.5, openie_stop_entity_min_docs=2)
    one = offline_openie_for_corpus(nodes, settings)
    res = one(nodes[1])
    names = [e for e, _ in res["entities"]]
    assert "Android" not in names and "Kestrel" not in names     # on all four pages
    assert "Server1" in names
    assert all("Android" not in (h, t) for h, _, t in res["triples"])
    off = offline_openie_for_corpus(nodes, Settings(openie_stop_entity_share=0))(nodes[1])
    assert "Android" in [e for e, _ in off["entities"]]


def test_a_second_slice_extracts_only_what_it_answers_and_changed_chunks(monkeypatch):
    """The first start's build runs the step a slice at a time over one corpus: the stop-entities
    come from the names remembered for unchanged chunks, and the results are a fresh run's."""
    nodes = [{"rowid": 100 + i, "source_path": f"q{i}.md", "breadcrumb": f"Quay {i}", "language": "en",
              "text": "", "meta": {}, "prose": f"Quay {i}\nThe Osprey tool builds for Harmony and ships Crate{i} weekly."}
             for i in range(6)]
    settings = Settings(openie_stop_entity_share=0.5, openie_stop_entity_min_docs=2)
    first = offline_openie_for_corpus(nodes, settings)
    want = [first(n) for n in nodes]
    calls = []
    real = heuristic_openie.extract
    monkeypatch.setattr(heuristic_openie, "extract", lambda *a: calls.append(a[1]) or real(*a))
    again = offline_openie_for_corpus(nodes, settings)
    assert calls == []  # every chunk's names remembered
    assert again(nodes[2]) == want[2] and calls == ["Quay 2"]  # the slice's own chunk, extracted to answer
    edited = [*nodes[:5], {**nodes[5], "prose": "Quay 5\nThe Osprey tool now ships Crate5 daily."}]
    calls.clear()
    offline_openie_for_corpus(edited, settings)
    assert calls == ["Quay 5"]  # changed text: extracted again
    assert "Harmony" not in [e for e, _ in want[0]["entities"]]  # the stop-entities held throughout
