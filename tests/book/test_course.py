"""What an instructor or a maintainer meets around the book: the licence files, the repository setting
(no button while it is empty), one search box per page, the three editions (full, student, teaching
assistants') with their edition-specific text, the course pages, and the Makefile's ``lab`` and
``solutions`` targets."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, BookBuild

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import publishing  # noqa: E402
from student_edition import (  # noqa: E402
    SOLUTIONS_BANNER, build_overrides, edition, strip_only_blocks,
)

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())


# ---------------------------------------------------------------------------------------------
# licences
# ---------------------------------------------------------------------------------------------


def test_license_files_match_the_footer() -> None:
    footer = CONFIG["html"]["extra_footer"]
    assert "Code: MIT" in footer and "Text: CC BY 4.0" in footer and "Apache-2.0" in footer
    license_ = (ROOT / "LICENSE").read_text()
    assert "MIT License" in license_ and "Permission is hereby granted, free of charge" in license_
    assert "CC BY 4.0" in license_ and "https://creativecommons.org/licenses/by/4.0/" in license_
    assert "LICENSE-text" in license_ and "dptutor/data/LICENSE-Apache-2.0" in license_
    text = (ROOT / "LICENSE-text").read_text()
    assert "Creative Commons Attribution 4.0 International Public License" in text
    assert "Section 1 – Definitions." in text and "Section 8 – Interpretation." in text
    apache = (ROOT / "dptutor" / "data" / "LICENSE-Apache-2.0").read_text()
    assert "Apache License" in apache and "Version 2.0, January 2004" in apache
    assert "END OF TERMS AND CONDITIONS" in apache


def test_package_metadata_states_both_licences() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == {"text": "MIT AND Apache-2.0"}
    assert "data/LICENSE-Apache-2.0" in project["tool"]["setuptools"]["package-data"]["dptutor"]


def test_the_wheel_carries_the_licences(book_build: BookBuild) -> None:
    """The wheel that the book build offers ships the MIT licence and, next to the authors' data, the
    Apache licence that covers it."""
    assert book_build.returncode == 0, "the book did not build"
    (wheel,) = (book_build.html / "_sources").glob("dptutor-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "dptutor/data/LICENSE-Apache-2.0" in names and "dptutor/data/paper-results.json" in names
    assert any(n.endswith(".dist-info/LICENSE") for n in names), names
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    assert "License: MIT AND Apache-2.0" in zipfile.ZipFile(wheel).read(metadata).decode()


# ---------------------------------------------------------------------------------------------
# the repository setting and the search box
# ---------------------------------------------------------------------------------------------


def test_the_repository_is_a_setting_left_empty() -> None:
    """No placeholder: the address is empty until the maintainer sets it, and Jupyter Book's own button
    switch stays off (book/_ext/publishing.py turns the button on when there is an address)."""
    assert CONFIG["repository"]["url"] == ""
    assert CONFIG["html"]["use_repository_button"] is False
    assert "publishing" in CONFIG["sphinx"]["local_extensions"]
    for path in ("_config.yml", "README.md", "book/intro.md", "book/course.md", "book/publishing.md"):
        assert "github.com/OWNER" not in (ROOT / path).read_text(), path
    workflow = (ROOT / ".github" / "workflows" / "publish.yml").read_text()
    assert "DPTUTOR_REPOSITORY_URL: ${{ github.server_url }}/${{ github.repository }}" in workflow


@pytest.mark.parametrize("configured, env, expected", [
    ("", {}, ""),
    (None, {}, ""),
    ("  ", {}, ""),
    ("https://github.com/someone/dptutor", {}, "https://github.com/someone/dptutor"),
    ("https://github.com/someone/dptutor/", {}, "https://github.com/someone/dptutor"),
    ("", {"DPTUTOR_REPOSITORY_URL": "https://gitlab.com/a/b"}, "https://gitlab.com/a/b"),
    ("https://github.com/x/y", {"DPTUTOR_REPOSITORY_URL": "https://github.com/a/b"}, "https://github.com/a/b"),
    ("https://github.com/x/y", {"DPTUTOR_REPOSITORY_URL": ""}, "https://github.com/x/y"),
])
def test_repository_url(configured, env, expected) -> None:
    assert publishing.repository_url(configured, env) == expected


@pytest.mark.parametrize("configured, env, message", [
    ("https://github.com/OWNER/dptutor", {}, "placeholder OWNER"),
    ("", {"DPTUTOR_REPOSITORY_URL": "https://github.com/OWNER/dptutor"}, "DPTUTOR_REPOSITORY_URL still holds"),
    ("github.com/someone/dptutor", {}, "https://<host>/<owner>/<repository>"),
    ("http://github.com/someone/dptutor", {}, "repository: url is"),
    ("https://github.com/someone", {}, "expected"),
    ("https://github.com/a/b c", {}, "expected"),
    ("javascript:alert(1)//a/b", {}, "expected"),
    (["https://github.com/a/b"], {}, "must be a string"),
])
def test_repository_url_refuses_what_is_not_an_address(configured, env, message) -> None:
    from sphinx.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(message)):
        publishing.repository_url(configured, env)


def test_every_page_has_one_search_box_and_no_placeholder_link(book_build: BookBuild) -> None:
    """One search field (sphinx-book-theme's, at the top of the sidebar; its header button takes over on
    narrow screens, where the sidebar is folded), no top navigation bar holding a second one, and no
    repository button while the address is empty."""
    assert book_build.returncode == 0, "the book did not build"
    pages = [p for p in sorted(book_build.html.rglob("*.html"))
             if not p.relative_to(book_build.html).parts[0].startswith("_")]  # not _static's templates
    assert len(pages) > 15
    for page in pages:
        html = page.read_text()
        if 'http-equiv="Refresh"' in html:  # index.html: a redirect to the intro
            continue
        assert html.count('class="btn search-button-field') == 1, page
        assert "navbar-persistent" not in html, page
        assert "source-repository-button" not in html and "OWNER" not in html, page


# ---------------------------------------------------------------------------------------------
# editions
# ---------------------------------------------------------------------------------------------

ONLY_EXAMPLE = textwrap.dedent("""\
    a
    :::{only} not student_edition
    full text
    :::
    b
    ```{only} student_edition
    student text
    ```
    ::::{only} solutions_edition
    :::{note}
    nested
    :::
    ::::
    c
    """)


def test_strip_only_blocks() -> None:
    tags = {"student_edition"}

    def keep(expr: str) -> bool:
        return eval(expr, {}, {t: t in tags for t in ("student_edition", "solutions_edition", "full_edition")})

    assert strip_only_blocks(ONLY_EXAMPLE, keep) == "a\nb\n```{only} student_edition\nstudent text\n```\nc\n"
    tags = {"full_edition"}
    assert strip_only_blocks(ONLY_EXAMPLE, keep) == "a\n:::{only} not student_edition\nfull text\n:::\nb\nc\n"
    with pytest.raises(ValueError, match="never closed"):
        strip_only_blocks(":::{only} student_edition\ntext\n", lambda e: False)


def test_edition_from_the_settings() -> None:
    class C:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    assert edition(C()) == "full"
    assert edition(C(hide_solutions=True)) == "student"
    assert edition(C(dptutor_edition="solutions", hide_solutions=False)) == "solutions"
    with pytest.raises(ValueError, match="hide_solutions must be false"):
        edition(C(dptutor_edition="solutions", hide_solutions=True))
    with pytest.raises(ValueError, match="dptutor_edition must be one of"):
        edition(C(dptutor_edition="teacher"))


def test_solutions_build_renders_the_instructor_notebooks() -> None:
    """The solutions edition keeps the solutions and reads each assignment page from its instructor
    notebook; every assignment in the table of contents has one."""
    overrides = build_overrides(ROOT, ROOT / "_build" / ".jupyter_cache", "solutions")
    assert overrides["dptutor_edition"] == "solutions" and overrides["hide_solutions"] is False
    assert overrides["nitpicky"] is True
    assert build_overrides(ROOT, ROOT, "student")["hide_solutions"] is True
    with pytest.raises(ValueError, match="edition"):
        build_overrides(ROOT, ROOT, "full")
    part = next(p for p in TOC["parts"] if p["caption"] == "Assignments")
    pages = [s["file"] for s in part["chapters"][0]["sections"]]
    assert len(pages) == 6
    for page in pages:
        assert (ROOT / page.replace("book/assignments/", "book/assignments/instructor/")).with_suffix(".md").is_file()
    assert "book/assignments/instructor" in CONFIG["exclude_patterns"]


def _mini_project(root: Path) -> Path:
    """A three-page Sphinx project: edition-specific text, an assignment and its instructor notebook."""
    src = root / "src"
    (src / "book" / "assignments" / "instructor").mkdir(parents=True)
    (src / "conf.py").write_text(textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})
        extensions = ["myst_parser", "student_edition"]
        myst_enable_extensions = ["colon_fence"]
        exclude_patterns = ["book/assignments/instructor"]
        hide_solutions = False
        """))
    (src / "index.md").write_text(textwrap.dedent("""\
        # Home

        :::{only} not student_edition
        Solutions are folded: FULL-ONLY.
        :::

        :::{only} student_edition
        The solutions are left out: STUDENT-ONLY.
        :::

        ```{toctree}
        book/assignments/task
        ```
        """))
    (src / "book" / "assignments" / "task.md").write_text("(task)=\n# Task\n\nBLANK-TEMPLATE\n")
    (src / "book" / "assignments" / "instructor" / "task.md").write_text("(task)=\n# Task\n\nREFERENCE-SOLUTION\n")
    return src


