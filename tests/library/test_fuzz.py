"""Fuzz every public callable of every dptutor module with bad values, one parameter at a time.

Discovery is automatic: every module of the package (``pkgutil.iter_modules``) except the private
ones (``_validate``, ``_workers``: tested directly) and :data:`EXCLUDED_MODULES`, every callable in
its ``__all__``, and the public methods of its public classes.  A new module or function is covered
as soon as it is merged; if the suite does not know a valid value for one of its required
parameters, the test for that callable fails and says what to add to :data:`VALID` (by parameter
name) or :data:`VALID_FOR` (by callable).

For each parameter in turn, the others valid, every bad value of :func:`bad_values` is passed.  A
call passes when it

* returns normally, with no NaN anywhere in the result (arrays, tuples, dataclass fields, sympy
  ``nan``/``zoo``), or
* raises ``ValueError`` or ``TypeError`` whose message names the parameter (as a word);

and in both cases emits no warning and returns within :data:`TIMEOUT` seconds.  Any other
exception, a message that does not name the parameter, a warning, a NaN or a hang fails the test
and is listed with the call that caused it.  A callable whose valid call raises ``ImportError`` (an
optional extra not installed) is skipped, provided the message says which ``dptutor[extra]`` to
install.
"""

from __future__ import annotations

import dataclasses
import decimal
import fractions
import importlib
import inspect
import math
import pkgutil
import re
import signal
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import dptutor  # noqa: E402

#: Modules left out of the discovery: ``cli`` only wraps argparse (its functions take argparse
#: namespaces; they are tested in test_experiments.py and test_hardening.py).  Delete a name here to
#: include it.
EXCLUDED_MODULES: frozenset[str] = frozenset({"cli"})

#: Seconds one call may take before it counts as a hang.
TIMEOUT: float = 10.0
#: Targets that start a notebook kernel (5 s on a quiet machine, more on a loaded one), or build a wheel
#: with pip (``export_otter`` without ``wheel``: 4 s quiet, more than 10 s measured under load), get longer.
KERNEL_TIMEOUT: float = 90.0
KERNEL_TARGETS = frozenset({"course.executor.grade_notebook", "course.batch.grade_folder", "course.grade.run_grade",
                            "course.otter.export_otter"})

#: (module, callable) pairs whose documented output contains NaN: the grader's helpers hand a
#: student's value back as it is (a NaN there is what the check then reports to the student).
NAN_BY_DESIGN: frozenset[tuple[str, str]] = frozenset({
    ("assignments.feedback", "call"), ("assignments.feedback", "as_floats"), ("assignments.feedback", "spy_array"),
    ("assignments.record", "measure"), ("assignments.record", "call_many"),
    # An otter plugin hook returns the submission it was given; TimeLimit changes only a notebook and hands
    # anything else (otter also passes non-notebook submissions) back as it is, a NaN included.
    ("course.otter_plugin", "TimeLimit.before_execution"),
})


# ---------------------------------------------------------------------------------------------
# valid values: by parameter name, and per callable where the name is not enough
# ---------------------------------------------------------------------------------------------


def _rng(ctx: "Context") -> np.random.Generator:
    return np.random.default_rng(0)


def _laplace(ctx: "Context"):
    from dptutor.mechanisms import laplace_mechanism

    return laplace_mechanism


def _student_sampler(u, mu=0.0, b=1.0):
    """A student's answer to the sampler assignment (the paper's Eq. 5)."""
    u = np.asarray(u, dtype=float)
    return mu - b * np.sign(u - 0.5) * np.log1p(-2 * np.abs(u - 0.5))


@dataclasses.dataclass
class Context:
    """What a factory of valid values may use: a temporary folder (the working directory)."""

    tmp: Path

    def grid_row(self):
        from dptutor.experiments import GridRow

        return GridRow(mechanism="laplace", epsilon=1.0, n=2, trials=10, loss=math.log(7 / 3), counts=(3, 7, 7, 3))

    def csv_file(self) -> Path:
        from dptutor.experiments import write_results

        folder = self.tmp / "csv"
        write_results([self.grid_row()], folder)
        return folder / "results.csv"

    def submissions(self) -> Path:
        """A folder holding one tiny submission (one code cell): grading it starts one kernel."""
        import nbformat

        folder = self.tmp / "submissions"
        folder.mkdir(exist_ok=True)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
        nbformat.write(nb, folder / "tiny.ipynb")
        return folder

    def dptutor_wheel(self) -> Path:
        """A tiny stand-in for a dptutor wheel (what the otter export reads of one: the grader's module and
        METADATA with one dependency), so that no fuzzed call builds a real wheel."""
        import zipfile

        path = self.tmp / "dptutor-0.1.0-py3-none-any.whl"
        if not path.exists():
            with zipfile.ZipFile(path, "w") as zf:
                zf.writestr("dptutor/course/otter.py", "")
                zf.writestr("dptutor-0.1.0.dist-info/METADATA",
                            "Metadata-Version: 2.1\nName: dptutor\nVersion: 0.1.0\nRequires-Dist: numpy\n"
                            "Requires-Dist: dask[distributed]==2026.8.0; extra == \"distributed\"\n")
        return path

    def release_folder(self) -> Path:
        """A book/assignments-like folder: one tiny instructor notebook per assignment."""
        from dptutor.assignments import ASSIGNMENTS

        folder = self.tmp / "assignments"
        (folder / "instructor").mkdir(parents=True, exist_ok=True)
        for a in ASSIGNMENTS.values():
            (folder / "instructor" / a.notebook).write_text("a\n# BEGIN SOLUTION\nb\n# END SOLUTION\n# STUB: c\n")
        return folder

    def course_folder(self) -> Path:
        """A course folder made by ``course new``."""
        from dptutor.course.folders import new_course

        return new_course(self.tmp / "course", _COURSE_SECRET, name="dp-2026").folder

    def grade_options(self):
        """The options of ``python -m dptutor grade sampler <empty folder>`` (no kernel starts)."""
        from dptutor.course.grade import GradeOptions

        (self.tmp / "none").mkdir(exist_ok=True)
        return GradeOptions("sampler", self.tmp / "none", csv=self.tmp / "scores.csv", timeout=5, total_timeout=30)



Factory = Callable[[Context], Any]

#: A course secret for the course-instance functions (grading.instances, grading.course).
_COURSE_SECRET = "a course secret for the fuzz tests"


def _course_tokens() -> dict[str, str]:
    from dptutor.course.keys import course_tokens

    return course_tokens(_COURSE_SECRET)


def _course_token(assignment: str) -> str:
    return _course_tokens()[assignment]


def _course_members() -> dict:
    from dptutor.course.keys import members_of_key

    return members_of_key(_course_key())


def _course_key() -> str:
    from dptutor.course.keys import course_key

    return course_key(_COURSE_SECRET)


def _pair_member():
    from dptutor.assignments.instances import PairMember

    return PairMember(3, 0.8)


def _hunt_member():
    from dptutor.assignments.bug_family import BughuntMember

    return BughuntMember("none", "wrong-bound", "half-sensitivity")


def _pair_instructor_text() -> str:
    from dptutor.course.release import book_assignments_folder

    return (book_assignments_folder() / "instructor" / "pair_audit.md").read_text(encoding="utf-8")


def _const(value: Any) -> Factory:
    return lambda ctx: value


#: Valid values by parameter name (used for required parameters, and for optional ones whose
#: default is too slow for a fuzz run).
VALID: dict[str, Factory] = {
    "x": _const(0.3),
    "u": _const(0.3),
    "v": _const(0.2),
    "mu": _const(0.0),
    "b": _const(1.0),
    "epsilon": _const(1.0),
    "delta": _const(1e-5),
    "sampling_rate": _const(0.1),
    "n": _const(2),
    "trials": _const(200),
    "repeats": _const(2),
    "rng": _rng,
    "size": _const(5),
    "mechanism": _laplace,
    "name": _const("laplace"),
    "counts": _const([[3, 7], [7, 3]]),
    "confidence": _const(0.95),
    "seed": _const(1),
    "loss": _const(math.log(7 / 3)),
    "z": _const(0.1),
    "epsilons": _const((1.0,)),
    "dims": _const((2,)),
    "mechanisms": _const(("laplace",)),
    "rows": lambda ctx: [ctx.grid_row()],
    "path": lambda ctx: ctx.csv_file(),
    "text": _const("hello"),
    "fig": lambda ctx: plt.figure(figsize=(1, 1)),
    "stem": lambda ctx: ctx.tmp / "figure",
    "formats": _const(("png",)),
    "dpi": _const(20),
    "seeds": _const((0, 1)),
    "losses": _const((0.1, 0.2)),
    "lower_bounds": _const((0.05, 0.1)),
    "sigma": _const(1.0),
    "sensitivity": _const(1.0),
    "alpha": _const(0.05),
    "scale": _const(1.0),
    "correct": _const(60),  # (learning) audit.one_run
    "guesses": _const(100),  # (learning) audit.one_run
    "canaries": _const(1000),  # (learning) audit.one_run
}


