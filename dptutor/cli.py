"""Command line: ``python -m dptutor <subcommand>`` (or the ``dptutor`` script).

Subcommands:

* ``reproduce``: the paper's Section 5 grid (Figure 2), resumable; writes ``results.json``,
  ``results.csv`` and ``sanity_check.png``/``.svg`` into ``--out``.
* ``repeat``: one cell over seeds 0..repeats-1 (the paper's footnote 7), prints mean and std.
* ``grade``: grade submitted assignment notebooks into a CSV (:mod:`dptutor.course.grade`, :mod:`dptutor.course.executor`).
* ``export-otter``: an otter-grader notebook of an assignment, for Gradescope
  (:mod:`dptutor.course.otter`).
* ``export-lms``: a grade CSV that Canvas or Moodle imports (:mod:`dptutor.course.lms`).
* ``release``: regenerate the student notebooks from the instructor notebooks
  (:mod:`dptutor.course.release`).
* ``rescore``: score a scores CSV again and rewrite the feedback files (:mod:`dptutor.course.rescore`).
* ``handgrade``: the answers graded by hand, for a teaching assistant, and back (:mod:`dptutor.course.handgrade`).
* ``course new``: a private course folder whose mysteries are drawn by a secret
  (:mod:`dptutor.course.folders`).

Adding a subcommand: write one function decorated with ``@subcommand("name")`` that adds its
parser to the ``subparsers`` it receives and sets ``handler`` (a function ``args -> int``) with
``set_defaults``.  Nothing else needs to change.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["main", "build_parser", "subcommand", "SUBCOMMANDS", "add_grade_arguments"]

#: name -> function adding that subcommand's parser (in registration order).
SUBCOMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {}


def subcommand(name: str) -> Callable:
    """Register ``fn(subparsers)`` as the builder of subcommand ``name``."""

    def register(fn: Callable[[argparse._SubParsersAction], None]) -> Callable:
        if name in SUBCOMMANDS:
            raise ValueError(f"subcommand {name!r} is already registered")
        SUBCOMMANDS[name] = fn
        return fn

    return register


def _error(prefix: str, message: object) -> int:
    """Print ``{prefix}error: {message}`` on one line of standard error (a newline or terminal escape in a
    path is written as ``\\n``, ``\\x1b``); the exit code 2."""
    from dptutor.course.textsafe import one_line

    print(f"{prefix}error: {one_line(str(message))}", file=sys.stderr)
    return 2


def _int_at_least(text: str, minimum: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    return _int_at_least(text, 1, "a positive integer")


def _nonnegative_int(text: str) -> int:
    return _int_at_least(text, 0, "a non-negative integer")


def _workers(text: str) -> int:
    from dptutor._validate import MAX_WORKERS

    value = _int_at_least(text, 1, f"a number of workers from 1 to {MAX_WORKERS}")
    if value > MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"expected a number of workers from 1 to {MAX_WORKERS}, got {text!r}")
    return value


def _wall_factor(text: str) -> int:
    from dptutor.course.sandbox import MAX_WALL_FACTOR

    value = _int_at_least(text, 1, f"a whole factor from 1 to {MAX_WALL_FACTOR}")
    if value > MAX_WALL_FACTOR:
        raise argparse.ArgumentTypeError(f"expected a whole factor from 1 to {MAX_WALL_FACTOR}, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"expected a finite positive number, got {text!r}")
    return value


# ---------------------------------------------------------------------------------------------
# reproduce
# ---------------------------------------------------------------------------------------------


@subcommand("reproduce")
def _add_reproduce(subparsers: argparse._SubParsersAction) -> None:
    from dptutor.experiments import PAPER_DIMS, PAPER_EPSILONS, PAPER_SEED, PAPER_TRIALS
    from dptutor.mechanisms import MECHANISMS

    p = subparsers.add_parser(
        "reproduce",
        help="run the paper's grid (Section 5, Figure 2); resumable",
        description=(
            "Audit every (mechanism, epsilon, n) cell with the paper's attack and write results.json, "
            "results.csv and sanity_check.png/.svg into --out. Cells already in --out/results.csv with "
            "the same trials and seed are not recomputed, so an interrupted run can simply be restarted."
        ),
    )
    p.add_argument("--trials", type=_positive_int, default=PAPER_TRIALS, help="trials per dataset and cell (default: %(default)s)")
    p.add_argument("--mechanisms", nargs="+", choices=list(MECHANISMS), default=list(MECHANISMS), metavar="NAME",
                   help=f"mechanisms to audit (default: all of {', '.join(MECHANISMS)})")
    p.add_argument("--epsilons", nargs="+", type=_positive_float, default=list(PAPER_EPSILONS), metavar="EPS",
                   help="privacy budgets (default: %(default)s)")
    p.add_argument("--dims", nargs="+", type=_positive_int, default=list(PAPER_DIMS), metavar="N",
                   help="dimensions n (default: %(default)s)")
    p.add_argument("--workers", type=_workers, default=2,
                   help="worker processes, at most the CPUs are used (default: %(default)s)")
    p.add_argument("--seed", type=_nonnegative_int, default=PAPER_SEED,
                   help="run seed; each cell's seed derives from it (default: %(default)s)")
    p.add_argument("--out", type=Path, default=Path("results"), help="output folder (default: %(default)s)")
    p.add_argument("--exact", action="store_true", help="fill the grid from the exact closed form instead of Monte Carlo")
    p.add_argument("--no-exact-overlay", action="store_true", help="do not draw the exact closed form as dashed lines")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=_cmd_reproduce)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dptutor.experiments import run_grid, save_figure
    from dptutor.plotting import plot_sanity_check

    computed = []
    invalid: list[str] = []

    def report(message: str) -> None:
        invalid.append(message)
        print(f"dptutor reproduce: {message} (recomputed)", file=sys.stderr)

    t0 = time.perf_counter()
    try:
        rows = run_grid(
            args.mechanisms,
            args.epsilons,
            args.dims,
            args.trials,
            rng=args.seed,
            workers=args.workers,
            out=args.out,
            exact=args.exact,
            progress=not args.quiet,
            on_row=computed.append,
            on_invalid=report,
        )
    except (TypeError, ValueError) as exc:  # a bad --out, duplicate --dims, ...: no traceback
        return _error("dptutor reproduce: ", exc)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {len(computed)} cell(s) finished this run are saved in {args.out}/; "
              "rerun the same command to resume", file=sys.stderr)
        return 130
    elapsed = time.perf_counter() - t0
    title = "exact closed form" if args.exact else f"Monte Carlo, {args.trials:,} trials per dataset"
    fig = plot_sanity_check(rows, exact=not args.no_exact_overlay, title=title)
    paths = save_figure(fig, args.out / "sanity_check")
    plt.close(fig)
    reused = len(rows) - len(computed)
    print(f"{len(rows)} cells ({len(computed)} computed, {reused} reused) in {elapsed:.1f} s -> "
          f"{args.out / 'results.json'}, {args.out / 'results.csv'}, {', '.join(str(p) for p in paths)}")
    return 0


# ---------------------------------------------------------------------------------------------
# repeat
# ---------------------------------------------------------------------------------------------


@subcommand("repeat")
def _add_repeat(subparsers: argparse._SubParsersAction) -> None:
    from dptutor.experiments import PAPER_TRIALS
    from dptutor.mechanisms import MECHANISMS

    p = subparsers.add_parser(
        "repeat",
        help="repeat one cell over seeds 0..repeats-1 and print mean and std (footnote 7)",
        description="Estimate one cell's loss with seeds first-seed, first-seed+1, ...; print mean and std (ddof=0).",
    )
    p.add_argument("--mechanism", choices=list(MECHANISMS), default="adept")
    p.add_argument("--n", type=_positive_int, default=2)
    p.add_argument("--epsilon", type=_positive_float, default=0.1)
    p.add_argument("--trials", type=_positive_int, default=PAPER_TRIALS)
    p.add_argument("--repeats", type=_positive_int, default=100)
    p.add_argument("--first-seed", type=_nonnegative_int, default=0)
    p.add_argument("--workers", type=_workers, default=1)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=_cmd_repeat)


def _cmd_repeat(args: argparse.Namespace) -> int:
    from dptutor.experiments import repeat_loss

    try:
        res = repeat_loss(
            args.mechanism, args.n, args.epsilon, args.trials, args.repeats,
            first_seed=args.first_seed, workers=args.workers, progress=not args.quiet,
        )
    except (TypeError, ValueError) as exc:
        return _error("dptutor repeat: ", exc)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    print(res)
    print(f"mean {res.mean:.6g}")
    print(f"std {res.std:.6g}")
    return 0


# ---------------------------------------------------------------------------------------------
# grade and release (the course assignments; all logic in dptutor.course)
# ---------------------------------------------------------------------------------------------


@subcommand("grade")
def _add_grade(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "grade",
        help="grade a folder of submitted assignment notebooks into a CSV",
        description="Run each submitted notebook (.ipynb or .md) in a fresh kernel, inside its own sandbox "
                    "(bubblewrap: sudo apt-get install bubblewrap) with time and resource limits, then the "
                    "assignment's grading checks; write one CSV row of scores and messages per submission.",
    )
    add_grade_arguments(p)
    p.set_defaults(handler=_cmd_grade)


def _seconds(text: str) -> float:
    from dptutor.course.executor import MAX_TIMEOUT, MIN_TIMEOUT

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}") from None
    if not (MIN_TIMEOUT <= value <= MAX_TIMEOUT):
        raise argparse.ArgumentTypeError(f"expected a number of seconds in [{MIN_TIMEOUT:g}, {MAX_TIMEOUT:g}], got {text!r}")
    return value


def _mebibytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of MiB, got {text!r}") from None
    if not 256 <= value <= 1 << 20:
        raise argparse.ArgumentTypeError(f"expected a number of MiB in [256, {1 << 20}], got {text!r}")
    return value


def add_grade_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``python -m dptutor grade`` (one per field of :class:`dptutor.course.grade.GradeOptions`)."""
    from dptutor.assignments.registry import ASSIGNMENTS
    from dptutor.course.sandbox import INSTALL_HINT, SANDBOXES, Limits

    parser.add_argument("assignment", choices=sorted(ASSIGNMENTS), help="which assignment")
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks (.ipynb or .md)")
    parser.add_argument("--csv", type=Path, default=None,
                        help="output CSV, one row per submission, written after each one; submissions "
                             "already in it are skipped (default: scores-ASSIGNMENT.csv)")
    parser.add_argument("--feedback", type=Path, default=None, metavar="DIR",
                        help="also write one <submission>.txt feedback file per submission into DIR")
    parser.add_argument("--timeout", type=_seconds, default=None,
                        help="time limit per cell in seconds (default: the config's limits.cell, else 60)")
    parser.add_argument("--total-timeout", type=_seconds, default=None,
                        help="time limit per notebook in seconds (default: the config's limits.notebook, else 600)")
    parser.add_argument("--regrade", action="store_true",
                        help="grade every submission again, even those already in --csv (with the grading "
                             "seeds saved in their rows)")
    parser.add_argument("--only", default=None, metavar="SUBMISSION",
                        help="grade (or regrade) this one submission, given as its name in the CSV, its path or "
                             "its student identifier; its row is replaced, with the same grading seeds")
    parser.add_argument("--workers", type=_grade_workers, default=1, metavar="N",
                        help="grade N submissions at once, each in its own sandbox (default: %(default)s; "
                             "at most the number of CPUs)")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="grading configuration (.toml or .json): points, time limits, late policy, course")
    parser.add_argument("--course", default=None,
                        help="a course folder made by `course new` (its answer key grades assignments 3 and 4, "
                             "its grading.toml is the default --config), or a course identifier; recorded in "
                             "every row and checked on resume (default: the config's course, else none)")
    parser.add_argument("--overrides", type=Path, default=None, metavar="FILE",
                        help="CSV of manual score changes (student,question,score,reason), applied to every row")
    box = parser.add_mutually_exclusive_group()
    box.add_argument("--sandbox", choices=[k for k in SANDBOXES if k != "none"], default="auto",
                     help="isolation of each submission: bwrap (bubblewrap, the tested default; "
                          f"`{INSTALL_HINT}`), podman or docker (default: %(default)s = bwrap)")
    box.add_argument("--no-sandbox", action="store_true",
                     help="run the submissions as your own user, next to the grader: ONLY for notebooks you "
                          "trust (the CSV says so in every row)")
    parser.add_argument("--memory", type=_mebibytes, default=Limits().memory >> 20, metavar="MIB",
                        help="address-space limit of each process in the sandbox, in MiB (default: %(default)s)")
    parser.add_argument("--wall-factor", type=_wall_factor, default=Limits().wall_factor, metavar="N",
                        help="in bubblewrap the time limits count the CPU time of the submission's own sandbox; "
                             "a cell or notebook that waits or sleeps is stopped at N times its limit of "
                             "wall-clock time (default: %(default)s)")
    parser.add_argument("--image", default=None, metavar="IMAGE",
                        help="container image for --sandbox podman|docker (default: python:3.11-slim; it must "
                             "run this Python, which is mounted read-only from the host)")