@pytest.mark.parametrize("name, settings, shown, hidden", [
    ("full", [], ["FULL-ONLY", "BLANK-TEMPLATE"], ["STUDENT-ONLY", "REFERENCE-SOLUTION"]),
    ("student", ["-D", "hide_solutions=1"], ["STUDENT-ONLY", "BLANK-TEMPLATE"], ["FULL-ONLY", "REFERENCE-SOLUTION"]),
    ("solutions", ["-D", "dptutor_edition=solutions"], ["FULL-ONLY", "REFERENCE-SOLUTION", SOLUTIONS_BANNER[:40]],
     ["STUDENT-ONLY", "BLANK-TEMPLATE"]),
])
def test_each_edition_shows_its_own_text(tmp_path: Path, name, settings, shown, hidden) -> None:
    src = _mini_project(tmp_path)
    if name == "solutions":  # the banner is an announcement of the book theme
        with (src / "conf.py").open("a") as conf:
            conf.write('html_theme = "sphinx_book_theme"\n')
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "-n", "-q", *settings, str(src), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    pages = {p: p.read_text() for p in out.rglob("*.html")}
    sources = {p: p.read_text() for p in (out / "_sources").rglob("*.txt")}
    text = "\n".join(pages.values())
    for word in shown:
        assert word in text, (name, word)
    for word in hidden:
        assert word not in text and not any(word in s for s in sources.values()), (name, word)