def _pdf(x):
    return np.exp(-np.abs(x)) / 2


def _cdf(x):
    return np.clip((np.asarray(x) + 4) / 10, 0, 1)


def _classifier():  # (learning)
    return importlib.import_module("dptutor.learning").Classifier((np.zeros((3, 1)),), "logistic", np.array([0, 1]))


#: Valid values for every callable of one module, over :data:`VALID` (a mechanism's ``x`` is a batch).
VALID_FOR_MODULE: dict[str, dict[str, Factory]] = {
    "mechanisms": {"x": lambda ctx: np.zeros((3, 2))},
    "gaussian": {"x": lambda ctx: np.zeros((3, 2))},
    "libraries": {"x": lambda ctx: np.zeros((3, 2)), "scale": _const(2), "size": _const(5)},
    "exact": {"scale": lambda ctx: fractions.Fraction(3, 2)},
    "granular": {"params": lambda ctx: _granular(), "y": _const(0.0), "x": _const(np.array([0.0, 1.0]))},
    "selection": {"scores": _const(np.array([1.0, 0.0, 2.0])), "answers": _const(np.array([1.0, 0.0, 2.0])),
                  "threshold": _const(1.0), "epsilon": _const(1.0)},
    "floating": {"y": _const(np.array([0.25, 1.5])), "loc": _const(0.0), "scale": _const(1.0),
                 "params": lambda ctx: _snapping(), "x": _const(0.0), "k": _const(np.array([1, 2, 3])),
                 "sampler": _const("numpy"), "size": _const(64)},
    "ziggurat": {"y": _const(np.array([0.25, 1.5])), "loc": _const(0.0), "scale": _const(1.0)},
    "snapping": {"y": _const(np.array([0.25, 1.5])), "params": lambda ctx: _snapping(), "x": _const(0.0),
                 "size": _const(64)},
    "epsilon": {"fpr": _const(0.1), "values": _const(np.array([0.5, 2.0])), "bound": _const(1.0),
                "f": _const(0.5), "p": _const(0.25), "q": _const(0.75), "hashes": _const(2)},
    "learning": {"X": _const(np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [1.0, 1.0]])),  # (learning)
                 "y": _const(np.array([0, 1, 0, 1])), "epochs": _const(1), "sampling_rate": _const(0.5),
                 "clip": _const(1.0), "features": _const(2), "classes": _const(np.array([0, 1])),
                 "weights": _const((np.zeros((3, 1)),)), "kind": _const("logistic"), "noise_multiplier": _const(1.0),
                 "steps": _const(10), "epsilon": _const(1.0)},
    "buglab": {"data": _const(np.array([1.0, 2.0])), "scores": _const(np.array([1.0, 0.0])), "k": _const(3),
               "delta_prime": _const(1e-5), "bounds": _const((0.0, 1.0)), "version": _const("fixed")},
    "attacks": {"X": _const(np.array([[0.0, 1.0], [1.0, 0.0]])), "y": _const(np.array([0, 1])),  # (attacks)
                "member_scores": _const(np.array([1.0, 2.0])), "nonmember_scores": _const(np.array([0.5, 1.5])),
                "fpr": _const(np.array([0.0, 0.5, 1.0])), "tpr": _const(np.array([0.0, 0.6, 1.0])),
                "epsilon": _const(1.0), "people": _const(4), "queries": _const(np.array([[1, 0, 1, 0], [0, 1, 1, 0]])),
                "secret": _const(np.array([0, 1, 1, 0])), "answers": _const(np.array([1.0, 2.0])),
                "target_losses": _const(np.array([0.1, 0.2])), "reference_losses": _const(np.array([[0.1, 0.3], [0.2, 0.1]])),
                "reference_in": _const(np.array([[True, False], [False, True]]))},
    "learning_variants": {"X": _const(np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [1.0, 1.0]])),  # (attacks)
                          "y": _const(np.array([0, 1, 0, 1])), "clip": _const(1.0), "expected_size": _const(2.0),
                          "noise_multiplier": _const(1.0), "steps": _const(3), "sampling_rate": _const(0.5),
                          "gradients": _const(np.array([[1.0], [-1.0], [-1.0]]))},
    "text_privacy": {"n_documents": _const(5), "documents": _const(["a b", "b c"]), "vocabulary": _const(("a", "b")),
                     "vectors": _const(np.array([[0.5, 0.5]])), "norm": _const("l2"), "noise": _const("laplace"),
                     "bound": _const(1.0), "steps": _const(4), "dimension": _const(2), "delta": _const(0.0),
                     "scale": _const(fractions.Fraction(8)), "used_sensitivity": _const(8),
                     "claimed_epsilon": _const(1.0), "k": _const(np.array([1, 1])), "size": _const(3),
                     "train": _const(np.array([[0.0], [1.0]])), "test": _const(np.array([[0.2]])),
                     "train_labels": _const(np.array([0, 1])), "test_labels": _const(np.array([0]))},  # (text_privacy)
}