def _grade_workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of workers, got {text!r}") from None
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"expected a number of workers in [1, 256], got {text!r}")
    return value


def _cmd_grade(args: argparse.Namespace) -> int:
    import dataclasses

    from dptutor.course.grade import GradeOptions, run_grade

    return run_grade(GradeOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(GradeOptions)}))


def _add_rescore_arguments(parser: argparse.ArgumentParser, *, feedback_help: str) -> None:
    """The options ``rescore`` and ``handgrade apply`` share (one per field of RescoreOptions but the first two)."""
    parser.add_argument("--course", type=Path, default=None, metavar="FOLDER",
                        help="the course folder the scores were graded with (its grading.toml is the default --config)")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="grading configuration (points, weights, late policy); default: the course's "
                             "grading.toml, else the rows keep theirs")
    parser.add_argument("--feedback", type=Path, default=None, metavar="DIR", help=feedback_help)
    parser.add_argument("--submissions", type=Path, default=None, metavar="FOLDER",
                        help="the submissions folder, for the late policy's times (default: the times the rows "
                             "record)")


@subcommand("rescore")
def _add_rescore(subparsers: argparse._SubParsersAction) -> None:
    from dptutor.assignments.registry import ASSIGNMENTS

    p = subparsers.add_parser(
        "rescore",
        help="score a scores CSV again (configuration, overrides) and rewrite the feedback, without running notebooks",
        description="Apply the grading configuration (points, weights, late policy) and the overrides to the "
                    "recorded checks of every row of a scores CSV; rewrite the CSV, every student's feedback file "
                    "and the instructor's report (SCORES-instructor.md).",
    )
    p.add_argument("assignment", choices=sorted(ASSIGNMENTS), help="which assignment")
    p.add_argument("--csv", type=Path, required=True, help="the scores CSV to rescore (rewritten)")
    p.add_argument("--overrides", type=Path, default=None, metavar="FILE",
                   help="CSV of manual score changes (student,question,score,reason); default: the rows keep theirs")
    _add_rescore_arguments(p, feedback_help="rewrite every student's <submission>.txt feedback file in DIR")
    p.set_defaults(handler=_cmd_rescore)


