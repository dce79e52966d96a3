"""The grader's work folders: one per submission, in the temporary folder, always removable.

A work folder is named ``dptutor-grade-<pid>-<random>`` after the process that made it, so that a
later run (or the parent of a worker process) can tell whose it is.  A submission controls what its
work folder holds when its sandbox dies: any depth of sub-folders, folders without permissions, path
names longer than the system allows.  :func:`remove_tree` therefore removes a tree without
recursion and without long paths: it moves every sub-folder's sub-folders up into the folder being
removed (a rename relative to open folders) until nothing is nested, so that its memory, its open
files and its call depth stay bounded whatever the tree.  It never raises for what it finds in the
tree; a folder it could not remove is reported, and never stops a later run.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import sys
import tempfile
import time
from pathlib import Path

#: Nothing here is API: the grader's own modules (:mod:`~dptutor.course.executor`,
#: :mod:`~dptutor.course.batch`, :mod:`~dptutor.course.preflight`) use these functions.
__all__: list[str] = []

_PREFIX = "dptutor-grade-"
_NAME = re.compile(r"dptutor-grade-(\d+)-\w+")


def workdir_parent() -> str:
    """Where work folders go: the temporary folder, unless its path is too long for the kernel's unix
    sockets (at most 107 bytes in all on Linux), then /tmp."""
    tmp = tempfile.gettempdir()
    return tmp if len(os.fsencode(tmp)) <= 60 else "/tmp"


def new_workdir() -> str:
    """A new private folder for one submission; its name carries this process's id."""
    return tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=workdir_parent())


def _own_folder(name: str, dir_fd: int | None = None) -> None:
    """Give the folder ``name`` (relative to ``dir_fd``) mode 0o700, never through a link: a process of the sandbox
    that is still dying could swap a link in after the ``lstat`` (``os.chmod`` follows links, and Linux has no
    ``lchmod``), so the folder is opened as a path without following links and changed through that descriptor."""
    path_flag = getattr(os, "O_PATH", 0)
    if not path_flag or not os.path.isdir("/proc/self/fd"):
        os.chmod(name, 0o700, dir_fd=dir_fd)  # no O_PATH (not Linux): the plain call
        return
    pfd = os.open(name, path_flag | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)  # a link fails here
    try:
        os.chmod(f"/proc/self/fd/{pfd}", 0o700)  # the folder opened above, whatever its name now holds
    finally:
        os.close(pfd)


def _empty(fd: int) -> None:
    """Empty the folder open as ``fd``: files are unlinked, each sub-folder's content is moved up into
    this folder (so nothing is ever more than one level deep) and the then empty sub-folder removed."""
    while True:
        with os.scandir(fd) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        if not entries:
            return
        for name, is_dir in entries:
            if not is_dir:
                os.unlink(name, dir_fd=fd)
                continue
            try:
                os.rmdir(name, dir_fd=fd)
                continue
            except OSError:
                pass
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o700 != 0o700:
                _own_folder(name, fd)  # a folder the submission made unreadable
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                with os.scandir(sub) as it:
                    children = [e.name for e in it]
                for child in children:
                    os.rename(child, f".rm-{secrets.token_hex(8)}", src_dir_fd=sub, dst_dir_fd=fd)
            finally:
                os.close(sub)
            if not children:  # an empty folder that rmdir refused: no pass would do better
                raise OSError(f"cannot remove the empty folder {name!r}")


def remove_tree(root: str | os.PathLike, *, tries: int = 50) -> bool:
    """Delete the folder ``root`` and everything in it (a few tries: a process of the sandbox may still
    be dying); True when it is gone.  Never raises for what the tree holds."""
    root = os.fspath(root)
    for attempt in range(tries):
        try:
            st = os.lstat(root)
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(root)
                return True
            if st.st_mode & 0o700 != 0o700:
                _own_folder(root)
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                _empty(fd)
            finally:
                os.close(fd)
            os.rmdir(root)
            return True
        except FileNotFoundError:
            if not os.path.lexists(root):
                return True
        except (OSError, ValueError):
            pass
        if attempt + 1 < tries:
            time.sleep(0.1)
    return not os.path.lexists(root)


def _report(folder: Path) -> None:
    print(f"warning: could not remove the grader's old work folder {folder}; delete it by hand (it holds "
          "nothing the grader needs)", file=sys.stderr, flush=True)


def remove_stale_workdirs() -> list[Path]:
    """Delete the work folders of grading runs that were killed (their process no longer exists); the
    folders that could not be deleted are reported on stderr and returned (they never stop grading)."""
    left = []
    for folder in Path(workdir_parent()).glob(f"{_PREFIX}*-*"):
        match = _NAME.fullmatch(folder.name)
        if not match or folder.is_symlink() or not folder.is_dir():
            continue
        try:
            os.kill(int(match.group(1)), 0)
            continue  # still running (or another user's process)
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue
        if not remove_tree(folder, tries=3):
            _report(folder)
            left.append(folder)
    return left


def remove_workdirs_of(pid: int) -> None:
    """Delete the work folders of the process ``pid``, which has exited (a worker of a batch run)."""
    for folder in Path(workdir_parent()).glob(f"{_PREFIX}{int(pid)}-*"):
        if _NAME.fullmatch(folder.name) and not folder.is_symlink() and folder.is_dir():
            if not remove_tree(folder):
                _report(folder)
