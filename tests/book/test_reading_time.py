"""Reading paths and chapters a reader can hold: the counts behind each chapter's reading time, the
prerequisites of ``book/_data/reading.yml`` and the limits of the developers' guide (sources only, fast).

The built pages' headers are checked in ``test_editorial.py`` (they need the book build).
"""
from __future__ import annotations

import importlib.util
import sys

import pytest
import yaml

from helpers import ROOT, numbered_chapters, toc_documents

_spec = importlib.util.spec_from_file_location("reading_time", ROOT / "book" / "_ext" / "reading_time.py")
reading_time = importlib.util.module_from_spec(_spec)
sys.modules["reading_time"] = reading_time
_spec.loader.exec_module(reading_time)

#: The paper's story must fit an afternoon and an evening: at most six hours by the build's estimate.
PAPER_PATH_MINUTES = 6 * 60


SAMPLE = """---
jupytext:
  text_representation:
    extension: .md
---

(sample)=
# A title of three

Five words of plain prose, with $x = 1$ math inline and a {ref}`shown text <some-label>` link.

```{code-cell} ipython3
print("these words are code, not prose")
```

$$
a + b = c
$$ (eq-label)

```{exercise-start} A titled exercise
:label: ex-one
```
Prove it now.
```{exercise-end}
```

```{exercise} Another
:label: ex-two
Do it.
```
"""


def test_count_separates_prose_code_math_and_exercises() -> None:
    c = reading_time.count(SAMPLE)
    # "A title of three" (4) + "Five words ... link." (14, the inline math one word, the role its text)
    # + the two exercise titles (3 + 1) and bodies ("Prove it now." 3, "Do it." 2)
    assert c.prose_words == 4 + 14 + 4 + 5, c
    assert (c.equations, c.code_cells, c.exercises) == (1, 1, 2)


def test_minutes_follow_the_one_formula() -> None:
    c = reading_time.Counts(prose_words=1300, equations=4, code_cells=8, exercises=5)
    raw = (1300 / reading_time.WORDS_PER_MINUTE + 4 * reading_time.MINUTES_PER_EQUATION
           + 8 * reading_time.MINUTES_PER_CELL
           + reading_time.EXERCISES_WORKED * reading_time.MINUTES_PER_EXERCISE)
    assert c.minutes >= raw and c.minutes - raw < 5 and c.minutes % 5 == 0
    # More prose never reads faster.
    assert reading_time.Counts(1400, 4, 8, 5).minutes >= c.minutes


@pytest.mark.parametrize("doc", toc_documents())
def test_no_chapter_exceeds_the_prose_limit(doc: str) -> None:
    words = reading_time.chapter_counts(doc).prose_words
    assert words <= reading_time.MAX_PROSE_WORDS, f"{doc}: {words} words of prose (limit {reading_time.MAX_PROSE_WORDS})"


def test_every_numbered_chapter_has_prerequisites_that_come_before_it() -> None:
    data = reading_time.load_reading_data()
    order = toc_documents()
    chapters = numbered_chapters()
    missing = [c for c in chapters if c not in data["prerequisites"]]
    assert not missing, f"chapters without an entry in book/_data/reading.yml: {missing}"
    for doc, prereqs in data["prerequisites"].items():
        assert doc in order, f"reading.yml names {doc}, which is not in _toc.yml"
        for p in prereqs:
            assert p in order, f"{doc}: prerequisite {p} is not in _toc.yml"
            assert order.index(p) < order.index(doc), f"{doc} lists {p}, which comes after it"
    # Part I uses nothing taught later: its prerequisites stay within Part I.
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    part1 = [c["file"] for c in toc["parts"][0]["chapters"]]
    for doc in part1:
        assert set(data["prerequisites"][doc]) <= set(part1), doc


def test_reading_paths_exist_and_the_papers_story_fits_six_hours() -> None:
    data = reading_time.load_reading_data()
    order = toc_documents()
    names = [p["name"] for p in data["paths"]]
    assert names == ["paper", "course", "practitioner"]
    for p in data["paths"]:
        assert p["chapters"] and all(c in order for c in p["chapters"]), p["name"]
    paper = next(p for p in data["paths"] if p["name"] == "paper")
    minutes = reading_time.path_minutes(paper["chapters"])
    assert minutes <= PAPER_PATH_MINUTES, f"the paper's story takes {minutes} min"
    # Every chapter the paper's story needs, other than the probability review, is on the path.
    for doc in paper["chapters"]:
        for p in data["prerequisites"][doc]:
            assert p in paper["chapters"] or p == "book/probability", f"{doc} needs {p}, not on the path"


def test_loader_refuses_a_malformed_file(tmp_path) -> None:
    bad = tmp_path / "reading.yml"
    bad.write_text("prerequisites: {}\n")
    with pytest.raises(ValueError, match="two keys"):
        reading_time.load_reading_data(bad)
    bad.write_text("prerequisites: {}\npaths:\n  - name: x\n    title: y\n")
    with pytest.raises(ValueError, match="name, title, summary and chapters"):
        reading_time.load_reading_data(bad)