def _rescore_options(args: argparse.Namespace) -> object:
    from dptutor.course.rescore import RescoreOptions

    return RescoreOptions(args.assignment, args.csv, course=args.course, config=args.config,
                          overrides=args.overrides, feedback=args.feedback, submissions=args.submissions)


def _cmd_rescore(args: argparse.Namespace) -> int:
    from dptutor.course.rescore import run_rescore

    return run_rescore(_rescore_options(args))


@subcommand("handgrade")
def _add_handgrade(subparsers: argparse._SubParsersAction) -> None:
    from dptutor.assignments.registry import ASSIGNMENTS

    p = subparsers.add_parser(
        "handgrade",
        help="collect the answers graded by hand for a teaching assistant, and read the points back",
        description="collect: one HTML page with every answer graded by hand, its student and the course's "
                    "rubric, and a CSV to fill in (file,student,question,max,points,reason). apply: read the "
                    "filled CSV back as overrides and rescore the scores CSV and the feedback files.",
    )
    actions = p.add_subparsers(dest="handgrade_command", required=True, metavar="ACTION")
    collect = actions.add_parser("collect", help="write DIR/handgrade-ASSIGNMENT.html and .csv")
    collect.add_argument("assignment", choices=sorted(ASSIGNMENTS), help="which assignment")
    collect.add_argument("submissions", type=Path, help="the folder of submitted notebooks that was graded")
    collect.add_argument("--csv", type=Path, required=True, help="the scores CSV of the grading run")
    collect.add_argument("--course", type=Path, default=None, metavar="FOLDER",
                         help="the course folder: its instructor notebook gives the rubric (default: the book's)")
    collect.add_argument("--out", type=Path, required=True, metavar="DIR", help="where to write the two files")
    collect.set_defaults(handler=_cmd_handgrade_collect)
    apply = actions.add_parser("apply", help="read a filled handgrade CSV back as overrides, then rescore")
    apply.add_argument("assignment", choices=sorted(ASSIGNMENTS), help="which assignment")
    apply.add_argument("filled", type=Path, help="the filled-in handgrade-ASSIGNMENT.csv")
    apply.add_argument("--csv", type=Path, required=True, help="the scores CSV to rescore (rewritten)")
    apply.add_argument("--overrides", type=Path, required=True, metavar="FILE",
                       help="the overrides file to add the hand grades to (created if missing; give the same file "
                            "to later `grade --overrides` runs)")
    _add_rescore_arguments(apply, feedback_help="rewrite every student's feedback file in DIR")
    apply.set_defaults(handler=_cmd_handgrade_apply)