#: Valid values for one callable ("module.name" or "module.Class.method"), over the two above.
VALID_FOR: dict[str, dict[str, Factory]] = {
    "learning.per_example_gradients": {"model": lambda ctx: _classifier()},  # (learning)
    "learning.clipped_gradient_sum": {"model": lambda ctx: _classifier()},  # (learning)
    "learning.TrainingResult": {"model": lambda ctx: _classifier()},  # (learning)
    "attacks.example_losses": {"model": lambda ctx: _classifier()},  # (attacks)
    "attacks.subset_queries": {"queries": _const(3)},  # (attacks)
    "learning_variants.noiseless_step": {"model": lambda ctx: _classifier()},  # (attacks)
    "distributions.standard_laplace_fill": {"out": lambda ctx: np.empty(5)},
    "dptext.sample_dptext": {"nan": _const("zero")},  # "keep" returns NaN by design
    "audit.sanity.estimate_losses": {"cells": lambda ctx: [_audit_cell()]},
    "grid_files.GridRow": {"mechanism": _const("laplace"), "counts": _const((3, 7, 7, 3)), "trials": _const(10)},
    "experiments.RepeatResult": {"mechanism": _const("adept"), "trials": _const(10)},
    "experiments.cell_seed": {"mechanism": _const("laplace")},
    "experiments.repeat_loss": {"mechanism": _const("adept")},
    "grid_files.write_results": {"out": lambda ctx: ctx.tmp / "written"},
    "grid_files.atomic_write_text": {"path": lambda ctx: ctx.tmp / "note.txt"},
    "experiments.run_grid": {"out": lambda ctx: ctx.tmp / "grid"},
    "audit.sanity.AuditResult": {"trials": _const(10)},
    "audit.sanity.AuditResult.from_counts": {},
    "symbolic.laplace.laplace_pdf_expr": {},
    "symbolic.laplace.Symbols": {name: (lambda ctx, name=name: getattr(_symbols(), name))
                         for name in ("x", "mu", "b", "u", "v", "epsilon", "y", "t", "Delta")},
    "plotting.plot_sampling_strategies": {"panels": lambda ctx: [("a", np.linspace(-3, 3, 7))]},
    "plotting.plot_histograms_with_pdf": {"samples": lambda ctx: {"a": np.linspace(-3, 3, 7)}, "pdf": _const(_pdf)},
    "plotting.plot_ecdfs": {"samples": lambda ctx: {"a": np.linspace(-3, 3, 7)}, "cdfs": _const({"a": _cdf})},
    "plotting.plot_neighbouring_densities": {"panels": _const([("t", _pdf, _pdf)]), "y": _const(0.5)},
    "plotting.plot_sanity_check": {"results": _const({"laplace": {"1.0": {"2": 0.5}}}),
                                   "panels": _const((("Laplace", ("laplace",)),))},
    "plotting.plot_seed_estimates": {"losses": _const((1.0, 1.1)), "lower_bounds": _const((0.5, 0.6))},
    "plotting.plot_loss_agreement": {"series": _const({"a": ([1.0, 2.0], [1.1, 2.1])})},
    "plotting.fp_plot_impossible_fractions": {"series": lambda ctx: {"numpy": [_attack_result()]}},
    "granular.GranularParameters": {"epsilon": _const(1.0), "n": _const(1), "r": _const(2.0**-10), "t": _const(3)},
    "plotting.plot_attack_comparison": {"rows": _const([("m", 2, 1.0, 1.5, 0.5), ("m", 4, 1.0, 1.2, 0.0)])},
    "plotting.plot_composition": {"ks": _const([1, 2, 4]), "majority": _const([1.0, 1.5, 2.0])},
    "plotting.plot_gaussian_sigmas": {"epsilons": _const([0.1, 0.5]), "classic": _const([48.4, 9.7]),
                                      "analytic": _const([30.7, 7.0]), "delta": _const(1e-5)},
    "plotting.plot_pure_epsilon_growth": {"trials": _const([1000, 10000]), "pure_bounds": _const([0.1, 0.5]),
                                          "delta_bounds": _const([0.1, 0.4]), "delta": _const(1e-3)},
    "plotting.plot_tradeoff": {"mu": _const(0.39), "alpha_points": _const([0.1, 0.5]), "beta_points": _const([0.8, 0.3])},
    "exact.GranularParameters": {"epsilon": _const(1.0), "n": _const(1), "r": _const(2.0**-10), "t": _const(3)},
    "floating.AttackResult": {"test": _const("exact"), "loc0": _const(0.0), "loc1": _const(1.0), "size": _const(100),
                              "impossible0": _const(3), "impossible1": _const(5)},
    "snapping.SnappingParameters": {"n": _const(1), "bound": _const(8.0), "lam": _const(2.0), "grid": _const(2.0)},
    "snapping.snap": {"x": _const(np.array([0.0, 1.0])), "u": _const(np.array([0.25, 0.75])),
                      "negative": _const(np.array([True, False]))},
    "snapping.log_ratio": {"p": _const(fractions.Fraction(1, 3)), "q": _const(fractions.Fraction(1, 4))},
    "audit.pair.audit_pair": {"mechanism": lambda ctx: _zoo_count(), "x": _const(0.0), "x_prime": _const(1.0)},
    "audit.pair.PairAudit.bound_at": {"confidence_level": _const(0.9)},
    "audit.learned.fit_statistic": {"outputs_x": _const(np.zeros((4, 2))), "outputs_x_prime": _const(np.ones((4, 2)))},
    "audit.learned.fit_candidates": {"outputs_x": _const(np.zeros((4, 2))), "outputs_x_prime": _const(np.ones((4, 2)))},
    "audit.learned.fit_additive_map": {"outputs": _const(np.array([[0.0, 1.0], [0.0, 2.0], [1.0, 3.0], [0.0, 4.0]]))},
    "audit.learned.AdditiveMap": {"knots": _const((np.array([0.0, 1.0]), np.empty(0))),
                                  "atoms": _const((np.empty(0), np.array([-np.inf, 0.0])))},
    "audit.learned.AdditiveMap.transform": {"outputs": _const(np.array([[0.5, 0.0], [2.0, -np.inf]]))},
    "audit.learned.LearnedStatistic": {"model": lambda ctx: _learned().model, "kind": _const("logistic"),
                                       "width": _const(2), "infinite": _const(np.zeros(2, dtype=bool))},
    "audit.search.candidate_pairs": {"k": _const(3)},
    "audit.limits.nearest_pair": {"p": _const([0.7, 0.3]), "q": _const([0.3, 0.7]), "epsilon": _const(0.5)},
    "audit.limits.reach_probability": {"p": _const([0.7, 0.3]), "q": _const([0.3, 0.7]), "trials": _const(1000),
                                       "bound": _const(0.5)},
    "audit.limits.reach_count_probability": {"limits": _const([0.5, 0.2]), "at_least": _const(1)},
    "audit.search.search_pairs": {"mechanism": lambda ctx: _zoo_count(), "candidates": _const([(0.0, 1.0), (1.0, 0.0)]),
                                  "trials": _const(40), "pilot_trials": _const(20)},
    "audit.paired.paired_ratio_bound": {"k_num": _const(600), "k_den": _const(400), "n": _const(1000)},
    "audit.paired.paired_projection": {"p_num": _const(np.array([0.6, 0.5])), "p_den": _const(np.array([0.4, 0.45])),
                                       "n": _const(10**6), "z": _const(1.96), "error": _const(0.05)},
    "audit.pair_pool.vector_pairs": {"k": _const(3)},
    "audit.pair_pool.value_pairs": {"values": _const([0, 1, 2])},
    "audit.pair_pool.pair_moves": {"x": _const((1.0, 0.0)), "x_prime": _const((0.0, 0.0))},
    "audit.pair_search.audit_mechanism": {"mechanism": lambda ctx: _zoo_count(), "runs": _const(4000),
                                          "values": _const([0.0, 1.0])},
    "audit.pair_search.MechanismAudit": {"best": lambda ctx: _pair_audit(), "pair": _const((0.0, 1.0)),
                                         "piloted": _const(((0.0, 1.0),)), "scores": _const(np.array([0.1])),
                                         "stages": _const(np.array([0])), "runs": _const(100),
                                         "pilot_runs": _const(10), "confidence": _const(0.95)},
    "audit.search.PairSearch": {"best": lambda ctx: _pair_audit(), "index": _const(0), "pair": _const((0.0, 1.0)),
                                "pilot_bounds": _const(np.array([0.1])), "confirmed": lambda ctx: (_pair_audit(),),
                                "confidence": _const(0.95)},
    "epsilon.RapporBudget": {"lifetime": _const(4.39), "one_report": _const(2.04), "set_bit": _const(0.625),
                             "clear_bit": _const(0.375)},
    "dpsniper.mechanisms.truncated_geometric": {"data": _const(2)},
    "dpsniper.mechanisms.truncated_geometric_pmf": {"data": _const(2)},
    "dpsniper.entries.exact_output_laws": {"name": _const("ReportNoisyMax1")},
    "dpsniper.mechanisms.laplace_parallel": {"data": _const(1.0)},
    "dpsniper.mechanisms.prefix_sum": {"data": _const((1.0, 0.0, 1.0))},
    "dpsniper.mechanisms.numerical_svt": {"data": _const((1.0, 0.0, 1.0))},
    "dpsniper.mechanisms.svt34_parallel": {"data": _const((1.0, 0.0, 1.0))},
    "dpsniper.mechanisms.rappor": {"data": _const(1)},
    "dpsniper.mechanisms.one_time_rappor": {"data": _const(1)},
    "dpsniper.mechanisms.bloom_bits": {"value": _const(1)},
    "dpsniper.probabilities.rnm_index_probabilities": {"data": _const((1.0, 0.0, 1.0))},
    "dpsniper.probabilities.svt_pattern_probabilities": {"data": _const((1.0, 0.0, 1.0)), "algorithm": _const(1)},
    "audit.pair.PairAudit": {"lower_bound": _const(0.1), "estimate": _const(0.2), "event": _const("output >= 1"),
                        "counts": _const([[3, 7], [2, 8]]), "trials": _const(20)},
    "zoo.registry.ZooEntry": {"name": _const("count"), "mechanism": lambda ctx: _zoo_count_fn(), "x": _const(0.0),
                     "x_prime": _const(1.0), "private": _const(True), "true_epsilon": _const(1.0),
                     "known": _const("epsilon-DP"), "source": _const("dwork2006calibrating")},
    "zoo.registry.ZooEntry.audit": {"trials": _const(200)},
    "buglab.gaussian_count": {"data": _const(0.0)},
    "buglab.LabBug": {"key": _const("count"), "report": _const("o/r#1"), "url": _const("https://github.com/o/r/issues/1"),
                      "family": _const("a count"), "check": _const("audit"), "buggy": lambda ctx: _zoo_count_fn(),
                      "fixed": lambda ctx: _zoo_count_fn(), "true_epsilon": _const(1.0),
                      "neighbours": _const("replace one"), "x": _const(0.0), "x_prime": _const(1.0)},
    "buglab.LabBug.audit": {"trials": _const(200)},
    "zoo.counts.laplace_count": {"data": _const(0.0)},
    "zoo.counts.gaussian_count": {"data": _const(0.0)},
    "zoo.counts.randomized_response": {"data": _const(1)},
    "zoo.counts.noisy_histogram": {"data": _const((1.0, 0.0, 1.0))},
    "zoo.counts.histogram_eps": {"data": _const((1.0, 0.0, 1.0))},
    "zoo.noisy_max.report_noisy_max": {"data": _const((1.0, 0.0, 1.0))},
    "zoo.noisy_max.report_noisy_max_value": {"data": _const((1.0, 0.0, 1.0))},
    "zoo.sparse_vector.svt": {"data": _const((1.0, 0.0, 1.0))},
    "zoo.sparse_vector.svt_numerical_value": {"data": _const((1.0, 0.0, 1.0))},
    "zoo.vectors.laplace_vector": {"data": _const((1.0, 0.0, 1.0))},
    "zoo.vectors.adept_vector": {"data": _const((1.0, 0.0, 1.0))},
    "zoo.vectors.dptext_vector": {"data": _const((1.0, 0.0, 1.0))},
    "zoo.vectors.clipped_sum": {"outputs": lambda ctx: np.zeros((3, 2))},
    "zoo.vectors.first_coordinate": {"outputs": lambda ctx: np.zeros((3, 2))},
    "zoo.vectors.minimum": {"outputs": lambda ctx: np.zeros((3, 2))},
    "zoo.sparse_vector.svt_pattern": {"outputs": lambda ctx: np.array([[1.0, -np.inf, np.inf]])},
    "zoo.sparse_vector.svt_log_likelihood_ratio": {"outputs": lambda ctx: np.array([[2.0, -np.inf]]), "x": _const((1.0, 0.0)),
                                     "x_prime": _const((0.0, 1.0))},
    "gaussian.gaussian_sigma_classic": {"epsilon": _const(0.5)},  # the classic theorem needs epsilon < 1
    "approximate_dp.name_and_shame": {"records": lambda ctx: np.zeros((4, 2))},
    "exact.check_sigma": {"sigma": _const(fractions.Fraction(3, 2))},
    "exact.sample_discrete_gaussian": {"sigma": _const(fractions.Fraction(3, 2))},
    "exact.sample_discrete_gaussian_python": {"sigma": _const(fractions.Fraction(3, 2))},
    "exact.discrete_gaussian_pmf": {"sigma": _const(fractions.Fraction(3, 2)), "k": _const(np.array([0, 1, -2]))},
    "discrete_gaussian.discrete_gaussian_delta": {"sigma": _const(2), "sensitivity": _const(1)},
    "discrete_gaussian.discrete_gaussian_epsilon": {"sigma": _const(2), "sensitivity": _const(1), "delta": _const(1e-3)},
    "discrete_gaussian.discrete_gaussian_sigma": {"sensitivity": _const(1)},
    "discrete_gaussian.DiscreteGaussianRelease": {"sigma": _const(fractions.Fraction(3, 2)), "granularity": _const(0.25)},
    "discrete_gaussian.DiscreteGaussianRelease.steps": {"data": _const(1.0)},
    "discrete_gaussian.discrete_gaussian_release": {"sensitivity": _const(1), "granularity": _const(None)},
    "libraries.opendp_integer_gaussian": {"scale": _const(2.0), "size": _const(5)},
    "libraries.OpenDPGaussian": {"scale": _const(2.0)},
    "libraries.OpenDPGaussian.rho": {"sensitivity": _const(1)},
    "libraries.DiffprivlibGaussian": {"kind": _const("GaussianAnalytic"), "epsilon": _const(0.5),
                                      "delta": _const(1e-5), "sensitivity": _const(1.0)},
    "zoo.counts.exact_laplace_count": {"data": _const(0.0)},
    "zoo.counts.discrete_gaussian_count": {"data": _const(0.0)},
    "zoo.counts.exact_noisy_histogram": {"data": _const((1.0, 0.0, 1.0))},
    "zoo.counts.granular_laplace_vector": {"data": _const((1.0, 0.0, 1.0))},
    "assignments.audit.mystery_a": {"x": lambda ctx: np.zeros((3, 2))},
    "assignments.audit.mystery_b": {"x": lambda ctx: np.zeros((3, 2))},
    "assignments.feedback.Finding": {"passed": _const(True), "message": _const("ok")},
    "assignments.feedback.Feedback": {"assignment": _const("sampler"), "question": _const("q1"), "title": _const("t"),
                                  "score": _const(1.0), "points": _const(2.0), "findings": lambda ctx: (_finding(),)},
    "assignments.feedback.Question": {"name": _const("q1"), "title": _const("t"), "points": _const(1.0),
                                  "needs": _const(("f",)), "check": _const(lambda f, grading_seed=None: [])},
    "assignments.feedback.Assignment": {"name": _const("sampler"), "title": _const("t"), "notebook": _const("s.md"),
                                    "questions": lambda ctx: _grading_assignment().questions},
    "assignments.feedback.Assignment.question": {"name": _const("q1")},
    "assignments.feedback.fmt_points": {"x": _const(0.5)},
    "assignments.feedback.score": {"findings": lambda ctx: [_finding()], "points": _const(2.0)},
    "assignments.feedback.named": {"check": _const("form")},
    "assignments.feedback.call": {"fn": _const(abs)},
    "assignments.feedback.describe": {"exc": lambda ctx: ValueError("bad")},
    "assignments.feedback.as_floats": {"value": _const([1.0, 2.0])},
    "assignments.feedback.returned": {"value": _const([1.0, 2.0])},
    "assignments.feedback.is_instructor_note": {"message": _const("a message")},
    "assignments.feedback.expect_value_error": {"call": _const("f(-1)"), "value": _const(None),
                                            "exc": lambda ctx: ValueError("bad"), "why": _const("b > 0")},
    "assignments.feedback.SpyArray": {"shape": _const((3,))},
    "assignments.feedback.spy_array": {"values": lambda ctx: np.zeros(3)},
    "assignments.feedback.uniforms": {"seed": _const(1), "size": _const(5)},
    "assignments.feedback.grading_rng": {"grading_seed": _const(3)},
    "course.otter.arm_time_limit": {"seconds": _const(60.0)},
    "course.otter.export_otter": {"assignment": _const("sampler"), "outdir": lambda ctx: ctx.tmp / "otter",
                                   "wheel": lambda ctx: ctx.dptutor_wheel()},
    "course.otter.wheel_requirements": {"wheel": lambda ctx: ctx.dptutor_wheel()},
    "course.otter.myst_to_markdown": {"text": _const("(x)=\n```{note}\nSee {ref}`x`.\n```\n"), "book": _const(None)},
    "course.otter.show_feedback": {"*objects": _const((lambda m, k: 1.0 / m,)),
        "assignment": _const("mechanism"), "question": _const("q1")},
    "course.otter.show_grading_report": {"*objects": _const((lambda m, k: 1.0 / m,)),
        "assignment": _const("mechanism"), "question": _const("q1"), "step": _const(1)},
    "course.otter.grading_score": {"*objects": _const((lambda m, k: 1.0 / m,)),
        "assignment": _const("mechanism"), "question": _const("q1")},
    "course.otter.reaches": {"*objects": _const((lambda m, k: 1.0 / m,)),
        "assignment": _const("mechanism"), "question": _const("q1"), "step": _const(1)},
    "course.otter.feedback_clean": {"*objects": _const((lambda m, k: 1.0 / m,)),
        "assignment": _const("mechanism"), "question": _const("q1")},
    "course.otter_plugin.time_limit_source": {"seconds": _const(60.0)},
    # With the otter extra installed, TimeLimit is otter's AbstractOtterPlugin, constructed by otter with
    # these three (its __init__ stores them; without otter the stand-in raises ImportError and the test skips).
    "course.otter_plugin.TimeLimit": {"submission_path": lambda ctx: str(ctx.tmp / "submission.ipynb"),
                                       "submission_metadata": lambda ctx: {},
                                       "plugin_config": lambda ctx: {"seconds": 60}},
    "course.otter_plugin.TimeLimit.before_execution": {"submission": lambda ctx: _otter_submission()},
    "assignments.pair_audit.mystery_pair": {"data": _const(0.0)},
    "assignments.instances.AuditMember": {"broken": _const("A"), "bug": _const("l2")},
    "assignments.instances.AuditMember.scale": {"label": _const("A")},
    "assignments.instances.AuditMember.one_sided": {"label": _const("A")},
    "assignments.instances.AuditMember.verdict": {"label": _const("A")},
    "assignments.instances.PairMember": {"columns": _const(3), "spread": _const(0.8)},
    "assignments.bug_family.BughuntMember": {"histogram": _const("none"), "squares": _const("wrong-bound"),
                                             "selection": _const("half-sensitivity")},
    **{f"assignments.bug_family.BughuntMember.{m}": {"label": _const("squares")}
       for m in ("bug", "calibration", "true_epsilon", "verdict")},
    "assignments.bug_family.hunt_release": {"member": lambda ctx: _hunt_member(), "label": _const("squares"),
                                            "data": _const([2.0, 3.0])},
    "assignments.bug_family.neighbour_problem": {"label": _const("squares"), "x": _const([2.0]),
                                                 "x_prime": _const([2.0, 3.0])},
    "assignments.bughunt.mechanism_histogram": {"data": _const([3, 1])},
    "assignments.bughunt.mechanism_squares": {"data": _const([2.0, 3.0])},
    "assignments.bughunt.mechanism_selection": {"data": _const([0.0, 1.0, 2.0])},
    "assignments.bughunt.hunt_audit": {"label": _const("squares"), "spec": _const(
        {"x": [2.0], "x_prime": [2.0, 3.0], "trials": 50_000, "seed": 1})},
    "course.keys.course_tokens": {"secret": _const(_COURSE_SECRET)},
    "course.keys.course_key": {"secret": _const(_COURSE_SECRET)},
    "course.keys.tokens_of_key": {"key": lambda ctx: _course_key()},
    "course.keys.members_of_key": {"key": lambda ctx: _course_key()},
    "course.keys.use_answer_key": {"key": lambda ctx: _course_key()},
    "assignments.instances.answer_member": {"assignment": _const("audit")},
    "assignments.instances.member_of": {"token": lambda ctx: _course_token("audit")},
    "assignments.instances.use_course": {"token": lambda ctx: _course_token("pair_audit")},
    "assignments.instances.active_member": {"assignment": _const("audit")},
    "course.keys.course_scope": {"key": lambda ctx: _course_key()},
    "assignments.instances.use_answers": {"members": lambda ctx: _course_members()},
    "assignments.instances.answers_scope": {"members": lambda ctx: _course_members()},
    "assignments.instances.audit_mystery": {"label": _const("B"), "x": lambda ctx: np.zeros((3, 2))},
    "assignments.instances.pair_mystery": {"data": _const(0.0)},
    "course.folders.CourseFolder": {"folder": lambda ctx: ctx.tmp / "course", "name": _const("dp-2026"),
                                    "key": lambda ctx: _course_key()},
    "course.folders.new_course": {"folder": lambda ctx: ctx.tmp / "course", "secret": _const(_COURSE_SECRET),
                                  "name": _const("dp-2026")},
    "course.folders.load_course": {"folder": lambda ctx: ctx.course_folder()},
    "course.folders.course_notebook": {"assignment": _const("pair_audit"), "member": lambda ctx: _pair_member(),
                                       "name": _const("dp-2026"), "text": lambda ctx: _pair_instructor_text()},
    "course.folders.answer_lines": {"assignment": _const("pair_audit"), "member": lambda ctx: _pair_member()},
    "course.folders.fill_slots": {"text": _const("a\n# BEGIN SLOT x\nb\n# END SLOT x\n"), "values": _const({"x": "c\n"})},
    "course.release.with_banner": {"text": _const("---\njupytext: {}\n---\n# Title\n"), "source": _const("a.md"),
                                   "command": _const("python -m dptutor release")},
    "course.release.released_notebook": {"text": _const("---\njupytext: {}\n---\n# Title\n"),
                                         "notebook": _const("sampler.md")},
    "assignments.selection.above_threshold_law": {"answers": _const([0.0, 1.0, 0.5]), "threshold": _const(0.5),
                                              "rho_scale": _const(2.0), "nu_scale": _const(4.0)},
    "assignments.selection.audit_pairs": {"offset": _const(0.0)},
    "assignments.record.measure": {"f": _const(_student_sampler), "inputs": _const([np.array([0.2, 0.7])])},
    "assignments.record.reference_seconds": {"reference": _const(_student_sampler), "inputs": _const([np.array([0.2, 0.7])])},
    "assignments.record.call_many": {"f": _const(_student_sampler), "calls": _const([((np.array([0.3]), 0.0, 1.0), {})])},
    "assignments.record.flag_for_review": {"text": _const("look at this")},
    "course.remote.grade_question": {"run_cell": lambda ctx: _run_nothing, "assignment": _const("sampler"),
                                      "question": _const("q1"), "workdir": lambda ctx: str(ctx.tmp), "timeout": _const(5.0)},
    # mechanism's first question checks in milliseconds (the sampler's timing took a second per accepted value)
    "course.remote.grade_in_process": {"namespace": lambda ctx: {"mean_sensitivity": lambda m, k: k / m},
                                        "assignment": _const("mechanism")},
    "assignments.kernel.KernelCalls": {"namespace": lambda ctx: {"f": _student_sampler},
                                   "request": lambda ctx: _grading_request(ctx), "answer": _const("answer.npz")},
    "assignments.kernel.kernel_needs": {"namespace": lambda ctx: {"f": _student_sampler}, "names": _const(["f", "g"]),
                                    "answer": _const("needs.npz")},  # bare names: the test runs in ctx.tmp
    "assignments.registry.record_types": {"assignment": _const("audit")},
    "assignments.registry.get_assignment": {"name": _const("sampler")},
    "assignments.registry.check": {"*objects": _const((lambda m, k: 1.0 / m,)),
        "assignment": _const("mechanism"), "question": _const("q1")},
    "assignments.registry.checker": {"assignment": _const("sampler")},
    "course.release.student_version": {"text": _const("a\n# BEGIN SOLUTION\nb\n# END SOLUTION\n")},
    "course.release.release": {"folder": lambda ctx: ctx.release_folder()},
    "course.result.SubmissionResult": {"file": _const("tiny.ipynb"), "assignment": _const("sampler"),
                                        "scores": _const({"q1": 1.0, "q2": 0.0, "q3": 0.5}),
                                        "points": _const({"q1": 2.0, "q2": 1.0, "q3": 1.0})},
    "course.result.SubmissionResult.row": {"assignment": lambda ctx: _grading_assignment()},
    # One kernel per valid call: a one-cell notebook and short limits.
    # (unsandboxed: the suite's own one-cell notebook; tests/course/test_hostile_sandbox.py grades in the sandbox)
    "course.executor.grade_notebook": {"path": lambda ctx: ctx.submissions() / "tiny.ipynb",
                                      "assignment": _const("sampler"), "timeout": _const(5.0),
                                      "total_timeout": _const(30.0), "sandbox": _const("none")},
    "course.batch.grade_folder": {"assignment": _const("sampler"), "folder": lambda ctx: ctx.submissions(),
                                    "timeout": _const(5.0), "total_timeout": _const(30.0), "sandbox": _const("none")},
    "course.sandbox.Sandbox": {"kind": _const("none")},
    "course.sandbox.Sandbox.command": {"connection_file": lambda ctx: str(ctx.tmp / "kernel.json"),
                                        "workdir": lambda ctx: str(ctx.tmp), "kernel_dir": lambda ctx: str(ctx.tmp),
                                        "name": _const("fuzz")},
    "course.sandbox.Sandbox.stop": {"name": _const("fuzz"), "pid": _const(None)},
    "course.sandbox.kernel_manager": {"sandbox": lambda ctx: __import__("dptutor.course.sandbox", fromlist=["Sandbox"]).Sandbox("none"),
                                       "workdir": lambda ctx: str(ctx.tmp), "kernel_dir": lambda ctx: str(ctx.tmp),
                                       "name": _const("fuzz")},
    "course.batch.read_csv": {"path": lambda ctx: _scores_csv(ctx), "assignment": _const("sampler")},
    "course.batch.write_csv": {"results": lambda ctx: [_submission_result()], "path": lambda ctx: ctx.tmp / "out.csv",
                                 "assignment": _const("sampler")},
    "course.grade.GradeOptions": {"assignment": _const("sampler"), "submissions": lambda ctx: ctx.grade_options().submissions},
    "course.grade.run_grade": {"options": lambda ctx: ctx.grade_options()},
    "course.textsafe.csv_text": {"cell": _const("'=1+1")},
    "course.intake.read_student_cells": {"path": lambda ctx: ctx.submissions() / "tiny.ipynb"},
    "course.intake.capped_client": {"limit": _const(1024)},
    "course.intake.read_regular": {"path": lambda ctx: ctx.submissions() / "tiny.ipynb", "limit": _const(1 << 20)},
    "course.intake.read_named": {"path": lambda ctx: ctx.submissions() / "tiny.ipynb", "limit": _const(1 << 20),
                                 "role": _const("the notebook")},
    "course.textsafe.feedback_name": {"file": _const("a.md")},
    # The course workflow: configuration, overrides, score files, layouts, LMS export.
    "course.config.GradingConfig.question_points": {"assignment": lambda ctx: _grading_assignment()},
    "course.config.GradingConfig.late_factor": {"submitted": _const("2026-03-03T10:00:00+00:00")},
    "course.config.Override": {"student": _const("tiny"), "question": _const("q1"), "score": _const(1.0),
                                "reason": _const("checked by hand")},
    "course.config.load_config": {"path": lambda ctx: _grading_config(ctx), "assignment": lambda ctx: _grading_assignment()},
    "course.config.read_overrides": {"path": lambda ctx: _overrides_csv(ctx), "assignment": lambda ctx: _grading_assignment()},
    "course.config.read_manifest": {"path": lambda ctx: _manifest_csv(ctx)},
    "course.scores.ScoreRecord": {"result": lambda ctx: _submission_result()},
    "course.scores.ScoreRecord.matches": {"override": lambda ctx: _override()},
    "course.scores.ScoreRecord.row": {"assignment": lambda ctx: _grading_assignment()},
    "course.scores.scores_header": {"assignment": lambda ctx: _grading_assignment()},
    "course.scores.default_scores_name": {"assignment": lambda ctx: _grading_assignment()},
    "course.scores.read_scores": {"path": lambda ctx: _scores_csv(ctx), "assignment": lambda ctx: _grading_assignment()},
    "course.scores.write_scores": {"path": lambda ctx: ctx.tmp / "out.csv", "assignment": lambda ctx: _grading_assignment(),
                                    "records": lambda ctx: [_score_record()]},
    "course.submissions.Submission": {"name": _const("tiny.ipynb"), "path": lambda ctx: ctx.submissions() / "tiny.ipynb"},
    "course.submissions.find_submissions": {"folder": lambda ctx: ctx.submissions()},
    "course.submissions.student_identity": {"name": _const("smithjane_123_456_sampler.ipynb")},
    "course.lms.lms_rows": {"lms": _const("canvas"), "assignment": _const("sampler"), "scores": lambda ctx: _scores_csv(ctx)},
    "course.lms.export_lms": {"lms": _const("canvas"), "assignment": _const("sampler"), "scores": lambda ctx: _scores_csv(ctx),
                               "out": lambda ctx: ctx.tmp / "canvas.csv"},
    # Re-scoring and hand grading (issue 36).
    "course.reports.student_feedback": {"record": lambda ctx: _score_record()},
    "course.reports.instructor_report_path": {"csv_path": lambda ctx: ctx.tmp / "scores.csv"},
    "course.reports.write_instructor_report": {"csv_path": lambda ctx: ctx.tmp / "scores.csv",
                                                "assignment": lambda ctx: _grading_assignment(),
                                                "records": lambda ctx: [_score_record()]},
    "course.rescore.RescoreOptions": {"assignment": _const("sampler"), "csv": lambda ctx: _scores_file(ctx)},
    "course.rescore.rescore": {"options": lambda ctx: _rescore_options(ctx)},
    "course.rescore.run_rescore": {"options": lambda ctx: _rescore_options(ctx)},
    "course.handgrade.collect": {"assignment": _const("audit"), "submissions": lambda ctx: ctx.submissions(),
                                 "records": lambda ctx: [], "out": lambda ctx: ctx.tmp / "hand"},
    "course.handgrade.read_hand_grades": {"path": lambda ctx: _hand_csv(ctx), "assignment": _const("sampler"),
                                          "records": lambda ctx: [_score_record()]},
    "course.handgrade.apply": {"filled": lambda ctx: _hand_csv(ctx),
                               "options": lambda ctx: _rescore_options(ctx, overrides=ctx.tmp / "o.csv")},
    "selection.exponential_mechanism_exact": {"scores": _const([0, 1, 2]), "base": _const(2)},
    "selection.max_log_ratio": {"p": _const(np.array([0.5, 0.5])), "p_prime": _const(np.array([0.25, 0.75]))},
    "accounting.advanced_composition": {"k": _const(10), "delta_prime": _const(1e-6)},
    "accounting.basic_composition": {"k": _const(10)},
    "accounting.optimal_composition_delta": {"k": _const(10), "epsilon_total": _const(2.0)},
    "accounting.optimal_composition_epsilon": {"k": _const(10), "delta_total": _const(1e-6)},
    "accounting.group_privacy": {"k": _const(3)},
    "renyi.rdp_gaussian": {"order": _const(2.0)},
    "renyi.rdp_subsampled_gaussian": {"order": _const(4), "sampling_probability": _const(0.1)},
    "renyi.rdp_to_dp": {"orders": _const(np.array([2.0, 4.0])), "rdp": _const(np.array([0.1, 0.3]))},
    "renyi.zcdp_to_dp": {"rho": _const(0.1)},
    "renyi.round_up": {"exact": _const(fractions.Fraction(1, 3))},
    "renyi.round_down": {"exact": _const(fractions.Fraction(1, 3))},
    "pld.PrivacyLossDistribution": {"grid": _const(0.5), "offset": _const(-1),
                                           "pmf": _const(np.array([0.25, 0.5, 0.25]))},
    "pld.PrivacyLossDistribution.compose": {"k": _const(3)},
    "pld.gaussian_composition_epsilon": {"k": _const(3), "grid": _const(1e-3)},
    "composition.Budget": {"total": _const(1.0)},
    "composition.Budget.spend": {"epsilon": _const(0.1)},
    "composition.repeated_laplace_box_loss": {"k": _const(3)},
    "composition.majority_vote_loss": {"k": _const(3)},
    "composition.Budget.split": {"k": _const(4)},
    "composition.CompositionProof": {"joint_loss": lambda ctx: _sympy_zero(), "sum_of_losses": lambda ctx: _sympy_zero(),
                                     "factorizes": _const(True), "bound_gap": lambda ctx: _sympy_zero(),
                                     "bounded": _const(True), "region_gaps": _const(())},
}
# The additive model lives in the private dptutor.audit._learned_maps, re-exported by both dptutor.audit.learned and
# dptutor.audit, so the fuzz suite meets it under both names.
for _name in ("fit_additive_map", "AdditiveMap", "AdditiveMap.transform"):
    VALID_FOR[f"audit.{_name}"] = VALID_FOR[f"audit.learned.{_name}"]


