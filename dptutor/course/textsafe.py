"""Text from a submission, made safe to show: valid, visible, on one line, and as a spreadsheet's text.

A student chooses their notebook's file name, their functions' error messages and what their
answers print, so anything the grader writes from a submission is escaped first: :func:`safe_text`
writes the characters that are not valid or not visible text (lone surrogates, which no UTF-8 file
can hold, and Unicode format characters such as bidi overrides and zero-width joiners, which can
reorder or hide what a reader sees) as ``\\u{202e}``; :func:`one_line` also keeps it on one line of
a report or a terminal (no forged feedback lines, no terminal escapes), and :func:`csv_cell` keeps
a spreadsheet from reading a CSV cell as a formula (OWASP's CSV injection).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import unicodedata

from collections.abc import Iterable, Sequence

from dptutor._validate import check_bool, check_str

__all__ = ["safe_text", "one_line", "csv_cell", "csv_text", "display_name", "feedback_name"]
# csv_document serves the course's CSV writers (their cells already made safe), hence outside __all__.

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: First characters that make a spreadsheet read a cell as a formula (OWASP's CSV injection list),
#: and the quote that escapes them.
_FORMULA = ("=", "+", "-", "@", "\t", "\r", "'")


def safe_text(text: str) -> str:
    """``text`` with lone surrogates and format characters (Unicode category Cf: bidi overrides and
    isolates, zero-width spaces and joiners, byte-order marks, ...) written as ``\\u{202e}``."""
    text = check_str(text, "text")
    if text.isascii():
        return text
    return "".join(f"\\u{{{ord(c):x}}}" if unicodedata.category(c) in ("Cf", "Cs") else c for c in text)


def one_line(text: str) -> str:
    """``text`` made safe (:func:`safe_text`), with control characters (newlines, terminal escapes)
    written as ``\\n``, ``\\x1b``, ..."""
    text = safe_text(check_str(text, "text"))
    return _CONTROL.sub(lambda m: _SHORT.get(m.group(), f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256
                                             else f"\\u{ord(m.group()):04x}"), text)


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text (made safe by :func:`safe_text`, then a quote before a
    leading ``= + - @``, tab, CR or quote)."""
    text = safe_text(check_str(text, "text"))
    return "'" + text if text.startswith(_FORMULA) else text


def csv_text(cell: str) -> str:
    """The text :func:`csv_cell` escaped (its inverse)."""
    cell = check_str(cell, "cell")
    return cell[1:] if cell.startswith("'") else cell


def csv_document(rows: Iterable[Sequence[object]]) -> str:
    """``rows`` as the text of a CSV file (the csv module's dialect, ``\r\n`` line ends), to be written whole by
    :func:`dptutor.grid_files.atomic_write_text`."""
    buffer = io.StringIO(newline="")
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


def display_name(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (surrogate escapes) become ``\\xNN``, and the
    result is made safe (:func:`safe_text`)."""
    name = check_str(name, "name")
    try:
        name = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no file system decoding gives: written as \u{...}
        pass
    return safe_text(name)


def feedback_name(file: str, *, shared: bool = False) -> str:
    """The feedback file of a submission: ``<stem>.txt``, or a short safe name plus a hash of the
    whole file name for odd names and for a stem that ``shared`` says another submission also has
    (``a.md`` and ``a.ipynb`` get different files)."""
    file = check_str(file, "file")
    shared = check_bool(shared, "shared")
    stem = file.rsplit(".", 1)[0] if "." in file[1:] else file
    if not shared and re.fullmatch(r"[\w][\w .,()+-]{0,99}", stem) and not stem.endswith((" ", ".")):
        return f"{stem}.txt"
    digest = hashlib.sha256(file.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    safe = re.sub(r"[^\w.-]+", "_", stem, flags=re.ASCII).strip("._")[:60]
    return f"{safe}-{digest}.txt" if safe else f"{digest}.txt"

