"""Text from a submission, made safe to show: on one line, and as a spreadsheet's text.

A student chooses their notebook's file name, their functions' error messages and what their
answers print, so anything the grader writes from a submission is escaped first: :func:`one_line`
keeps it on one line of a report or a terminal (no forged feedback lines, no terminal escapes), and
:func:`csv_cell` keeps a spreadsheet from reading a CSV cell as a formula (OWASP's CSV injection).
"""

from __future__ import annotations

import hashlib
import re

from dptutor._validate import check_bool, check_str

__all__ = ["one_line", "csv_cell", "csv_text", "display_name", "feedback_name"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: First characters that make a spreadsheet read a cell as a formula (OWASP's CSV injection list),
#: and the quote that escapes them.
_FORMULA = ("=", "+", "-", "@", "\t", "\r", "'")


def one_line(text: str) -> str:
    """``text`` with control characters (newlines, terminal escapes) written as ``\\n``, ``\\x1b``, ..."""
    text = check_str(text, "text")
    return _CONTROL.sub(lambda m: _SHORT.get(m.group(), f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256
                                             else f"\\u{ord(m.group()):04x}"), text)


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: a quote before a leading ``= + - @``, tab, CR or quote."""
    text = check_str(text, "text")
    return "'" + text if text.startswith(_FORMULA) else text


def csv_text(cell: str) -> str:
    """The text :func:`csv_cell` escaped (its inverse)."""
    cell = check_str(cell, "cell")
    return cell[1:] if cell.startswith("'") else cell


def display_name(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (surrogate escapes) become ``\\xNN``."""
    name = check_str(name, "name")
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def feedback_name(file: str, *, shared: bool = False) -> str:
    """The feedback file of a submission: ``<stem>.txt``, or a short safe name plus a hash of the
    whole file name for odd names and for a stem that ``shared`` says another submission also has
    (``a.md`` and ``a.ipynb`` get different files)."""
    file = check_str(file, "file")
    shared = check_bool(shared, "shared")
    stem = file.rsplit(".", 1)[0] if "." in file[1:] else file
    if not shared and re.fullmatch(r"[\w][\w .,()+-]{0,99}", stem) and not stem.endswith((" ", ".")):
        return f"{stem}.txt"
    digest = hashlib.sha256(file.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    safe = re.sub(r"[^\w.-]+", "_", stem, flags=re.ASCII).strip("._")[:60]
    return f"{safe}-{digest}.txt" if safe else f"{digest}.txt"