def _cmd_handgrade_collect(args: argparse.Namespace) -> int:
    from dptutor.course.handgrade import run_collect

    return run_collect(args.assignment, args.submissions, args.csv, args.out, course=args.course)


def _cmd_handgrade_apply(args: argparse.Namespace) -> int:
    from dptutor.course.handgrade import run_apply

    return run_apply(args.filled, _rescore_options(args))


@subcommand("release")
def _add_release(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "release",
        help="rewrite book/assignments/*.md from book/assignments/instructor/*.md",
        description="Regenerate each student notebook from its instructor notebook: solution blocks "
                    "dropped, STUB lines kept.",
    )
    p.add_argument("--folder", type=Path, default=None,
                   help="the assignments folder, with an instructor/ subfolder (default: the book's)")
    p.set_defaults(handler=_cmd_release)


@subcommand("export-otter")
def _add_export_otter(subparsers: argparse._SubParsersAction) -> None:
    from dptutor.assignments.registry import ASSIGNMENTS

    p = subparsers.add_parser(
        "export-otter",
        help="write an otter-grader 7 master notebook of an assignment (for Gradescope)",
        description="Write OUTDIR/ASSIGNMENT.ipynb, an otter-grader master notebook whose hidden tests call the "
                    "same dptutor checks (partial credit, cell time limit), the dptutor wheel and a "
                    "requirements.txt that installs it from the autograder zip; then run `otter assign` on it.",
    )
    p.add_argument("assignment", choices=sorted(ASSIGNMENTS))
    p.add_argument("outdir", type=Path)
    p.add_argument("--time-limit", type=_positive_float, default=60.0,
                   help="seconds any cell may run when otter grades (default: %(default)s)")
    p.add_argument("--wheel", type=Path, default=None,
                   help="a prebuilt dptutor wheel to ship (default: build one from this repository)")
    p.add_argument("--course", type=Path, default=None, metavar="FOLDER",
                   help="a course folder (`course new`): export its notebooks, graded against its own mysteries "
                        "(default: the book's self-study instance)")
    p.set_defaults(handler=_cmd_export_otter)


