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

from dptutor._validate import check_path

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


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path`` (no FIFO, which is opened without waiting, folder or file over
    ``max_bytes``); a ValueError naming ``path`` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                raise ValueError(f"path {path} must be a regular file of at most {max_bytes:,} bytes")
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise ValueError(f"path {path} cannot be read ({exc.strerror or exc})") from exc
    if len(raw) > max_bytes:
        raise ValueError(f"path {path} grew beyond {max_bytes:,} bytes while being read")
    return raw


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
