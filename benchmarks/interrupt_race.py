"""What ipykernel does with an interrupt that arrives as a cell ends: the race behind the grader's lost replies.

    python benchmarks/interrupt_race.py                  # 240 interrupts around the end of a 50 ms cell
    python benchmarks/interrupt_race.py --rounds 600

A kernel runs a cell that spins for 50 ms; after a delay that sweeps 30 ms across the cell's measured round
trip (60 steps of 0.5 ms), the client interrupts the kernel, then collects the cell's reply (if one comes within
3 s) and its IOPub messages, and runs a small cell to check that the kernel still answers.  The script prints how
the interrupted cells ended: with a normal reply, with a ``KeyboardInterrupt`` reply, or with no reply at all,
and for the last, what IOPub said about the cell.  It stops if the kernel dies.  The grader relies on the count of the third kind being
explained: such a cell is ended on IOPub (``status: idle``) with no error output, and the kernel answers the next
cell (see ``dptutor.course.intake``, "The kernel's output").
"""

from __future__ import annotations

import argparse
import collections
import queue
import time
from typing import Any

BUSY = "import time\ndef busy(t):\n    end = time.perf_counter() + t\n    while time.perf_counter() < end:\n        pass"


def _reply(kc: Any, msg_id: str, wait: float = 3.0) -> str | None:
    """``"status:ename"`` of the reply to ``msg_id``, or None if none comes within ``wait`` seconds."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            msg = kc.get_shell_msg(timeout=max(0.01, end - time.monotonic()))
        except queue.Empty:
            return None
        if msg["parent_header"].get("msg_id") == msg_id:
            return f"{msg['content']['status']}:{msg['content'].get('ename', '')}"
    return None


def _iopub(kc: Any, msg_id: str, wait: float = 1.0) -> list[str]:
    """The IOPub messages of ``msg_id`` up to its idle status, within ``wait`` seconds (type, and state or error name)."""
    seen, end = [], time.monotonic() + wait
    while time.monotonic() < end:
        try:
            msg = kc.get_iopub_msg(timeout=0.05)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            content = msg["content"]
            seen.append(f"{msg['msg_type']}:{content.get('execution_state', content.get('ename', ''))}")
            if content.get("execution_state") == "idle":
                break
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=240, help="interrupts to send (default 240)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        kc.execute_interactive(BUSY, timeout=30)
        started = time.perf_counter()
        kc.execute_interactive("busy(0.05)", timeout=30)
        trip = time.perf_counter() - started
        ends: collections.Counter[str] = collections.Counter()
        lost: collections.Counter[str] = collections.Counter()
        next_ok, died = 0, 0
        for i in range(args.rounds):
            msg_id = kc.execute("busy(0.05)")
            time.sleep(max(0.0, trip - 0.015 + (i % 60) * 0.0005))
            km.interrupt_kernel()
            reply = _reply(kc, msg_id)
            seen = _iopub(kc, msg_id)
            ends[reply or "no reply"] += 1
            if reply is None:
                lost[" ".join(seen)] += 1
            if not km.is_alive():
                died = i + 1
                break
            check = kc.execute("y = 1")
            next_ok += _reply(kc, check) == "ok:"
            _iopub(kc, check, 0.2)
        sent = sum(ends.values())
        print(f"cell round trip {trip * 1000:.1f} ms; {sent} interrupts swept over 30 ms around its end"
              + (f"; the kernel died at interrupt {died}" if died else ""))
        for kind, count in ends.most_common():
            print(f"  {kind:24s} {count}")
        for seen, count in lost.most_common():
            print(f"  no reply, IOPub said: {seen}  ({count})")
        print(f"  the next cell answered ok after {next_ok} of {sent - bool(died)}")
    finally:
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