def _otter_submission():
    """What otter hands the plugin before executing a submission: the notebook, one code cell."""
    import nbformat

    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])


def _finding():
    from dptutor.assignments.feedback import Finding

    return Finding(True, "ok")


def _grading_assignment():
    from dptutor.assignments import get_assignment

    return get_assignment("sampler")


def _submission_result():
    from dptutor.course.result import SubmissionResult

    return SubmissionResult("tiny.ipynb", "sampler", {"q1": 1.0, "q2": 0.0, "q3": 0.5}, {"q1": 2.0, "q2": 1.0, "q3": 1.0})


def _scores_csv(ctx: Context) -> Path:
    from dptutor.course.batch import write_csv

    path = ctx.tmp / "scores.csv"
    write_csv([_submission_result()], path, "sampler")
    return path


def _grading_config(ctx: Context) -> Path:
    path = ctx.tmp / "grading.toml"
    path.write_text('course = "fuzz"\n[points]\nq1 = 4\n[limits]\ncell = 30\n'
                    '[late]\ndeadline = 2026-03-02T23:59:00Z\ngrace_minutes = 15\nmultiplier = 0.8\n')
    return path


def _overrides_csv(ctx: Context) -> Path:
    path = ctx.tmp / "overrides.csv"
    path.write_text("student,question,score,reason\ntiny,q1,1.5,checked by hand\n")
    return path