# ---------------------------------------------------------------------------------------------
# the course pages
# ---------------------------------------------------------------------------------------------

CHAPTERS = [c["file"] for p in TOC["parts"] if p["caption"].startswith("Part") for c in p["chapters"]]


def test_course_pages_are_in_the_toc() -> None:
    part = next(p for p in TOC["parts"] if p["caption"] == "For instructors")
    assert [c["file"] for c in part["chapters"]] == ["book/course", "book/outlines", "book/instructors/setup",
                                                     "book/instructors/grading", "book/instructors/gradescope",
                                                     "book/instructors/threat_model", "book/instructors/full_scale"]
    captions = [p["caption"] for p in TOC["parts"]]
    assert captions.index("For instructors") == captions.index("Assignments") + 1


def test_schedule_covers_every_chapter_and_assignment() -> None:
    course = (ROOT / "book" / "course.md").read_text()
    schedule = course[course.index("## A four-week schedule"):]
    rows = [line for line in schedule.splitlines() if re.match(r"\| [1-4]\. ", line)]
    assert len(rows) == 4
    table = "\n".join(rows)
    for chapter in CHAPTERS + ["book/conclusion"]:
        assert f"{{doc}}`{Path(chapter).name}`" in table, chapter
    for assignment in ("sampler", "mechanism", "audit", "pair_audit", "selection"):
        assert f"{{doc}}`assignments/{assignment}`" in table, assignment
    assert "{doc}`assignments/bughunt`" in schedule.split("\n\n**Why")[0]  # its own row, optional, with week 4
    for heading in ("## Prerequisites", "## Learning outcomes"):
        assert heading in course


