"""The one size check that the zoo's and DP-Sniper's mechanisms share (beyond :mod:`dptutor._validate`)."""

from __future__ import annotations

from dptutor._validate import MAX_ELEMENTS

__all__ = ["check_output_elements"]


def check_output_elements(size: int, width: int, what: str = "len(data)") -> tuple[int, int]:
    """``(size, width)``, the shape of ``size`` outputs of ``width`` entries each, if it holds at most
    ``MAX_ELEMENTS`` elements; else a ``ValueError`` naming ``size`` (never a ``MemoryError`` of numpy's)."""
    if size * width > MAX_ELEMENTS:
        raise ValueError(f"size * {what} = {size:,} * {width:,} elements, more than the limit of {MAX_ELEMENTS:,}; "
                         "ask for fewer outputs at a time")
    return size, width