def _manifest_csv(ctx: Context) -> Path:
    path = ctx.tmp / "manifest.csv"
    path.write_text("file,submitted\ntiny.ipynb,2026-03-02T22:00:00+01:00\n")
    return path


def _override():
    from dptutor.course.config import Override

    return Override("tiny", "q1", 1.5, "checked by hand")


def _score_record():
    from dptutor.course.scores import ScoreRecord

    return ScoreRecord(_submission_result(), "fuzz", overrides=(_override(),))


def _scores_file(ctx: Context) -> Path:
    """A scores CSV of ``sampler`` with one row (``tiny.ipynb``), as ``grade`` writes it."""
    from dptutor.course.scores import write_scores

    path = ctx.tmp / "scores-sampler.csv"
    write_scores(path, _grading_assignment(), [_score_record()])
    return path


def _rescore_options(ctx: Context, **kwargs: Any):
    from dptutor.course.rescore import RescoreOptions

    return RescoreOptions("sampler", _scores_file(ctx), feedback=ctx.tmp / "feedback", **kwargs)


def _hand_csv(ctx: Context) -> Path:
    path = ctx.tmp / "handgrade-sampler.csv"
    path.write_text("file,student,question,max,points,reason\ntiny.ipynb,tiny,q1,2,1.5,read by hand\n")
    return path


