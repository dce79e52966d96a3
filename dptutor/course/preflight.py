"""The grader's pre-flight: one known-good notebook run exactly as a submission will be, before any.

A broken environment (an interpreter path the sandbox cannot resolve, a package the sandbox cannot
see, a kernel that cannot start) would otherwise make every submission's kernel die and every
student score 0.  :func:`check_environment` starts one kernel in the very sandbox, with the very
interpreter and launch command that grading uses, runs a cell that imports the package and reports
where it found it, and raises :class:`~dptutor.course.sandbox.EnvironmentFailure` naming the cause
and the fix when anything of that fails.  ``python -m dptutor grade`` runs it before it writes any
score or feedback file.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from dptutor.course.sandbox import EnvironmentFailure, Sandbox, interpreter, kernel_manager, package_root
from dptutor.course.signals import run_coroutine
from dptutor.course.workdirs import new_workdir, remove_tree

#: Nothing here is API: :mod:`~dptutor.course.grade` runs the check.
__all__: list[str] = []

#: The known-good cell: it imports what every assignment's notebook imports and says where from.
_CELL = ("import json, sys, numpy, dptutor, dptutor.assignments\n"
         "print('dptutor-preflight ' + json.dumps({'python': sys.executable, 'dptutor': dptutor.__file__}))\n")
_MARK = "dptutor-preflight "
#: How long the kernel may take to start and run the cell (seconds; generous for a loaded machine).
PREFLIGHT_TIMEOUT = 120


def _fix(sandbox: Sandbox) -> str:
    """What an instructor can do about a kernel that cannot run in ``sandbox``."""
    where = "inside the sandbox " if sandbox.isolated else ""
    return (f"the grader runs the kernel {where}as `{interpreter()} -m ipykernel_launcher` with the package "
            f"from {package_root() / 'dptutor'}: run the grader with the Python of the environment where "
            "dptutor and its [grade] extra are installed (`pip install -e '.[grade]'` in the clone), and check "
            "that this environment lies outside the work folders"
            + (" (or try --no-sandbox on notebooks you trust, to tell the sandbox from the environment)"
               if sandbox.isolated else ""))


def _stderr_tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in lines[-3:] if line.strip())[:800]


def _outcome(cell: Any) -> tuple[dict[str, Any] | None, str | None]:
    """What the known-good cell printed (its report) or the error it raised."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return None, f"{out.get('ename')}: {out.get('evalue')}"
        text = out.get("text", "") if out.get("output_type") == "stream" else ""
        for line in str(text).splitlines():
            if line.startswith(_MARK):
                return json.loads(line[len(_MARK):]), None
    return None, "the cell printed nothing"


async def _run(client: Any, log: Path) -> None:
    with open(log, "wb") as err:
        # cleanup_kc: nbclient shuts the kernel down and closes the client's sockets when the block ends
        async with client.async_setup_kernel(cleanup_kc=True, stderr=err, stdout=subprocess.DEVNULL):
            await client.async_execute_cell(client.nb.cells[0], 0)


def check_environment(sandbox: Sandbox, *, timeout: float = PREFLIGHT_TIMEOUT) -> dict[str, Any]:
    """Run the known-good notebook in ``sandbox`` as grading will; its report (interpreter, package), or
    :class:`~dptutor.course.sandbox.EnvironmentFailure` saying what failed and what to do."""
    if not isinstance(sandbox, Sandbox):
        raise TypeError(f"sandbox must be a Sandbox, got {type(sandbox).__name__}")
    import nbformat
    from nbclient import NotebookClient

    root = new_workdir()
    workdir, kernel_dir = os.path.join(root, "work"), os.path.join(root, "kernel")
    os.mkdir(workdir)
    os.mkdir(kernel_dir)
    box_name = f"dptutor-{os.path.basename(root)}"
    log = Path(root, "kernel.log")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(_CELL)])
    client = NotebookClient(nb, km=kernel_manager(sandbox, workdir, kernel_dir, box_name), timeout=int(timeout),
                            startup_timeout=int(timeout), allow_errors=True, shutdown_kernel="immediate",
                            resources={"metadata": {"path": workdir}})
    report, problem = None, None
    try:
        run_coroutine(lambda: _run(client, log))
        report, problem = _outcome(nb.cells[0])
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - any way a kernel can fail to start is the environment's
        problem = f"{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        sandbox.stop(box_name, getattr(getattr(client.km, "provisioner", None), "pid", None))
        tail = _stderr_tail(log)
        atexit.unregister(client._cleanup_kernel)  # nbclient's exit hook of a failed start fails noisily
        remove_tree(root)
    if problem is None and report is not None:
        return report
    raise EnvironmentFailure(
        "grading stopped before any submission was graded: a known-good notebook could not run in the "
        f"grading kernel ({problem}" + (f"; the kernel said: {tail}" if tail else "") + f"). {_fix(sandbox)}")