@subcommand("export-lms")
def _add_export_lms(subparsers: argparse._SubParsersAction) -> None:
    from dptutor.assignments.registry import ASSIGNMENTS
    from dptutor.course.lms import LMS_FORMATS

    p = subparsers.add_parser(
        "export-lms",
        help="write a grade CSV that Canvas or Moodle imports, from a scores CSV",
        description="Write one row per student with the total of the grader's scores CSV, in Canvas's "
                    "gradebook import format or Moodle's grading worksheet; the student identifier comes from "
                    "the submission's file or folder name (see dptutor.course.submissions).",
    )
    p.add_argument("lms", choices=LMS_FORMATS, help="the grade-import format")
    p.add_argument("assignment", choices=sorted(ASSIGNMENTS), help="which assignment the scores are of")
    p.add_argument("scores", type=Path, help="the grader's scores CSV (e.g. scores-sampler.csv)")
    p.add_argument("out", type=Path, help="the CSV to write and upload")
    p.add_argument("--column", default=None,
                   help="Canvas: the assignment column's header as Canvas exports it, e.g. 'Sampler (1234)' "
                        "(default: the assignment's title)")
    p.add_argument("--out-of", type=float, default=None, metavar="POINTS",
                   help="rescale each total to this maximum (the LMS assignment's maximum grade; "
                        "default: the grader's points)")
    p.set_defaults(handler=_cmd_export_lms)