async def _run_nothing(source: str, limit: float) -> tuple[dict, float]:
    return {"outputs": []}, 0.0


def _grading_request(ctx: Context) -> str:
    """A request file of the grader: one call of ``f`` on three uniforms, named as the grader names
    it to the kernel (a bare name in the working folder, ``ctx.tmp``)."""
    from dptutor.assignments.encoding import Writer

    path = str(ctx.tmp / "request.npz")
    writer = Writer()
    writer.save(path, {"version": 2, "calls": [{"fn": "f", "args": [writer.encode(np.array([0.1, 0.5, 0.9]))],
                                                "kwargs": []}]})
    return "request.npz"


def _zoo_count_fn():
    from dptutor.zoo import laplace_count

    return laplace_count


def _zoo_count():
    from dptutor.zoo import ZOO

    return ZOO["laplace_count"].release()


def _learned():
    from dptutor.audit import fit_statistic

    return fit_statistic(np.zeros((4, 2)), np.ones((4, 2)), model="logistic")  # matches kind="logistic" below


def _pair_audit():
    from dptutor.audit import PairAudit

    return PairAudit(lower_bound=0.1, estimate=0.2, event="output >= 1", counts=[[3, 7], [2, 8]], trials=20, epsilon=1.0)


def _sympy_zero():
    import sympy

    return sympy.Integer(0)


def _granular():
    from dptutor.exact import granular_parameters

    return granular_parameters(1.0)


def _snapping():
    from dptutor.floating import snapping_parameters

    return snapping_parameters(1.0)


def _attack_result():
    from dptutor.floating import attack

    return attack("numpy", 1.0, 64, rng=np.random.default_rng(0))


def _symbols():
    from dptutor.symbolic import symbols

    return symbols()


