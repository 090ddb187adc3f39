"""Recall arithmetic of `dgrag eval`: page, passage and section gold, and the pairing."""
from dgrag.evaluation.recall import _paired, recall_at, section_recall_at


def item(path, bc):
    return {"source_path": path, "breadcrumb": bc}


def test_page_recall_counts_distinct_pages_in_the_first_k():
    items = [item("a.md", "A"), item("a.md", "A / x"), item("b.md", "B"), item("c.md", "C")]
    assert recall_at(items, "gold_paths", {"b.md", "c.md"}, 2) == 0.5
    assert recall_at(items, "gold_paths", {"b.md", "c.md"}, 3) == 1.0


def test_section_recall_takes_a_sub_section_for_its_parent_on_the_gold_page_only():
    q = {"gold_paths": ["a.md", "b.md"], "gold_sections": ["A / Usage", "B / Params"]}
    items = [item("z.md", "A / Usage"),            # right breadcrumb, wrong page
             item("a.md", "A / Usage / Example"),  # a sub-section of gold 1
             item("a.md", "A / Usagex"),           # a prefix but not a sub-section
             item("b.md", "B / Params")]
    assert section_recall_at(items, q, 1) == 0.0
    assert section_recall_at(items, q, 2) == 0.5
    assert section_recall_at(items, q, 3) == 0.5
    assert section_recall_at(items, q, 4) == 1.0
    assert section_recall_at(items, {"gold_paths": ["a.md"]}, 4) is None


def test_pairs_count_better_worse_and_equal_against_the_first_method():
    per_q = {"dense": {"5": [1.0, 0.5, 0.0, 1.0]}, "diffusion": {"5": [1.0, 1.0, 0.0, 0.5]}}
    out = _paired(per_q, ["dense", "diffusion"], [5])
    assert out == {"diffusion_vs_dense": {"5": {"better": 1, "worse": 1, "equal": 2}}}
