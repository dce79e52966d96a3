"""What the grader takes in from a submission, bounded before it costs anything: the notebook file and
the kernel's output.

Reading a notebook
------------------
:func:`read_student_cells` reads a submission's code cells under three limits that apply before (or
while) the file is parsed, so that no notebook makes the grader spend more than a bounded amount of
time and memory outside the per-cell and per-notebook time limits:

- its size: a file over ``max_bytes`` (default :data:`MAX_NOTEBOOK_BYTES`, 16 MiB) is refused
  before a byte of it is parsed;
- its number of cells: over ``max_cells`` (default :data:`MAX_CELLS`) is refused; a Markdown
  notebook is counted from its lines before it is parsed (every fence ````` ``` `````/``~~~`` or
  cell break ``+++`` line might open a cell), a ``.ipynb`` from its JSON before the cells are built;
- a Markdown notebook over :data:`MAX_LINES` lines is refused before it is parsed, and a ``.ipynb``
  is checked and converted without its outputs, attachments and metadata (other than cells' tags),
  which grading never reads;
- YAML anchors and aliases (``&name``, ``*name``) in any YAML the Markdown reader parses (the
  front matter, a cell's options) are refused, so a few lines cannot expand into gigabytes.

A refused notebook is unreadable: :func:`~dptutor.course.executor.grade_notebook` scores it 0 with a
note that gives the reason, and grading of the other submissions goes on.

Named files
-----------
:func:`read_named` reads every other file the grader takes in by name (the configuration, the CSV tables, the
answer key, the instructor notebook, the scores file, a kernel's answer file, the in-flight marker) with
:func:`read_regular`: whatever is wrong with it (missing, a FIFO, a folder, a refused link, over its limit,
unreadable) is one ``ValueError`` of one wording naming the parameter, the file's role and its path, and a
caller to which a missing file means "none" says so with ``missing_ok`` (one look at the file, no check before).
A followed link that cannot be opened says why (a loop of links: ELOOP).  :func:`look_named` looks at a path
the grader is given (a folder, an output file) with the same care: a path it cannot look at is a ``ValueError``
naming the parameter, never ``Path.exists``'s ``PermissionError``.

The kernel's output
-------------------
:func:`capped_client` makes a notebook client that keeps at most ``limit`` characters of what the
kernel sends.  Every output and widget message counts, empty ones included, with an overhead of
:data:`MESSAGE_OVERHEAD` characters on top of what it carries; beyond the limit messages are
dropped (a cell's first error is still kept, shortened: the grader reads it).

A single message over the limit of the client's ZeroMQ context (``MAXMSGSIZE``) is a protocol error to
ZeroMQ, which then closes that connection for good (it reconnects only after errors of the connection):
the IOPub channel would hear nothing more, and every later cell would wait nbclient's ``iopub_timeout`` for
its end and lose its output.  So when a cell's reply came but its end on IOPub did not, the client
connects a fresh IOPub socket (same context, same limit: ``_reconnect_iopub``), marks the cell's output
as cut, and keeps the error the reply reports if IOPub lost it.

The other way round, an interrupt that reaches ipykernel as a cell ends, or while it reports an earlier
interrupt, is caught inside the kernel, which ends the cell on IOPub but never replies.  When the grader
interrupted a cell (its metadata holds :data:`TIMED_OUT_KEY`) and the kernel has ended it, the client waits
``iopub_timeout`` more for the reply and then takes the time-out reply (``error_on_timeout``), instead of
waiting for the wall-clock cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dptutor._safe_files import read_regular_file
from dptutor._validate import check_bool, check_int, check_str

__all__ = ["MAX_NOTEBOOK_BYTES", "MAX_CELLS", "MAX_LINES", "MESSAGE_OVERHEAD", "TIMED_OUT_KEY", "MissingFile", "UnreadableNotebook",
           "capped_client", "look_named", "read_named", "read_regular", "read_student_cells"]

#: The largest notebook file the grader reads (bytes).
MAX_NOTEBOOK_BYTES = 16 << 20
#: The most cells a notebook the grader reads may have.
MAX_CELLS = 5000
#: The most lines a Markdown notebook the grader reads may have.
MAX_LINES = 100_000
#: What each message from the kernel counts against the output limit besides its text (characters).
MESSAGE_OVERHEAD = 256
#: Cells with this tag (the template's feedback calls) are not run when grading.
FEEDBACK_TAG = "dptutor-check"

#: A line that may open or close a cell of a Markdown notebook (MyST or jupytext's Markdown).
_CELL_MARK = re.compile(rb"^(?:```|~~~|\+\+\+|<!--\s*#)", re.MULTILINE)


class UnreadableNotebook(ValueError):
    """A submission the grader refuses to read (the message says why, for the student's feedback)."""


class MissingFile(ValueError):
    """The file :func:`read_regular` was asked to read does not exist."""


class _AliasRefused(Exception):
    """Raised inside jupytext's YAML reading (no ``ValueError`` or YAML error, which jupytext may catch)."""


def _refusing_yaml_loader() -> Any:
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """YAML's safe loader, refusing anchors and aliases (each may repeat a whole subtree)."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent) or getattr(self.peek_event(), "anchor", None) is not None:
                raise _AliasRefused
            return super().compose_node(parent, index)

    return NoAliasLoader


@contextlib.contextmanager
def _yaml_without_aliases() -> Iterator[None]:
    """While reading one notebook, make ``yaml.safe_load``/``safe_load_all`` (what jupytext calls) refuse
    anchors and aliases; restored afterwards (the grader reads notebooks in one thread)."""
    import yaml

    loader = _refusing_yaml_loader()
    saved = yaml.safe_load, yaml.safe_load_all
    yaml.safe_load = lambda stream: yaml.load(stream, Loader=loader)
    yaml.safe_load_all = lambda stream: yaml.load_all(stream, Loader=loader)
    try:
        yield
    finally:
        yaml.safe_load, yaml.safe_load_all = saved


def _bare_notebook(data: Any, max_cells: int) -> Any:
    """A ``.ipynb``'s JSON without what grading never reads (outputs, attachments, metadata other than
    a cell's tags), its cells counted, so that checking and converting it costs little."""
    if not isinstance(data, dict):
        return data
    worksheets = data.get("worksheets")  # nbformat 3 keeps its cells in worksheets
    holders = [w for w in worksheets if isinstance(w, dict)] if isinstance(worksheets, list) else [data]
    lists = [h["cells"] for h in holders if isinstance(h.get("cells"), list)]
    count = sum(len(cells) for cells in lists)
    if count > max_cells:
        raise UnreadableNotebook(f"it has {count} cells, more than the grader reads ({max_cells})")
    for cells in lists:
        for cell in cells:
            if isinstance(cell, dict):
                cell.pop("attachments", None)
                if "outputs" in cell:
                    cell["outputs"] = []
                if isinstance(cell.get("metadata"), dict):
                    cell["metadata"] = {k: v for k, v in cell["metadata"].items() if k == "tags"}
    if isinstance(data.get("metadata"), dict):
        data["metadata"] = {}
    return data


def _read_notebook(raw: bytes, suffix: str, max_cells: int) -> Any:
    """The notebook in ``raw`` (a ``.ipynb`` or a Markdown notebook), its cells counted before they are built."""
    import nbformat

    text = raw.decode("utf-8")
    with warnings.catch_warnings():  # nbformat's validation warnings are about the student's file
        warnings.simplefilter("ignore")
        if suffix == ".ipynb":
            return nbformat.reads(json.dumps(_bare_notebook(json.loads(text), max_cells)), as_version=4)
        lines = raw.count(b"\n") + 1
        if lines > MAX_LINES:
            raise UnreadableNotebook(f"it has {lines:,} lines, more than the grader reads ({MAX_LINES:,})")
        marks = len(_CELL_MARK.findall(raw))
        if marks > 2 * max_cells + 1:
            raise UnreadableNotebook(f"it has {marks} cell fences or breaks, more than the grader reads "
                                     f"({max_cells} cells)")
        import jupytext

        try:
            with _yaml_without_aliases():
                return jupytext.reads(text, fmt={"extension": suffix})  # no configuration file is looked up
        except _AliasRefused:
            raise UnreadableNotebook("its YAML (front matter or cell options) uses anchors or aliases "
                                     "(&name, *name), which the grader does not read") from None


def _tags(cell: Any) -> list[str]:
    """A cell's tags (a malformed ``metadata.tags`` counts as none)."""
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def read_regular(path: str | Path, limit: int, *, what: str = "the file", follow_links: bool = False) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them, opened without waiting on a
    FIFO and, unless ``follow_links``, without following a symbolic link: :class:`MissingFile` if there
    is none, ``ValueError`` naming ``what`` if it is a link (refused), a FIFO, a folder or a device,
    cannot be opened, or is (or grows) over ``limit``; a followed link that cannot be opened says why (a loop of
    links: ELOOP), not that it is a link. The type is checked on the open file, so a file
    swapped for a FIFO after a check cannot block the reader (the library's ``read_regular_file`` reads it)."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    limit = check_int(limit, "limit", minimum=0, maximum=1 << 30)
    what = check_str(what, "what", allow_empty=False)
    try:
        return read_regular_file(path, limit, what=what, follow_links=follow_links)
    except FileNotFoundError as exc:
        raise MissingFile(str(exc)) from None
    except ValueError as exc:
        cause = exc.__context__  # the open's own error (the library's message says "a symbolic link" for any)
        if follow_links and isinstance(cause, OSError) and os.path.islink(path):  # a followed link that cannot be opened
            raise ValueError(f"{what} is a loop of symbolic links (ELOOP)" if cause.errno == errno.ELOOP
                             else f"{what} cannot be opened ({cause.strerror or cause})") from None
        raise


def _size_text(limit: int) -> str:
    """``limit`` bytes as the messages state it: whole MiB as ``"16 MiB"``, else ``"1,000 bytes"``."""
    return f"{limit >> 20} MiB" if limit and not limit % (1 << 20) else f"{limit:,} bytes"


def read_named(path: str | Path, limit: int, *, role: str, name: str = "path", follow_links: bool = False,
               missing_ok: bool = False, shown: str | None = None) -> bytes | None:
    """The bytes of the regular file ``path`` (read with :func:`read_regular`), every failure one ``ValueError``
    naming the parameter, the file's role and its path.

    Parameters
    ----------
    path : str or pathlib.Path
        The file.
    limit : int
        The most bytes read (``0`` to ``2**30``).
    role : str
        What the file is, for the messages (``"the scores file"``).
    name : str, optional
        The parameter the messages start with (default ``"path"``).
    follow_links : bool, optional
        Whether a symbolic link is followed (default: refused, as any other file that is not regular).
    missing_ok : bool, optional
        Whether a file that does not exist is absent (``None`` is returned) rather than an error.
    shown : str, optional
        How the messages show the file (default: ``path``); the answer file's name, say, where the student
        reads the message and the grader's folder is none of their business.

    Returns
    -------
    bytes or None
        The file's content; ``None`` only with ``missing_ok``, if there is no file at ``path``.

    Raises
    ------
    MissingFile
        Unless ``missing_ok``, if there is no file at ``path``: ``"{name}: {role} {shown} does not exist"``.
    ValueError
        If the file is a FIFO, a folder, a device, a refused link, over ``limit`` bytes, or cannot be opened
        or read: ``"{name}: {role} {shown} must be a regular file of at most {limit}: {reason}"``.
    TypeError
        If an argument is of the wrong type (the message names it).
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    # Checked here, before the try: read_regular's ValueError for a bad limit would read as the file's.
    limit = check_int(limit, "limit", minimum=0, maximum=1 << 30)
    role = check_str(role, "role", allow_empty=False)
    name = check_str(name, "name", allow_empty=False)
    missing_ok = check_bool(missing_ok, "missing_ok")
    shown = str(path) if shown is None else check_str(shown, "shown", allow_empty=False)
    try:
        return read_regular(path, limit, what="it", follow_links=follow_links)
    except MissingFile:
        if missing_ok:
            return None
        raise MissingFile(f"{name}: {role} {shown} does not exist") from None
    except (ValueError, OSError) as exc:  # OSError: the open file cannot be read (an input/output error)
        reason = str(exc) if isinstance(exc, ValueError) else f"it cannot be read ({exc.strerror or exc})"
        raise ValueError(f"{name}: {role} {shown} must be a regular file of at most {_size_text(limit)}: "
                         f"{reason}") from None


def look_named(path: str | Path, *, name: str = "path", follow_links: bool = True) -> os.stat_result | None:
    """The status of ``path`` (``os.stat``; ``os.lstat`` unless ``follow_links``), ``None`` if nothing is there.

    ``Path.exists``, ``is_file`` and ``is_dir`` raise ``PermissionError`` for a path under a folder that
    cannot be searched and answer ``False`` for a loop of symbolic links; here either is a ``ValueError``
    naming the parameter and the path, as is any other failure to look (a name too long, an input/output error).

    Parameters
    ----------
    path : str or pathlib.Path
        The path.
    name : str, optional
        The parameter (or command-line option) the messages start with (default ``"path"``).
    follow_links : bool, optional
        Whether a symbolic link at ``path`` is followed (default) or looked at itself.

    Returns
    -------
    os.stat_result or None
        The status; ``None`` if there is no such file (or a component of ``path`` is not a folder).

    Raises
    ------
    ValueError
        ``"{name}: {path} cannot be looked at ({reason})"`` with the system's reason (``Permission denied``),
        or ``"{name}: {path} is a loop of symbolic links (ELOOP)"``.
    TypeError
        If an argument is of the wrong type (the message names it).
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    name = check_str(name, "name", allow_empty=False)
    follow_links = check_bool(follow_links, "follow_links")
    try:
        return os.stat(path) if follow_links else os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(f"{name}: {path} is a loop of symbolic links (ELOOP)") from None
        raise ValueError(f"{name}: {path} cannot be looked at ({exc.strerror or exc})") from None
    except ValueError as exc:  # an embedded NUL character
        raise ValueError(f"{name}: {path} cannot be looked at ({exc})") from None


def read_student_cells(path: Path, *, max_bytes: int | None = None, max_cells: int | None = None) -> list[dict]:
    """The code cells of the notebook at ``path`` (``.ipynb`` or ``.md``) as ``{"source", "metadata"}``
    dicts, outputs dropped and feedback cells (tag :data:`FEEDBACK_TAG`) left out.

    The limits are in the module docstring; ``None`` means :data:`MAX_NOTEBOOK_BYTES` and
    :data:`MAX_CELLS` (read when called).  Any error means the file is unreadable; the grader's own
    refusals are :class:`UnreadableNotebook` (a ``ValueError``) with the reason.
    """
    if not isinstance(path, Path):
        raise TypeError(f"path must be a pathlib.Path, got {type(path).__name__}")
    max_bytes = check_int(MAX_NOTEBOOK_BYTES if max_bytes is None else max_bytes, "max_bytes", minimum=1,
                          maximum=1 << 30)
    max_cells = check_int(MAX_CELLS if max_cells is None else max_cells, "max_cells", minimum=1, maximum=10**6)
    try:
        raw = read_regular(path, max_bytes, what="it")
    except ValueError as exc:
        raise UnreadableNotebook(str(exc)) from None
    nb = _read_notebook(raw, path.suffix, max_cells)
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise UnreadableNotebook("it has no list of cells")
    if len(cells) > max_cells:
        raise UnreadableNotebook(f"it has {len(cells)} cells, more than the grader reads ({max_cells})")
    student = []
    for cell in cells:
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise UnreadableNotebook("a cell is not a notebook cell")
        if cell["cell_type"] != "code" or FEEDBACK_TAG in _tags(cell):
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise UnreadableNotebook("a code cell's source is not text")
        student.append({"source": source, "metadata": {"tags": _tags(cell)}})
    return student


def _message_size(content: object) -> int:
    """What one kernel message counts against the output limit: :data:`MESSAGE_OVERHEAD` plus about
    how many characters its text, data, metadata and widget state carry."""
    if not isinstance(content, dict):
        return MESSAGE_OVERHEAD
    parts = [content.get(k) for k in ("text", "evalue", "traceback", "data", "metadata", "state", "buffer_paths")]
    return MESSAGE_OVERHEAD + sum(len(p) if isinstance(p, (str, bytes)) else len(str(p)) for p in parts if p)


#: Messages that carry no output: never counted, never dropped (the client needs them to finish a cell).
_CONTROL = frozenset({"status", "execute_input", "execute_reply"})


#: The metadata key that marks a cell stopped at its time limit (its value: the limit in seconds).
TIMED_OUT_KEY = "dptutor_timed_out"


#: The characters of an error's message the grader keeps (it reads errors; their tracebacks are dropped).
_ERROR_CHARS = 2000

#: The note added to a cell whose end (its idle status) never came on IOPub.
_IOPUB_LOST = "[the grader lost the rest of this cell's output: a message over its size limit, or none in time]"


async def _reconnect_iopub(kc: Any, patience: float) -> bool:
    """Replace the IOPub channel of the kernel client ``kc`` by a fresh SUB socket from its context (whose
    ``MAXMSGSIZE`` applies to it too) and wait, at most ``patience`` seconds, until a message arrives on it
    (the status of a ``kernel_info`` request), so that the next cell's messages are not published before the
    subscription reaches the kernel; whether one did."""
    from queue import Empty

    kc.iopub_channel.close()
    kc._iopub_channel = None  # the property connects a new one (jupyter_client's own SUBSCRIBE included)
    channel = kc.iopub_channel
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    while loop.time() < deadline:
        kc.kernel_info()  # its reply on the shell channel is skipped by nbclient (another parent)
        try:
            await channel.get_msg(timeout=min(0.5, max(0.01, deadline - loop.time())))
            return True
        except Empty:
            continue
    return False


async def _reply_lost(cell: Any, output_done: Any, grace: float) -> None:
    """Return when the grader has interrupted ``cell`` (:data:`TIMED_OUT_KEY` in its metadata), the kernel has
    ended it on IOPub (``output_done``: its idle status) and ``grace`` seconds have passed; else wait until
    cancelled.  An interrupt that reaches ipykernel as a cell ends, or while it reports an earlier interrupt, is
    caught inside the kernel, which then sends no reply to the cell (17 of 240 interrupts sent as a 50 ms cell
    ended, in a sweep)."""
    await asyncio.wait({output_done})
    if output_done.cancelled() or output_done.exception() is not None:
        await asyncio.Event().wait()  # no end on IOPub: the reply's own wait decides
    while TIMED_OUT_KEY not in (cell.get("metadata") or {}):
        await asyncio.sleep(0.1)
    await asyncio.sleep(grace)


async def _reply_or_lost(client: Any, polling: Any, msg_id: str, cell: Any, output_done: Any, alive: Any) -> Any:
    """The reply ``polling`` gets, or the time-out reply (``client.error_on_timeout``) when the grader interrupted
    ``cell``, the kernel ended it on IOPub and no reply followed within ``client.iopub_timeout`` (it will never
    come: see :func:`_reply_lost`); nbclient would wait for it until the wall-clock cap."""
    lost = asyncio.ensure_future(_reply_lost(cell, output_done, float(client.iopub_timeout)))
    try:
        await asyncio.wait({polling, lost}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        lost.cancel()
        replied = polling.done()
        if not replied:
            polling.cancel()
            alive.cancel()
    if replied:
        return polling.result()
    await asyncio.wait({polling})  # let the cancelled poll finish before the next cell polls the channel
    return {"content": {**client.error_on_timeout, "status": "error"}, "parent_header": {"msg_id": msg_id}}


def _holds_error(outputs: list) -> bool:
    """Whether a cell's ``outputs`` already hold an error (its first error is the one the grader keeps)."""
    return any(o.get("output_type") == "error" for o in outputs)


def capped_client(limit: int) -> Any:
    """An nbclient ``NotebookClient`` class that keeps at most ``limit`` characters of the kernel's output
    (every message counted: :func:`_message_size`)."""
    from nbclient import NotebookClient

    limit = check_int(limit, "limit", minimum=1)

    class CappedClient(NotebookClient):
        kept = 0

        def process_message(self, msg: dict, cell: Any, cell_index: int) -> Any:
            msg_type = msg.get("msg_type")
            if msg_type in _CONTROL:
                return super().process_message(msg, cell, cell_index)
            content = msg.get("content")
            if msg_type == "error" and isinstance(content, dict):  # the grader reads errors: short ones
                content["evalue"] = str(content.get("evalue", ""))[:_ERROR_CHARS]
                content["traceback"] = []
            before = self.kept
            self.kept += _message_size(content)
            if self.kept > limit:
                outputs = cell.get("outputs", [])
                if msg_type == "error" and not _holds_error(outputs):
                    return super().process_message(msg, cell, cell_index)  # a cell's first error is kept
                if before <= limit:
                    import nbformat

                    outputs.append(nbformat.v4.new_output(
                        "stream", name="stderr", text=f"[output over {limit} characters dropped by the grader]"))
                return None
            return super().process_message(msg, cell, cell_index)

        async def _async_poll_for_reply(self, msg_id: str, cell: Any, timeout: Any, task_poll_output_msg: Any,
                                        task_poll_kernel_alive: Any) -> Any:
            polling = asyncio.ensure_future(super()._async_poll_for_reply(msg_id, cell, timeout, task_poll_output_msg,
                                                                          task_poll_kernel_alive))
            if self.error_on_timeout is None:
                reply = await polling
            else:
                reply = await _reply_or_lost(self, polling, msg_id, cell, task_poll_output_msg, task_poll_kernel_alive)
            if task_poll_output_msg.cancelled():  # the reply came, the end on IOPub did not (iopub_timeout)
                await _reconnect_iopub(self.kc, float(self.iopub_timeout))
                self._keep_lost_error(cell, reply)
            return reply

        def _keep_lost_error(self, cell: Any, reply: Any) -> None:
            """Mark ``cell``'s output as cut and keep the error its ``reply`` reports, if IOPub lost it."""
            import nbformat

            outputs = cell.setdefault("outputs", [])
            outputs.append(nbformat.v4.new_output("stream", name="stderr", text=_IOPUB_LOST))
            content = reply.get("content") if isinstance(reply, dict) else None
            if isinstance(content, dict) and content.get("status") == "error" and not _holds_error(outputs):
                outputs.append(nbformat.v4.new_output("error", ename=str(content.get("ename", ""))[:200],
                                                      evalue=str(content.get("evalue", ""))[:_ERROR_CHARS], traceback=[]))

        async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
            if cell is not None:  # a student cell (or a grading cell) ran past its limit: say so, not KeyboardInterrupt
                cell.setdefault("metadata", {})[TIMED_OUT_KEY] = float(timeout)
            return await super()._async_handle_timeout(timeout, cell)

    return CappedClient