def _cmd_export_lms(args: argparse.Namespace) -> int:
    from dptutor.course.lms import export_lms

    try:
        n = export_lms(args.lms, args.assignment, args.scores, args.out, column=args.column, out_of=args.out_of)
    except (ValueError, TypeError) as exc:
        return _error("", exc)
    print(f"wrote {args.out}: {n} student(s), {args.lms} grade import")
    return 0


@subcommand("course")
def _add_course(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "course",
        help="set up a course: private answers, student notebooks and grading configuration",
        description="Course instances: the mystery mechanisms of assignments 3 and 4 drawn by a course secret.",
    )
    actions = p.add_subparsers(dest="course_command", required=True, metavar="ACTION")
    new = actions.add_parser(
        "new",
        help="write a course folder (private/ answers and solutions, release/ student notebooks, grading.toml)",
        description="Write FOLDER: private/answer-key.toml and private/instructor/*.md (never hand these out), "
                    "release/*.md (the student notebooks to hand out) and grading.toml. The secret is not "
                    "stored; the same secret and name write the same folder again.",
    )
    new.add_argument("folder", type=Path)
    new.add_argument("--secret", default=None,
                     help="the course secret, at least 12 characters (default: the environment variable "
                          "DPTUTOR_COURSE_SECRET, which keeps it out of the shell's history)")
    new.add_argument("--name", default=None, help="course name recorded in the scores (default: the folder's name)")
    new.add_argument("--book", type=Path, default=None, metavar="DIR",
                     help="the book's assignments folder, with its instructor/ notebooks (default: book/assignments "
                          "of the repository this dptutor runs from)")
    new.set_defaults(handler=_cmd_course_new)


def _cmd_course_new(args: argparse.Namespace) -> int:
    import os

    from dptutor.course.folders import new_course

    secret = args.secret if args.secret is not None else os.environ.get("DPTUTOR_COURSE_SECRET")
    if secret is None:
        print("dptutor course new: error: give --secret or set DPTUTOR_COURSE_SECRET", file=sys.stderr)
        return 2
    try:
        course = new_course(args.folder, secret, name=args.name, book=args.book)
    except (TypeError, ValueError) as exc:
        return _error("dptutor course new: ", exc)
    print(f"wrote course {course.name!r} into {course.folder}: hand out {course.folder / 'release'}/*.md; keep "
          f"{course.folder / 'private'}/ private; grade with --course {course.folder}")
    return 0


def _cmd_export_otter(args: argparse.Namespace) -> int:
    from dptutor.course.otter import export_otter

    if args.outdir.exists() and not args.outdir.is_dir():
        return _error("", f"{args.outdir} exists and is not a folder")
    try:
        target = export_otter(args.assignment, args.outdir, time_limit=args.time_limit, wheel=args.wheel,
                              course=args.course)
    except (ValueError, RuntimeError) as exc:
        return _error("", exc)
    wheels = sorted(p.name for p in target.parent.glob("dptutor-*.whl"))
    print(f"wrote {target}, {', '.join(wheels)} and requirements.txt; next: cd {args.outdir} && "
          f"otter assign {target.name} dist/")
    return 0


def _cmd_release(args: argparse.Namespace) -> int:
    from dptutor.course.release import release

    try:
        written = release(args.folder)
    except (ValueError, OSError) as exc:
        return _error("", exc)
    for path in written:
        print(f"wrote {path}")
    return 0


# ---------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dptutor",
        description="dptutor: reproduce the empirical sanity check of Habernal (ACL 2022).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    for add in SUBCOMMANDS.values():
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the subcommand, return its exit code."""
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)
