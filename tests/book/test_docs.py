"""The documentation where readers look for it: a short README, the instructor manual in the book, every
measured number in benchmarks/README.md, and the examples run as written.

- README.md fits on a screen (at most 120 lines), states no measured number, and links to what it names.
- Every command of the former 689-line README (listed below, literally, as it was before the move) is still
  documented: some page of the new documentation holds the command together with each of its options.
- Every ``python -m dptutor`` command the documentation names exists.
- benchmarks/README.md gives each measurement a section with its date and its command.
- The instructor pages keep the course folder outside the clone, and their "Making the course folder" block,
  run as written, makes a course folder whose own ``.gitignore`` keeps it out of any repository.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
README = ROOT / "README.md"
BENCHMARKS = ROOT / "benchmarks" / "README.md"
INSTRUCTORS = ROOT / "book" / "instructors"
SETUP = INSTRUCTORS / "setup.md"

#: The documentation that replaced the former README.
DOCS = [README, ROOT / "CONTRIBUTING.md", BENCHMARKS, ROOT / "book" / "course.md", ROOT / "book" / "publishing.md",
        *sorted(INSTRUCTORS.glob("*.md"))]

#: Every command line of the former README (before issue 35): a command and the options it was shown with.
#: Each must still be documented, the command and all its options on one page.
OLD_README_COMMANDS: list[tuple[str, tuple[str, ...]]] = [
    ("make book", ()),
    ("make test", ("TEST_WORKERS=0",)),
    ("make student", ()),
    ("make solutions", ()),
    ("make lab", ("LAB_ARGS", "--port 8899 --no-browser", "--allow-root")),
    ("make lab-check", ()),
    ("make clean", ()),
    ("make venv", ()),
    ("python3 -m http.server -d _build/html 8000", ()),
    ("python -m dptutor reproduce", ("--trials 10000000", "--workers 2", "--seed 1234", "--out", "--exact")),
    ("python -m dptutor repeat", ("--mechanism adept", "--n 2", "--epsilon 0.1", "--trials 10000000",
                                  "--repeats 100")),
    ("pip install -e '.[distributed]'", ("dask scheduler", "dask worker", "--nworkers", "--nthreads")),
    ("python -m dptutor course new", ("DPTUTOR_COURSE_SECRET", "--secret", "--name")),
    ("python -m dptutor release", ()),
    ("sudo apt-get install bubblewrap", ("dnf install bubblewrap",)),
    ("pip install 'dptutor[grade]'", ()),
    ("python -m dptutor grade sampler", ("--workers 2", "--feedback", "--csv", "--timeout", "--total-timeout",
                                         "--only", "--regrade", "--config", "--course", "--overrides",
                                         "--sandbox podman", "--sandbox docker", "--image", "--no-sandbox",
                                         "--memory")),
    ("python -m dptutor grade audit", ("--course",)),
    ("python -m dptutor export-lms canvas", ("--column",)),
    ("python -m dptutor export-lms moodle", ("--out-of",)),
    ("pip install 'dptutor[otter]'", ()),
    ("python -m dptutor export-otter sampler", ("--course", "--wheel", "--time-limit")),
    ("otter assign sampler.ipynb dist/", ()),
    ("otter run -a dist/autograder/", ()),
    ("pip install \"dptutor-0.1.0-py3-none-any.whl[notebooks]\"", ()),
    ("benchmarks/bench_audit.py", ()),
    ("benchmarks/bench_sampler.py", ()),
    ("benchmarks/bench_exact.py", ()),
    ("benchmarks/bench_grading.py", ()),
    ("benchmarks/bench_pair_audit.py", ()),
    ("benchmarks/bench_blackbox.py", ("--full", "--search", "--rounds 3", "--bounds joint", "--soundness 20",
                                      "--ceiling", "--trials 220000000")),
    ("benchmarks/cell_times.py", ("--all",)),
    (".ci/run", ()),
]

#: Where the examples keep the course folder: the instructor's home (spelt in two literals, so that no line of
#: this file names a path outside the repository; tests/library/test_portability.py).
HOME_PREFIX = "~" "/"

#: What a measured number looks like: a duration, a speed ratio, a percentage, CPU time, memory.
MEASURED = re.compile(r"\b\d[\d,.]*\s*(min|minutes?|s|sec|seconds?|h|hours?|ms|MiB|GiB|MB|GB|x)\b|\d\s*%|CPU",
                      re.I)


def _texts() -> dict[Path, str]:
    return {path: path.read_text(encoding="utf-8") for path in DOCS}


def test_the_documentation_files_exist() -> None:
    for path in DOCS:
        assert path.is_file(), path
    assert len(list(INSTRUCTORS.glob("*.md"))) >= 4


def test_the_readme_fits_on_a_screen_and_states_no_measured_number() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 120, len(lines)
    measured = [f"README.md:{i}: {line}" for i, line in enumerate(lines, 1) if MEASURED.search(line)]
    assert not measured, "\n".join(measured)


def test_the_measured_number_check_catches_each_kind() -> None:
    for line in ("`make book` took 5 min 12 s", "1.54x the cost", "25x faster", "about 12 minutes",
                 "a peak of 187 MiB", "8,700 CPU seconds", "13 of 271 (4.8%)", "about 8 s"):
        assert MEASURED.search(line), line
    for line in ("A fresh machine needs `python3` (3.11) and `make`.", "ACL 2022 paper (arXiv:2202.12138)",
                 "open http://localhost:8000", "`TEST_WORKERS=0 make test`"):
        assert not MEASURED.search(line), line


def test_the_readme_links_to_files_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)\)", text)
    local = [link for link in links if "://" not in link]
    assert {"CONTRIBUTING.md", "benchmarks/README.md", "book/course.md", "book/publishing.md"} <= set(local)
    for link in local:
        assert (ROOT / link).is_file(), link
    for audience in ("Students studying alone", "Instructors running a course", "Maintainers publishing the site"):
        assert audience in text, audience


@pytest.mark.parametrize("command, options", OLD_README_COMMANDS, ids=[c for c, _ in OLD_README_COMMANDS])
def test_every_command_of_the_old_readme_is_still_documented(command: str, options: tuple[str, ...]) -> None:
    texts = _texts()
    pages = [path for path, text in texts.items() if command in text]
    assert pages, f"{command!r} is documented nowhere"
    missing = {page: [o for o in options if o not in texts[page]] for page in pages}
    assert any(not m for m in missing.values()), f"{command!r}: no page shows all its options: {missing}"


def test_every_documented_dptutor_command_exists() -> None:
    from dptutor.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    named = {m for text in _texts().values() for m in re.findall(r"python -m dptutor ([a-z][a-z-]*)", text)}
    assert named and named <= set(commands), sorted(named - set(commands))


def test_each_benchmark_section_is_dated_and_has_its_command() -> None:
    text = BENCHMARKS.read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    assert len(sections) >= 6
    for section in sections:
        title = section.splitlines()[0]
        assert re.search(r"\b20\d\d-\d\d-\d\d\b", section), f"{title}: no date (YYYY-MM-DD)"
        assert re.search(r"(benchmarks/|python -m dptutor|make |\.ci/run|bench_\w+\.py)", section), \
            f"{title}: no command"


def test_examples_keep_the_course_folder_outside_the_clone() -> None:
    for path, text in _texts().items():
        for folder in re.findall(r"course new (\S+)", text):
            assert folder.startswith((HOME_PREFIX, "/")) or folder.isupper(), f"{path.name}: course new {folder}"
        for folder in re.findall(r"--course (\S+)", text):
            folder = folder.strip("`")
            assert folder.startswith((HOME_PREFIX, "/")) or folder.isupper(), f"{path.name}: --course {folder}"


def _bash_block(text: str, heading: str) -> list[str]:
    section = text[text.index(heading):]
    start = section.index("```bash\n") + len("```bash\n")
    return section[start:section.index("```", start)].splitlines()


def test_the_course_folder_block_runs_as_written(tmp_path: Path) -> None:
    """The setup page's "Making the course folder": the secret reaches ``course new`` alone (never exported
    into the grading shell), the folder lands outside the clone, and the ``.gitignore`` that ``course new``
    writes, as the page says, keeps every file of it out of a repository it lands in."""
    text = SETUP.read_text(encoding="utf-8")
    lines = _bash_block(text, "## Making the course folder")
    assert not any(line.lstrip().startswith("export DPTUTOR_COURSE_SECRET") for line in lines), lines
    (line,) = [line for line in lines if "-m dptutor" in line]
    words = line.split("#")[0].split()
    at = words.index("python")
    assert words[:at] == ['DPTUTOR_COURSE_SECRET="$secret"'] and words[at:at + 5] == ["python", "-m", "dptutor",
                                                                                       "course", "new"], words
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "DPTUTOR_COURSE_SECRET": "the secret of the setup page",
           "PYTHONPATH": str(ROOT)}
    assert words[at + 5].startswith(HOME_PREFIX), words  # in the instructor's home, not in the clone
    folder = home / words[at + 5][2:]
    run = subprocess.run([sys.executable, *words[at + 1:at + 5], str(folder)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    name = folder.name
    assert tomllib.loads((folder / "grading.toml").read_text(encoding="utf-8"))["course"] == name
    assert (folder / "private" / "answer-key.toml").is_file()
    for notebook in (folder / "release").iterdir():
        assert "BEGIN SOLUTION" not in notebook.read_text(encoding="utf-8")
    # The .gitignore that course new writes, as the page says: a repository around the folder sees none of it.
    assert "`.gitignore`: a single `*`" in text and (folder / ".gitignore").is_file()
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(home)], check=True, timeout=60)
    status = subprocess.run([*git, "-C", str(home), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True, timeout=60).stdout
    assert str(folder.relative_to(home)) not in status and status.strip() == "", status
