"""Shared fixtures. The full book build is session-scoped: the build test and the browser test share it."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, BookBuild  # noqa: F401 (ROOT and BookBuild were importable from conftest)

# The tests are grouped by subject in sub-folders; a module may import another's helpers by name
# (``from test_grading import ...``), so every group folder is importable, as tests/ itself is.
for _group in ("library", "book", "assignments", "course"):
    if str(Path(__file__).parent / _group) not in sys.path:
        sys.path.insert(0, str(Path(__file__).parent / _group))

# A shell starts background jobs with SIGINT ignored when job control is off (`(make test &)`, nohup in a
# subshell), and Python then installs no KeyboardInterrupt handler in any process started from it: the
# Ctrl-C tests would send SIGINT to graders that ignore it.  Restore Python's handler here, so that every
# process the tests start (an exec resets a handled signal to its default) gets SIGINT as a terminal does.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: A test that ran longer than this shows its recorded ``timeline`` property in the run's summary.
SLOW_TEST_SECONDS = 60.0


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Where a slow test spent its time: a test may record a ``timeline`` (``record_property``), such as a
    grader's progress lines with their times; it is printed when that test ran long, so that a slow run
    on a machine we cannot log into says which step was slow."""
    for status in ("passed", "failed"):
        for report in terminalreporter.stats.get(status, []):
            timeline = [str(value) for key, value in getattr(report, "user_properties", ()) if key == "timeline"]
            if getattr(report, "when", "") == "call" and report.duration > SLOW_TEST_SECONDS and timeline:
                terminalreporter.write_sep("-", f"timeline of {report.nodeid} ({report.duration:.0f} s)")
                terminalreporter.write_line("\n".join(timeline).rstrip())




def _jupyter_book() -> str:
    exe = Path(sys.executable).with_name("jupyter-book")
    return str(exe) if exe.exists() else (shutil.which("jupyter-book") or "jupyter-book")


def _build(cmd: list[str], html: Path) -> BookBuild:
    """Run a book build command from the repository root; the log keeps stdout and stderr."""
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONWARNINGS="default"),
                          capture_output=True, text=True, timeout=900)
    return BookBuild(proc.returncode, proc.stdout + proc.stderr, html)


#: The solutions edition's build, started in the background as soon as the book is built (``book_build``) when
#: a collected test needs it: it writes only its own folders and a copy of the Jupyter cache (it executes the
#: instructor notebooks into it), so it runs beside the book's other tests and the student edition, on a core
#: the other workers leave idle at the end of a run.
_BACKGROUND: dict[str, tuple[subprocess.Popen, Path, Path]] = {}


def _solutions_command(html: Path, cache: Path) -> tuple[list[str], Path]:
    """The solutions edition's command (``make solutions``) beside the book built into ``html``, reading the
    Jupyter cache ``cache``, and its output."""
    out = html.parent / "solutions" / "html"  # its own jupyter_execute, as `make solutions`
    return [sys.executable, str(ROOT / "book" / "_ext" / "student_edition.py"), "--edition", "solutions",
            "--out", str(out), "--cache", str(cache)], out


@pytest.fixture(scope="session")
def book_build(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> BookBuild:
    """Build the whole book from a clean cache, exactly like `make book`, into a temporary folder."""
    out = tmp_path_factory.mktemp("book")
    build = _build([_jupyter_book(), "build", str(ROOT), "-W", "-n", "--keep-going", "--path-output", str(out)],
                   out / "_build" / "html")
    wanted = any("solutions_build" in getattr(item, "fixturenames", ()) for item in request.session.items)
    if wanted and build.returncode == 0:
        cache = build.html.parent / "solutions-cache"
        shutil.copytree(build.html.parent / ".jupyter_cache", cache)
        cmd, html = _solutions_command(build.html, cache)
        log = out / "solutions.log"  # a file, not a pipe: a full pipe would stall the build until it is read
        with open(log, "w", encoding="utf-8") as fh:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, PYTHONWARNINGS="default"),
                                    stdout=fh, stderr=subprocess.STDOUT)
        _BACKGROUND["solutions"] = (proc, html, log)

        def stop() -> None:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

        request.session.config.add_cleanup(stop)
    return build