def _audit_cell():
    from dptutor.audit import AuditCell
    from dptutor.mechanisms import laplace_mechanism

    return AuditCell(laplace_mechanism, 2, 1.0, 200, seed=1)


# ---------------------------------------------------------------------------------------------
# bad values: a common set for every parameter, plus more by the kind of its valid value
# ---------------------------------------------------------------------------------------------


class _FloatRaises:
    """A number-like object whose conversions raise."""

    def __float__(self) -> float:
        raise RuntimeError("__float__ raised")

    def __int__(self) -> int:
        raise RuntimeError("__int__ raised")

    def __index__(self) -> int:
        raise RuntimeError("__index__ raised")

    def __len__(self) -> int:
        raise RuntimeError("__len__ raised")

    def __iter__(self):
        raise RuntimeError("__iter__ raised")

    def __repr__(self) -> str:
        return "_FloatRaises()"


def _common() -> list[tuple[str, Any]]:
    return [
        ("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf), ("0", 0), ("0.0", 0.0), ("-1", -1),
        ("-0.5", -0.5), ("1e308", 1e308), ("-1e308", -1e308), ("5e-324", 5e-324), ("10**15", 10**15),
        ("-10**15", -10**15), ("2**64", 2**64), ("True", True), ("False", False), ("np.True_", np.True_),
        ("'abc'", "abc"), ("''", ""), ("'1'", "1"), ("None", None), ("b'x'", b"x"), ("object()", object()),
        ("float raises", _FloatRaises()), ("generator", (i for i in range(3))), ("[]", []), ("{}", {}),
        ("1+2j", 1 + 2j), ("float32 nan", np.float32("nan")), ("uint64 2**63", np.uint64(2**63)),
        ("0-d nan", np.array(math.nan)), ("empty array", np.array([])), ("3 floats", np.array([1.0, 2.0, 3.0])),
        ("3-d array", np.zeros((2, 3, 4))), ("str array", np.array(["a"])), ("complex array", np.array([1 + 1j])),
        ("object array", np.array([None], dtype=object)), ("Decimal nan", decimal.Decimal("NaN")),
        ("huge Fraction", fractions.Fraction(10**400, 3)), ("callable -> None", lambda *a, **k: None),
        ("RandomState", np.random.RandomState(0)), ("SeedSequence", np.random.SeedSequence(0)),
    ]


def _like(valid: Any) -> list[tuple[str, Any]]:
    """Bad values shaped like ``valid``: right container, wrong content."""
    out: list[tuple[str, Any]] = []
    if isinstance(valid, np.ndarray) and valid.size:
        out += [("with NaN", np.where(np.arange(valid.size).reshape(valid.shape) == 0, math.nan, valid)),
                ("with inf", np.full(valid.shape, math.inf)), ("bool dtype", np.zeros(valid.shape, dtype=bool)),
                ("complex dtype", valid.astype(complex)), ("object dtype", valid.astype(object)),
                ("transposed", np.zeros(valid.shape[::-1] + (2,))), ("flattened", valid.reshape(-1)[:1]),
                ("read-only", np.zeros(valid.shape)), ("strided", np.zeros(tuple(2 * s for s in valid.shape))[::2])]
        out[-2][1].setflags(write=False)
    elif isinstance(valid, (tuple, list)) and valid:
        first = valid[0]
        out += [("item NaN", type(valid)([math.nan, *valid[1:]])), ("item str", type(valid)(["x", *valid[1:]])),
                ("item None", type(valid)([None, *valid[1:]])), ("one short", type(valid)(valid[:-1])),
                ("one more", type(valid)([*valid, first])), ("as generator", (v for v in valid)),
                ("item list", type(valid)([[first], *valid[1:]]))]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in valid):
            out += [("items x10 + 1", type(valid)(10 * v + 1 for v in valid)),
                    ("items negated", type(valid)(-v - 1 for v in valid))]
    elif isinstance(valid, Mapping) and valid:
        key = next(iter(valid))
        out += [("value NaN", {key: math.nan}), ("value None", {key: None}), ("int key", {1: valid[key]}),
                ("value str", {key: "x"})]
    elif isinstance(valid, bool):
        out += [("int 1", 1), ("str 'True'", "True")]
    elif isinstance(valid, int):
        out += [("float 2.0", 2.0), ("float 1.5", 1.5), ("int8 -1", np.int8(-1)), ("str '2'", "2")]
    elif isinstance(valid, float):
        out += [("Fraction", fractions.Fraction(1, 3)), ("float16", np.float16(0.5)), ("tiny", 1e-320)]
    elif isinstance(valid, str):
        out += [("unknown choice", "no-such-choice"), ("str array", np.array([valid, valid])), ("bytes", valid.encode())]
    elif callable(valid):
        out += [("returns NaN", lambda *a, **k: math.nan), ("returns str", lambda *a, **k: "x")]
    return out


def bad_values(valid: Any) -> list[tuple[str, Any]]:
    return _common() + _like(valid)


# ---------------------------------------------------------------------------------------------
# discovery
# ---------------------------------------------------------------------------------------------


def _modules() -> list[str]:
    """Every public module, subpackages' modules included (``course.executor``), as dotted names
    relative to ``dptutor``."""
    found = []
    for m in pkgutil.walk_packages(dptutor.__path__, prefix="dptutor."):
        name = m.name.removeprefix("dptutor.")
        parts = name.split(".")
        if any(p.startswith("_") for p in parts) or parts[0] in EXCLUDED_MODULES:
            continue
        found.append(name)
    return sorted(found)


def _defined_elsewhere(obj: Any, modname: str, modules: list[str]) -> bool:
    """True if ``obj`` is re-exported by ``modname`` from another fuzzed module that lists it in
    ``__all__`` (it is fuzzed there, under its home module's name, not twice)."""
    home = getattr(obj, "__module__", None) or ""
    home = home.removeprefix("dptutor.")
    if home == modname or home not in modules:
        return False
    return getattr(obj, "__name__", None) in getattr(importlib.import_module(f"dptutor.{home}"), "__all__", ())


@dataclasses.dataclass(frozen=True)
class Target:
    module: str
    qualname: str  # "name" or "Class.method"

    @property
    def key(self) -> str:
        return f"{self.module}.{self.qualname}"


def _is_protocol(obj: Any) -> bool:
    return isinstance(obj, type) and bool(getattr(obj, "_is_protocol", False))


def _is_exception(obj: Any) -> bool:
    """Exception classes are raised, not called with data: nothing to fuzz."""
    return isinstance(obj, type) and issubclass(obj, BaseException)


def _targets() -> list[Target | str]:
    """Every public callable, or an error message (a module without ``__all__``)."""
    found: list[Target | str] = []
    modules = _modules()
    for modname in modules:
        module = importlib.import_module(f"dptutor.{modname}")
        names = getattr(module, "__all__", None)
        if names is None:
            found.append(f"dptutor.{modname} has no __all__: list its public names there")
            continue
        for name in names:
            obj = getattr(module, name)
            if not callable(obj) or _is_protocol(obj) or _is_exception(obj) or _defined_elsewhere(obj, modname, modules):
                continue
            found.append(Target(modname, name))
            if isinstance(obj, type):
                for attr, member in vars(obj).items():
                    func = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
                    if attr.startswith("_") or not inspect.isfunction(func):
                        continue
                    if len(inspect.signature(func).parameters) > (0 if isinstance(member, staticmethod) else 1):
                        found.append(Target(modname, f"{name}.{attr}"))
    return found


def _resolve(target: Target, ctx: Context) -> tuple[Callable, inspect.Signature]:
    """The callable (a bound method on a valid instance for methods) and its signature."""
    module = importlib.import_module(f"dptutor.{target.module}")
    if "." not in target.qualname:
        obj = getattr(module, target.qualname)
        sig = inspect.signature(obj)
        return _with_varargs(obj, sig, target, ctx), sig
    cls_name, meth = target.qualname.split(".")
    cls = getattr(module, cls_name)
    raw = vars(cls)[meth]
    if isinstance(raw, (classmethod, staticmethod)):
        fn = getattr(cls, meth)
    else:
        fn = getattr(cls(**_valid_kwargs(Target(target.module, cls_name), ctx)), meth)
    return fn, inspect.signature(fn)