def test_every_chapter_has_an_outline() -> None:
    outlines = (ROOT / "book" / "outlines.md").read_text()
    sections = re.split(r"^## ", outlines, flags=re.M)[1:]
    linked = [re.search(r"Chapter: (\{doc\}`(\w+)`|`(\w+)\.md`)", s) for s in sections]
    names = [m.group(2) or m.group(3) for m in linked if m]
    expected = sorted({Path(c).name for c in CHAPTERS + ["book/conclusion"]})
    assert sorted(names) == sorted(expected)
    for section in sections:
        for part in ("**Plan.**", "**Key ideas.**", "**Live cell.**", "**Ask.**", "**Misconceptions.**"):
            assert part in section, (section.splitlines()[0], part)
        minutes = [int(m) for m in re.findall(r"\((\d+) min\)", section.split("**Key ideas.**")[0])]
        assert sum(minutes) == 45, (section.splitlines()[0], minutes)


def test_each_live_cell_names_a_section_of_its_chapter() -> None:
    outlines = (ROOT / "book" / "outlines.md").read_text()
    for section in re.split(r"^## ", outlines, flags=re.M)[1:]:
        chapter = re.search(r"Chapter: \{doc\}`(\w+)`", section)
        if not chapter:
            continue  # a chapter being written
        cell = re.search(r'\*\*Live cell\.\*\* "([^"]+)"', section)
        assert cell, section.splitlines()[0]
        headings = re.findall(r"^## (.+)$", (ROOT / "book" / f"{chapter.group(1)}.md").read_text(), flags=re.M)
        assert cell.group(1) in headings, (chapter.group(1), cell.group(1))


def test_staff_notes_are_in_the_full_edition_only(book_build: BookBuild, student_build: BookBuild) -> None:
    assert student_build.returncode == 0, student_build.log[-4000:]
    marker = "For the course staff."
    full = (book_build.html / "book" / "outlines.html").read_text()
    student = (student_build.html / "book" / "outlines.html").read_text()
    assert full.count(marker) == 2 and marker not in student
    source = (student_build.html / "_sources" / "book" / "outlines.md").read_text()
    assert marker not in source and "{only} not student_edition" not in source


def test_solutions_edition_shows_the_reference_solutions(solutions_build: BookBuild) -> None:
    from test_student_edition import normalise, notebook_text, page_text, reference_solution_lines

    assert solutions_build.returncode == 0, solutions_build.log[-6000:]
    site = solutions_build.html
    pages = {name: page_text(site / "book" / "assignments" / f"{name}.html")
             for name in ("sampler", "mechanism", "audit", "pair_audit", "selection", "bughunt")}
    for name, text in reference_solution_lines():
        stem = Path(name).stem
        assert text in pages[stem], (name, text)
        source = (site / "_sources" / "book" / "assignments" / f"{stem}.md").read_text()
        assert "BEGIN SOLUTION" in source, stem
    assert SOLUTIONS_BANNER[:40] in (site / "book" / "intro.html").read_text()
    # Nothing of it reaches the executed notebooks that the full and the student edition offer.
    shared = solutions_build.html.parents[1] / "jupyter_execute" / "book" / "assignments"
    assert shared.is_dir()
    for name, text in reference_solution_lines():
        notebook = json.loads((shared / f"{Path(name).stem}.ipynb").read_text())
        assert text not in normalise(notebook_text(notebook)), name
    assert 'class="solution' in (site / "book" / "laplace_mechanism.html").read_text()


# ---------------------------------------------------------------------------------------------
# Makefile targets
# ---------------------------------------------------------------------------------------------


def _make_n(*args: str) -> str:
    proc = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_solutions_runs_the_edition_script() -> None:
    out = _make_n("solutions")
    assert ("book/_ext/student_edition.py --edition solutions --out _build/solutions/html "
            "--cache _build/.jupyter_cache") in out


def test_solutions_edition_refuses_a_build_folder_shared_with_the_other_editions(tmp_path: Path) -> None:
    """The executed instructor notebooks go to the jupyter_execute folder beside <out>: beside _build/html or
    _build/student they would become those editions' notebook downloads."""
    from student_edition import build

    (tmp_path / "html").mkdir()
    assert build(ROOT, tmp_path / "solutions", tmp_path / "cache", edition="solutions") == 2


def test_make_lab_passes_flags_and_allows_root() -> None:
    out = _make_n("lab", "LAB_ARGS=--port 8899 --no-browser")
    line = next(l for l in out.splitlines() if "jupyter lab" in l)
    assert line.endswith("--port 8899 --no-browser"), line
    assert "--notebook-dir=book/assignments" in line
    assert ("--allow-root" in line) == (os.geteuid() == 0), line
