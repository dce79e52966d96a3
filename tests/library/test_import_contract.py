"""The package's import contract, read from the source with :mod:`ast` (no import-linter needed).

(a) The trust boundary: ``dptutor.assignments`` runs in the student's kernel and ``dptutor.course``
    only in the grader.  No module of ``dptutor.assignments`` and no teaching module (everything in
    ``dptutor/`` outside ``dptutor/course/``, ``dptutor/cli.py`` and the ``__main__`` entry point)
    imports ``dptutor.course``, at any depth of the source (a function-local import counts, and so does
    ``importlib.import_module("...")`` or ``__import__("...")`` with a constant name); and nothing
    ``dptutor.assignments`` imports, directly or through other modules, is in ``dptutor.course``.
(b) No import cycle anywhere in the package, module-level and function-local imports alike.
(c) No private name (``_x``) imported from another module of the package.
(d) No module over :data:`MAX_MODULE_LINES` lines and no function over :data:`MAX_FUNCTION_LINES`
    lines of code (not counting its docstring, comments and blank lines; a nested function counts in
    its enclosing one too), unless a comment on the ``def`` line or on the lines just above it (its
    decorators included) says ``longer than 60 lines because ...`` (a module: a comment
    ``longer than 600 lines because ...`` in its first 60 lines).

Each check is a plain function of a package folder, so the tests at the end run each one on a tiny
synthetic package that breaks it, to show that the check can fail.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path


from helpers import ROOT

PACKAGE = ROOT / "dptutor"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
FUNCTION_REASON = re.compile(r"#.*longer than 60 lines because", re.IGNORECASE)
MODULE_REASON = re.compile(r"#.*longer than 600 lines because", re.IGNORECASE)

#: Modules exempt from (d): none. A module that must be longer says why in a comment
#: ("longer than 600 lines because ..."), as a function does.
SIZE_ALLOWED: frozenset[str] = frozenset()


# ---------------------------------------------------------------------------------------------
# reading a package
# ---------------------------------------------------------------------------------------------


def modules_of(package: Path) -> dict[str, Path]:
    """Every module of the package in folder ``package``: dotted name -> file."""
    root = package.parent
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return name in modules and modules[name].name == "__init__.py"


def _absolute(module: str, node: ast.ImportFrom, modules: dict[str, Path]) -> str:
    """The absolute module an ``ImportFrom`` reads from (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if _is_package(module, modules) else module.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, str, int]]:
    """Every import in the module's source, at any depth: ``(imported module, imported name or "", line)``.

    ``from X import Y`` gives ``(X.Y, "", line)`` when ``X.Y`` is a module of the package, else
    ``(X, "Y", line)``; ``import X.Y`` gives ``(X.Y, "", line)``; a call of ``importlib.import_module``
    or ``__import__`` with a constant string gives that module.
    """
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, "", node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node, modules)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                found.append((sub, "", node.lineno) if sub in modules else (source, alias.name, node.lineno))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in ("import_module", "__import__"):
                found.append((node.args[0].value, "", node.lineno))
    return found


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (the nearest enclosing module of a dotted name)."""
    modules = modules_of(package)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for target, _, _ in imports_of(module, path, modules):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != module:
                graph[module].add(target)
    return graph


# ---------------------------------------------------------------------------------------------
# the four checks: each returns its violations as readable lines (empty: the contract holds)
# ---------------------------------------------------------------------------------------------


def boundary_violations(package: Path, *, student: str = "assignments", grader: str = "course",
                        entry: tuple[str, ...] = ("cli", "__main__")) -> list[str]:
    """(a): imports of ``<package>.<grader>`` from the student side or a teaching module."""
    name = package.name
    grader_prefix, student_prefix = f"{name}.{grader}", f"{name}.{student}"
    exempt = {grader_prefix} | {f"{name}.{e}" for e in entry}
    modules = modules_of(package)

    def in_grader(target: str) -> bool:
        return target == grader_prefix or target.startswith(grader_prefix + ".")

    problems = []
    for module, path in modules.items():
        if any(module == e or module.startswith(e + ".") for e in exempt):
            continue
        for target, _, line in imports_of(module, path, modules):
            if in_grader(target):
                problems.append(f"{path.relative_to(package.parent)}:{line}: {module} imports {target}")
    graph = import_graph(package)
    for module in modules:
        if module == student_prefix or module.startswith(student_prefix + "."):
            seen, todo = set(), [module]
            while todo:
                here = todo.pop()
                for target in graph[here] - seen:
                    seen.add(target)
                    todo.append(target)
            reached = sorted(t for t in seen if in_grader(t))
            if reached:
                problems.append(f"{module} reaches {', '.join(reached)} through its imports")
    return problems


def import_cycles(package: Path) -> list[str]:
    """(b): each import cycle (a strongly connected set of modules), as ``a -> b -> a``."""
    graph = import_graph(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[str] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(" -> ".join(sorted(component) + [sorted(component)[0]]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def private_imports(package: Path) -> list[str]:
    """(c): ``from <package module> import _name`` (dunder names and private modules are allowed)."""
    modules = modules_of(package)
    problems = []
    for module, path in modules.items():
        for target, name, line in imports_of(module, path, modules):
            if target.split(".")[0] != package.name or not name:
                continue
            if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                problems.append(f"{path.relative_to(package.parent)}:{line}: imports the private name {name} "
                                f"from {target}")
    return problems


def _code_lines(path: Path) -> set[int]:
    """Lines holding code: not blank, not only a comment, not part of a docstring."""
    text = path.read_text(encoding="utf-8")
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
            lines.update(range(tok.start[0], tok.end[0] + 1))
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                lines.difference_update(range(first.lineno, first.end_lineno + 1))
    return lines


def size_violations(package: Path) -> dict[str, list[str]]:
    """(d): module -> what is too long in it (modules without a problem are left out)."""
    problems: dict[str, list[str]] = {}
    for module, path in modules_of(package).items():
        source = path.read_text(encoding="utf-8").splitlines()
        found = []
        if len(source) > MAX_MODULE_LINES and not any(MODULE_REASON.search(line) for line in source[:60]):
            found.append(f"{len(source)} lines (at most {MAX_MODULE_LINES})")
        code = _code_lines(path)
        for node in ast.walk(ast.parse("\n".join(source))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            count = len([n for n in code if node.lineno <= n <= node.end_lineno])
            top = min([d.lineno for d in node.decorator_list] + [node.lineno])
            above = source[max(0, top - 4):top - 1] + [source[node.lineno - 1]]
            if count > MAX_FUNCTION_LINES and not any(FUNCTION_REASON.search(line) for line in above):
                found.append(f"{node.name} (line {node.lineno}): {count} lines of code (at most {MAX_FUNCTION_LINES})")
        if found:
            problems[module] = found
    return problems


# ---------------------------------------------------------------------------------------------
# the contract of dptutor
# ---------------------------------------------------------------------------------------------


def test_the_student_side_and_the_teaching_modules_never_import_the_grader() -> None:
    problems = boundary_violations(PACKAGE)
    assert not problems, "\n".join(problems)


def test_no_import_cycle() -> None:
    cycles = import_cycles(PACKAGE)
    assert not cycles, "\n".join(cycles)


def test_no_private_name_is_imported_across_modules() -> None:
    problems = private_imports(PACKAGE)
    assert not problems, "\n".join(problems)


def test_the_grading_code_has_no_module_or_function_too_long() -> None:
    problems = {m: p for m, p in size_violations(PACKAGE).items()
                if m.startswith(("dptutor.assignments", "dptutor.course"))}
    assert not problems, "\n".join(f"{m}: {p}" for m, ps in problems.items() for p in ps)


def test_no_module_or_function_too_long_anywhere() -> None:
    problems = {m: p for m, p in size_violations(PACKAGE).items() if m not in SIZE_ALLOWED}
    assert not problems, "\n".join(f"{m}: {p}" for m, ps in problems.items() for p in ps)
    assert not SIZE_ALLOWED, f"empty SIZE_ALLOWED once these are short: {sorted(SIZE_ALLOWED)}"


# ---------------------------------------------------------------------------------------------
# each check fails on a package that breaks it
# ---------------------------------------------------------------------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return package


def test_the_boundary_check_catches_a_function_local_and_an_indirect_import(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "course/__init__.py": "", "course/keys.py": "KEY = 1\n",
        "assignments/__init__.py": "", "assignments/checks.py": "import pkg.helpers\n",
        "helpers.py": "def f():\n    from pkg.course.keys import KEY\n    return KEY\n",
        "teaching.py": "import importlib\nimportlib.import_module('pkg.course')\n",
        "cli.py": "from pkg.course import keys\n",  # the command line may
    })
    problems = boundary_violations(package)
    assert any("pkg.helpers imports pkg.course.keys" in p for p in problems), problems
    assert any("pkg.teaching imports pkg.course" in p for p in problems), problems
    assert any("pkg.assignments.checks reaches pkg.course" in p for p in problems), problems
    assert not any("pkg.cli " in p for p in problems), problems
    clean = _package(tmp_path / "clean", {"course/__init__.py": "from pkg import helpers\n", "helpers.py": "X = 1\n"})
    assert boundary_violations(clean) == []


def test_the_cycle_check_catches_a_cycle_through_a_function_local_import(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "a.py": "from pkg.b import g\n",
        "b.py": "def g():\n    from . import c\n    return c\n",
        "c.py": "def h():\n    import pkg.a\n",
        "d.py": "from pkg import a\n",
    })
    assert import_cycles(package) == ["pkg.a -> pkg.b -> pkg.c -> pkg.a"]
    (package / "c.py").write_text("X = 1\n")
    assert import_cycles(package) == []


def test_the_private_name_check_catches_an_underscore_import(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "_validate.py": "def check(x):\n    return x\n",
        "a.py": "def _helper():\n    pass\n__all__ = []\n",
        "b.py": "from pkg._validate import check\nfrom pkg.a import __all__\nfrom os import _exit\n"
                "def f():\n    from .a import _helper\n",
    })
    assert private_imports(package) == ["pkg/b.py:5: imports the private name _helper from pkg.a"]


def test_the_size_check_counts_code_lines_and_honours_a_stated_reason(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    doc = '    """A docstring\n\n    of several lines."""\n    # a comment\n\n'
    package = _package(tmp_path, {
        "short.py": f"def fits():\n{doc}{body[:-len('    x59 = 59') - 1]}\n",
        "long.py": f"def too_long():\n{doc}{body}",
        "reasoned.py": f"# longer than 60 lines because it is a test\ndef long_but_said_why():\n{body}",
        "big.py": "X = 1\n" * (MAX_MODULE_LINES + 1),
        "big_reasoned.py": "# longer than 600 lines because it is a test\n" + "X = 1\n" * MAX_MODULE_LINES,
    })
    problems = size_violations(package)
    assert set(problems) == {"pkg.long", "pkg.big"}, problems
    assert problems["pkg.long"] == [f"too_long (line 1): {MAX_FUNCTION_LINES + 1} lines of code (at most 60)"]
    assert problems["pkg.big"] == [f"{MAX_MODULE_LINES + 1} lines (at most {MAX_MODULE_LINES})"]


# ---------------------------------------------------------------------------------------------
# the student side works without the grader
# ---------------------------------------------------------------------------------------------

#: Run in a fresh interpreter: ``dptutor.course`` cannot be imported, the reference answers of every
#: instructor notebook are loaded, and every question's check passes them (the feedback) and gives
#: them full marks (a grading run; a question graded by hand is left out).
WITHOUT_GRADER = r'''
import importlib, importlib.abc, sys

class NoGrader(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "dptutor.course" or name.startswith("dptutor.course."):
            raise ImportError(f"{name} is not installed on a student's machine")
        return None

sys.meta_path.insert(0, NoGrader())
import jupytext
from dptutor.assignments import ASSIGNMENTS, check
from dptutor.assignments.feedback import TEST_GRADING_SEED
try:
    import dptutor.course
except ImportError:
    pass
else:
    raise SystemExit("the finder did not block dptutor.course")

for name, a in ASSIGNMENTS.items():
    namespace = {"__name__": "__notebook__"}
    for cell in jupytext.read(sys.argv[1] + "/" + a.notebook).cells:
        if cell.cell_type == "code":  # the feedback cells too: they call the checks as a student does
            exec(compile(cell.source, a.notebook, "exec"), namespace)
    for q in a.questions:
        objects = [namespace[n] for n in q.needs]
        fb = check(name, q.name, *objects)  # the feedback: nothing fails (some answers are judged later)
        assert fb.status == "graded" and all(f.passed is not False for f in fb.findings), (name, q.name, fb)
        if q.name in getattr(importlib.import_module(f"dptutor.assignments.{name}"), "BY_HAND", ()):
            continue  # graded by a human: no score until then
        fb = check(name, q.name, *objects, grading_seed=TEST_GRADING_SEED)  # a grading run, with the self-study answers
        assert fb.status == "graded" and fb.score == fb.points, (name, q.name, fb)
assert not [m for m in sys.modules if m.startswith("dptutor.course")]
print("ok", len(ASSIGNMENTS))
'''


def test_the_assignments_run_without_the_grader(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", WITHOUT_GRADER, str(ROOT / "book" / "assignments" / "instructor")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.strip().endswith("ok 6"), proc.stdout