def _with_varargs(obj: Callable, sig: inspect.Signature, target: Target, ctx: Context) -> Callable:
    """``obj`` called with keyword arguments, plus the positional ``*args`` that
    ``VALID_FOR[key]["*args"]`` gives (the parameters before ``*args`` are passed by position)."""
    star = [p for p in sig.parameters.values() if p.kind is p.VAR_POSITIONAL]
    extra_key = f"*{star[0].name}" if star else None
    if extra_key not in VALID_FOR.get(target.key, {}):
        return obj
    extra = tuple(VALID_FOR[target.key][extra_key](ctx))
    before = [p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def call(**kwargs: Any) -> Any:
        return obj(*(kwargs.pop(n) for n in before), *extra, **kwargs)

    return call


def _valid_kwargs(target: Target, ctx: Context) -> dict[str, Any]:
    """Valid keyword arguments for ``target``: :data:`VALID_FOR`, :data:`VALID_FOR_MODULE`, the
    parameter's default, then :data:`VALID` by name."""
    module = importlib.import_module(f"dptutor.{target.module}")
    obj = getattr(module, target.qualname) if "." not in target.qualname else None
    sig = inspect.signature(obj) if obj is not None else _resolve(target, ctx)[1]
    overrides = {**VALID_FOR_MODULE.get(target.module, {}), **VALID_FOR.get(target.key, {})}
    kwargs: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in overrides:
            kwargs[p.name] = overrides[p.name](ctx)
        elif p.default is not p.empty and not (p.name in VALID and target.key in _SLOW_DEFAULTS):
            kwargs[p.name] = p.default
        elif p.name in VALID:
            kwargs[p.name] = VALID[p.name](ctx)
        else:
            raise LookupError(
                f"the fuzz suite does not know a valid value for parameter {p.name!r} of dptutor.{target.key}: "
                f"add VALID[{p.name!r}] (by name) or VALID_FOR[{target.key!r}][{p.name!r}] in tests/library/test_fuzz.py"
            )
    return kwargs


#: Callables whose defaults are the paper's full-scale settings (minutes of work): their named
#: parameters take :data:`VALID` values instead of the defaults.
_SLOW_DEFAULTS: frozenset[str] = frozenset({"experiments.run_grid", "experiments.repeat_loss"})


# ---------------------------------------------------------------------------------------------
# running one call
# ---------------------------------------------------------------------------------------------


class _Hang(BaseException):
    pass


def _has_nan(obj: Any, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(obj, (float, np.floating)):
        return math.isnan(obj)
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind in "fc" and bool(np.isnan(obj).any())
    if isinstance(obj, (tuple, list)):
        return any(_has_nan(o, depth + 1) for o in obj)
    if isinstance(obj, Mapping):
        return any(_has_nan(o, depth + 1) for o in obj.values())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return any(_has_nan(getattr(obj, f.name), depth + 1) for f in dataclasses.fields(obj))
    import sympy

    if isinstance(obj, sympy.Basic):
        return obj.has(sympy.nan) or obj.has(sympy.zoo)
    return False


def _names(message: str, param: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(param)}(?![A-Za-z0-9_])", message) is not None


def _on_alarm(signum, frame):
    raise _Hang()


def _same(value: Any, valid: Any) -> bool:
    """Whether ``value`` is the valid value itself: the same object, or an equal number, string or None of the
    same type (``True`` is not ``1``)."""
    plain = (bool, int, float, str, type(None))
    return value is valid or (type(value) is type(valid) and isinstance(value, plain) and value == valid)


def _call(fn: Callable, kwargs: dict[str, Any], param: str | None, nan_ok: bool,
          timeout: float = TIMEOUT) -> str | None:
    """Run ``fn(**kwargs)``; return None if the outcome is acceptable, else what went wrong."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    problem: str | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            result = fn(**kwargs)
            if not nan_ok and _has_nan(result):
                problem = f"returned NaN: {repr(result)[:100]}"
        except _Hang:
            problem = f"did not return within {timeout:g} s"
        except (ValueError, TypeError) as exc:
            if param is not None and not _names(str(exc), param):
                problem = f"{type(exc).__name__} does not name {param!r}: {str(exc)[:150]}"
            elif param is None:
                problem = f"the valid call raised {type(exc).__name__}: {str(exc)[:150]}"
        except Exception as exc:  # noqa: BLE001 - the point is to report every other exception
            problem = f"raised {type(exc).__name__} (not ValueError/TypeError): {str(exc)[:150]}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            plt.close("all")
    if caught and not (problem or "").startswith("did not return"):
        w = caught[0]
        problem = (problem + "; " if problem else "") + f"warned {w.category.__name__}: {str(w.message)[:120]}"
    return problem


# ---------------------------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _restore_process_state():
    """Undo what a fuzzed call may set for the whole process: the SIGALRM handler and the otter
    grader's time limit (:func:`dptutor.course.otter.arm_time_limit` arms both, by design), and the
    course whose mysteries are in use (:func:`dptutor.assignments.instances.use_course`)."""
    import dptutor.course.otter as otter

    from dptutor.assignments.instances import use_self_study

    handler, limit = signal.getsignal(signal.SIGALRM), otter.TIME_LIMIT
    yield
    use_self_study()  # a fuzzed use_course or course_scope leaves the book's mysteries in place
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, handler)
    otter.TIME_LIMIT = limit

TARGETS = _targets()


def test_discovery_finds_every_module():
    """Every public module is fuzzed (a module without ``__all__`` fails here)."""
    problems = [t for t in TARGETS if isinstance(t, str)]
    assert not problems, "\n".join(problems)
    fuzzed = {t.module for t in TARGETS if isinstance(t, Target)}
    assert {"distributions", "mechanisms", "experiments", "grid_files", "plotting", "exact", "selection",
            "accounting", "approximate_dp"} <= fuzzed
    # The zoo, DP-Sniper's benchmark and the sympy derivations are packages (their names re-exported).
    assert {"symbolic.laplace", "symbolic.dptext", "symbolic.privacy_loss", "zoo.counts", "zoo.noisy_max",
            "zoo.sparse_vector", "zoo.vectors", "zoo.registry", "dpsniper.mechanisms", "dpsniper.probabilities",
            "dpsniper.entries"} <= fuzzed
    # The audit package's modules too (its public names are re-exported from dptutor.audit).
    assert {"audit.sanity", "audit.pair", "audit.learned", "audit.search", "audit.limits"} <= fuzzed
    # The course assignments' modules are discovered too (walk_packages), the notebook runner included.
    assert {"assignments.feedback", "assignments.registry", "assignments.record", "assignments.kernel",
            "course.remote", "course.executor", "course.batch", "course.grade", "course.textsafe", "course.release",
            "assignments.audit", "assignments.pair_audit", "course.otter", "assignments.selection", "course.config",
            "course.scores", "course.submissions", "course.lms", "course.sandbox", "assignments.instances",
            "course.folders", "course.keys"} <= fuzzed


@pytest.mark.parametrize("target", [t for t in TARGETS if isinstance(t, Target)], ids=lambda t: t.key)
def test_bad_values_are_refused_cleanly(target: Target, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # anything written to a relative path lands here
    ctx = Context(tmp_path)
    if target.module == "course.release":
        # release(folder=None) rewrites the book's own student notebooks: a fuzz call doing that would
        # also re-release them behind the back of the test that checks they agree with the instructor's.
        monkeypatch.setattr(importlib.import_module("dptutor.course.release"), "book_assignments_folder",
                            ctx.release_folder)
    try:
        fn, sig = _resolve(target, ctx)
        valid = _valid_kwargs(target, ctx)
    except LookupError as exc:
        pytest.fail(str(exc))
    except ImportError as exc:  # a method of a class that needs an optional extra: as below
        assert "dptutor[" in str(exc), f"dptutor.{target.key}: ImportError without 'install dptutor[extra]': {exc}"
        pytest.skip(f"optional dependency missing: {exc}")
    nan_ok = (target.module, target.qualname) in NAN_BY_DESIGN
    timeout = KERNEL_TIMEOUT if target.key in KERNEL_TARGETS else TIMEOUT
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if target.key not in KERNEL_TARGETS:  # a first call (one-off import noise); kernels are costly
                fn(**_valid_kwargs(target, ctx))
    except ImportError as exc:
        # An optional extra that is not installed: the one-line error must say how to get it.
        assert "dptutor[" in str(exc), f"dptutor.{target.key}: ImportError without 'install dptutor[extra]': {exc}"
        pytest.skip(f"optional dependency missing: {exc}")
    except Exception:  # noqa: BLE001 - reported, with the details, just below
        pass
    finally:
        plt.close("all")
    problem = _call(fn, _valid_kwargs(target, ctx), None, nan_ok, timeout)
    assert problem is None, (
        f"dptutor.{target.key} with the suite's valid arguments {valid!r}: {problem}; "
        "fix VALID/VALID_FOR in tests/library/test_fuzz.py or the function"
    )
    failures = []
    for param in valid:
        for label, bad in bad_values(valid[param]):
            if _same(bad, valid[param]):  # the valid call again (a None default among the bad values): done above
                continue
            fn, _ = _resolve(target, ctx)
            kwargs = _valid_kwargs(target, ctx)
            kwargs[param] = bad
            problem = _call(fn, kwargs, param, nan_ok, timeout)
            if problem:
                failures.append(f"{param}={label}: {problem}")
    assert not failures, f"dptutor.{target.key}: {len(failures)} bad call(s)\n  " + "\n  ".join(failures)
