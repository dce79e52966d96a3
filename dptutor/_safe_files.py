"""File safety for the grid's result files: UTF-8 text, atomic replacement, bounded reads, output folders.

One idea: what any file the grid writes or reads back must be safe against, whatever its rows
mean (those live in :mod:`dptutor.grid_files`).  :func:`is_utf8_text` is the test every writer of
a result file applies to text before writing it (a lone surrogate cannot be written as UTF-8, and
``surrogateescape`` decoding makes one of each undecodable byte); :func:`atomic_target` lets a file
be replaced whole or not at all; :func:`read_regular_file` reads a regular file of bounded size
(no FIFO that blocks, no folder, no huge file); :func:`output_folder` checks a results folder.
Private to the package by convention (its names are public to the package's modules).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from dptutor._validate import check_int, check_path, check_str

__all__ = ["FILE_MODE", "is_utf8_text", "atomic_target", "read_regular_file", "output_folder"]

FILE_MODE = 0o644  # mkstemp creates 0600 files; results are meant to be shared


def is_utf8_text(text: str) -> bool:
    """True if ``text`` can be written as UTF-8 as it is: it holds no lone surrogate.

    Lone surrogates come from ``"\\ud800"`` literals and from decoding undecodable bytes with
    ``errors="surrogateescape"``; no UTF-8 file can hold them, so a row, a file's text or a
    mechanism's name with one is refused by its caller (each with a message of its own).

    Parameters
    ----------
    text : str
        The text (already checked to be a str).

    Returns
    -------
    bool
        ``text.encode("utf-8", "replace").decode("utf-8") == text``.
    """
    return text.encode("utf-8", "replace").decode("utf-8") == text


@contextlib.contextmanager
def atomic_target(path: Path) -> Iterator[str]:
    """Yield a temporary file name beside ``path``; on success it replaces ``path``, else it is removed.

    Parameters
    ----------
    path : pathlib.Path
        The file to replace.

    Yields
    ------
    str
        The temporary file's name.

    Raises
    ------
    OSError
        If the temporary file cannot be made or moved (it is removed).
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        os.chmod(tmp, FILE_MODE)
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def read_regular_file(path: str | os.PathLike[str], max_bytes: int, *, what: str | None = None,
                      follow_links: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them, read without blocking.

    The file is opened without waiting on a FIFO and, unless ``follow_links``, without following a
    symbolic link; its type and size are checked on the open file (a file swapped for a FIFO or a device
    after a check cannot block the reader or never end), and the read stops one byte past ``max_bytes``.
    The library's result files are read with the default messages, the grader's files (through
    ``dptutor.course.intake.read_regular``) with messages naming ``what``.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    max_bytes : int
        The most bytes read, ``>= 0``.
    what : str, optional
        What the messages call the file (``"the scores file"``); by default they name ``path`` (and a
        missing file is a ``ValueError`` like any other).
    follow_links : bool, optional
        Whether a symbolic link is followed (default) or refused.

    Returns
    -------
    bytes
        The file's content.

    Raises
    ------
    FileNotFoundError
        With ``what`` only, if ``path`` does not exist.
    ValueError
        If ``path`` cannot be opened, is a FIFO, a folder, a device or (unless ``follow_links``) a symbolic
        link, or holds (or grows while read to) more than ``max_bytes`` bytes; without ``what``, also if it
        cannot be read.
    TypeError
        If ``max_bytes``, ``what`` or ``follow_links`` is of the wrong type (the message names it).
    OSError
        With ``what``, if the open file cannot be read (an input/output error).
    """
    max_bytes = check_int(max_bytes, "max_bytes", minimum=0)
    if what is not None:
        what = check_str(what, "what", allow_empty=False)
    if not isinstance(follow_links, bool):
        raise TypeError(f"follow_links must be True or False, got {type(follow_links).__name__}")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if what is None:
            raise ValueError(f"path {path} cannot be read ({exc.strerror or exc})") from exc
        if isinstance(exc, FileNotFoundError):
            raise FileNotFoundError(f"path: {what} does not exist ({path})") from None
        if os.path.islink(path):
            raise ValueError(f"{what} is a symbolic link, not a file") from None
        raise ValueError(f"{what} cannot be opened ({exc.strerror})") from None
    try:
        return _read_open_file(fd, path, max_bytes, what)
    except OSError as exc:
        if what is not None:
            raise
        raise ValueError(f"path {path} cannot be read ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)


def _read_open_file(fd: int, path: object, max_bytes: int, what: str | None) -> bytes:
    """What ``read_regular_file`` reads from the open file ``fd``: its type and size checked first."""
    info = os.fstat(fd)
    if what is None:
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            raise ValueError(f"path {path} must be a regular file of at most {max_bytes:,} bytes")
    elif not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{what} is not a regular file")
    elif info.st_size > max_bytes:
        raise ValueError(f"{what} has {info.st_size:,} bytes, more than the limit of {max_bytes:,}")
    chunks, size = [], 0
    while size <= max_bytes and (chunk := os.read(fd, min(1 << 20, max_bytes + 1 - size))):
        chunks.append(chunk)
        size += len(chunk)
    if size > max_bytes:
        raise ValueError(f"path {path} grew beyond {max_bytes:,} bytes while being read" if what is None
                         else f"{what} grew beyond the size limit of {max_bytes:,} bytes while being read")
    return b"".join(chunks)


def output_folder(out: object) -> Path:
    """``out`` as an existing, writeable folder (created if missing), or a ValueError naming ``out``.

    Parameters
    ----------
    out : str or os.PathLike
        The folder (created if missing).

    Returns
    -------
    pathlib.Path
        The folder.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is a file, cannot be created or is not writeable (the message names ``out``).
    """
    path = check_path(out, "out")
    try:
        if path.exists() and not path.is_dir():
            raise ValueError(f"out must be a folder, but {path} is a file")
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"out: cannot create the folder {path} ({exc.strerror or exc})") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"out: the folder {path} is not writeable")
    return path