@pytest.fixture(scope="session")
def student_build(book_build: BookBuild) -> BookBuild:
    """The student edition (``make student``), built from the Jupyter cache of ``book_build``.

    Every notebook was executed by ``book_build``, so this build only re-reads and re-writes pages.
    """
    out = book_build.html.parent / "student"
    cache = book_build.html.parent / ".jupyter_cache"
    return _build([sys.executable, str(ROOT / "book" / "_ext" / "student_edition.py"),
                   "--out", str(out), "--cache", str(cache)], out)


@pytest.fixture(scope="session")
def solutions_build(book_build: BookBuild) -> BookBuild:
    """The teaching assistants' edition (``make solutions``), built from a copy of the Jupyter cache of
    ``book_build`` (only the instructor notebooks execute); started by ``book_build`` in the background."""
    if "solutions" not in _BACKGROUND:  # the book build failed: build it here, to report its own failure too
        return _build(*_solutions_command(book_build.html, book_build.html.parent / ".jupyter_cache"))
    proc, out, log = _BACKGROUND["solutions"]
    proc.wait(timeout=900)
    return BookBuild(proc.returncode, log.read_text(encoding="utf-8", errors="replace"), out)


# ---------------------------------------------------------------------------------------------
# Parallel runs: `make test` runs pytest-xdist with three workers and the scheduler below
# ---------------------------------------------------------------------------------------------

#: The fixtures that build the book, and the test modules that use them. Those modules form one unit
#: of work, run on one worker, so that the book is built once per run, as in a serial run.
BOOK_FIXTURES = frozenset({"book_build", "student_build", "solutions_build"})
BOOK_MODULES = frozenset({"test_book.py", "test_browser.py", "test_course.py", "test_editorial.py",
                          "test_explorables.py", "test_student_edition.py", "test_wheel.py"})


#: The slowest other modules (real kernels in the sandbox, large samples), started first so that no long
#: module is left to run alone at the end (xdist hands out the units in collection order).
SLOW_MODULES = ("test_hostile_sandbox.py", "test_grading_runner.py", "test_grading_record.py",
                "test_hostile_records.py", "test_zoo.py", "test_fuzz.py", "test_course_grading.py",
                "test_course_instances.py", "test_import_contract.py",
                "test_grading.py", "test_approximate_dp.py", "test_grading_selection.py", "test_sandbox.py")


def _order(nodeid: str) -> int:
    """Where a test's unit of work goes in the run: the book's first, then the slow modules, then the rest."""
    scope = _scope(nodeid)
    if scope == "book":
        return 0
    name = Path(scope).name
    return 1 + SLOW_MODULES.index(name) if name in SLOW_MODULES else 1 + len(SLOW_MODULES)


def _scope(nodeid: str) -> str:
    """The unit of work of a test: "book" for the modules that use the book build, else its module."""
    module = nodeid.split("::", 1)[0]
    return "book" if Path(module).name in BOOK_MODULES else module


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the book's modules first (their unit is the longest: under xdist one worker starts it at
    once, while the other runs the rest), then the slow modules, and refuse a book test outside
    ``BOOK_MODULES``."""
    for item in items:
        if BOOK_FIXTURES & set(getattr(item, "fixturenames", ())) and _scope(item.nodeid) != "book":
            raise pytest.UsageError(f"{item.nodeid} uses the book build: add its module to BOOK_MODULES "
                                    "in tests/conftest.py (else a parallel run builds the book twice)")
    items.sort(key=lambda item: _order(item.nodeid))  # stable: keeps the order within each module


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # pytest-xdist is pinned in requirements.txt; without it, tests run serially
    LoadScopeScheduling = None
else:
    class _BookScheduling(LoadScopeScheduling):
        """xdist's per-module scheduling, with every module of the book build in one unit: a module's
        tests run on one worker, so its module-scoped fixtures are computed once, as serially."""

        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadScopeScheduling | None:
        if config.getvalue("dist") in ("loadscope", "loadfile"):
            config.option.loadscopereorder = False  # collection order: the book's unit first
            return _BookScheduling(config, log)
        return None
