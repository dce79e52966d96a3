"""The explorables work as a reader uses them: headless Chromium loads the built page, the test presses keys on
each slider's handle through the DevTools protocol, and the plotted data and the displayed numbers become the
values that dptutor computes for the new setting; the page logs no JavaScript error, BokehJS comes from the
site's _static (once, only on pages with an explorable), and the explorables add less than 300 kB to a page.

The DevTools protocol runs over ``--remote-debugging-pipe`` (file descriptors 3 and 4 of the browser, messages
separated by NUL bytes), so no websocket client is needed.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import re
import select
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import BookBuild
from dptutor.epsilon import laplace_interval, posterior_bound, tpr_bound

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"),
                             shutil.which("google-chrome")) if p), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium); .ci/run installs it")

#: Pages with explorables, and the names of their sliders in page order.
PAGES = {"epsilon": ["eps-tests-slider", "eps-bars-slider"]}
MARKER = "dptutor-explorable"
STEP, START, END = 0.05, 0.05, 10.0          # every explorable's epsilon slider
LEVEL, COUNT = 0.95, 412                     # the count explorable's confidence level and count
MAX_GROWTH = 300_000                         # bytes an explorable page may grow by


class DevTools:
    """A minimal client of the Chrome DevTools protocol over --remote-debugging-pipe."""

    def __init__(self, profile: Path) -> None:
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def wire() -> None:                  # in the child: its fd 3 reads our messages, fd 4 writes its own
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser, from_browser)]
            os.dup2(high[0], 3)              # (via fds >= 10, so that neither dup2 clobbers the other's source)
            os.dup2(high[1], 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
             f"--user-data-dir={profile}", "--allow-file-access-from-files", "--remote-debugging-pipe",
             "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        self.session: str | None = None

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False, timeout=10)
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._write)
        os.close(self._read)

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise RuntimeError("Chromium did not answer in time")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict | None = None, *, session: bool = True, timeout: float = 60) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._receive(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str, timeout: float = 60):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def press(self, key: str) -> None:
        codes = {"ArrowRight": 39, "ArrowLeft": 37, "Home": 36, "End": 35, "PageUp": 33, "PageDown": 34}
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": key,
                                                 "windowsVirtualKeyCode": codes[key]})

    def errors(self) -> list[str]:
        """The errors the page logged: exceptions, console errors, log entries at level error. One message is
        not an error of the page: pydata-sphinx-theme reports with console.error, on every page of the site,
        that a new visitor has no stored light/dark mode yet."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(json.dumps(params["entry"])[:500])
        return [f for f in found if THEME_NOTICE not in f]


THEME_NOTICE = "Got invalid theme mode: . Resetting to auto."

# JavaScript run in the page: Bokeh's models by name, the slider handles and the rendered text (inside the
# widgets' shadow roots).
HELPERS = """
window.__deep = (root, test, out = []) => {
  for (const el of root.querySelectorAll('*')) {
    if (test(el)) out.push(el);
    if (el.shadowRoot) window.__deep(el.shadowRoot, test, out);
  }
  return out;
};
window.__model = (name) => {
  for (const doc of Bokeh.documents) { const m = doc.get_model_by_name(name); if (m) return m; }
  throw new Error('no model ' + name);
};
window.__data = (name) => Object.fromEntries(
  Object.entries(window.__model(name).data).map(([k, v]) => [k, Array.from(v)]));
window.__shown = (start) => window.__deep(document, (el) => el.childElementCount === 0
  && (el.textContent || '').startsWith(start)).map((el) => el.textContent);
true
"""


def grid_index(value: float) -> int:
    return min(int(round((END - START) / STEP)), max(0, round(value / STEP) - 1))


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text.replace("ε", ""))]


def check_tests_explorable(page: DevTools, eps: float) -> None:
    curve = page.evaluate("window.__data('eps-tests-curve')")
    marker = page.evaluate("window.__data('eps-tests-marker')")
    kink = 1.0 / (1.0 + math.exp(eps))
    assert curve["x"] == pytest.approx([0.0, kink, 1.0], rel=1e-12)
    assert curve["y"] == pytest.approx([0.0, tpr_bound(kink, eps), 1.0], rel=1e-12)
    assert marker["x"] == pytest.approx([eps], rel=1e-12)
    assert marker["y"] == pytest.approx([posterior_bound(eps)], rel=1e-12)
    text = page.evaluate("window.__model('eps-tests-text').text")
    assert text in page.evaluate("window.__shown('ε = ')"), "the text is not on the page"
    shown = numbers(text)
    assert shown[0] == pytest.approx(eps, abs=0.005)
    assert shown[2] == pytest.approx(100 * tpr_bound(0.01, eps), abs=0.0051)      # "1 %" is shown[1]
    assert shown[4] == pytest.approx(100 * posterior_bound(eps), abs=0.0051)      # "50 %" is shown[3]


def check_bars_explorable(page: DevTools, eps: float) -> None:
    half = laplace_interval(1.0, eps, LEVEL)
    bar = page.evaluate("window.__data('eps-bars-bar')")
    releases = page.evaluate("window.__data('eps-bars-releases')")
    marker = page.evaluate("window.__data('eps-bars-marker')")
    assert bar["low"] == pytest.approx([COUNT - half], rel=1e-12)
    assert bar["high"] == pytest.approx([COUNT + half], rel=1e-12)
    noise = np.array(releases["noise"])
    assert np.allclose(releases["y"], COUNT + noise / eps, rtol=1e-12)
    assert marker["x"] == pytest.approx([eps], rel=1e-12) and marker["y"] == pytest.approx([half], rel=1e-12)
    text = page.evaluate("window.__model('eps-bars-text').text")
    assert text in page.evaluate("window.__shown('ε = ')"), "the text is not on the page"
    shown = numbers(text)
    assert shown[0] == pytest.approx(eps, abs=0.005) and shown[1] == COUNT
    assert shown[2] == pytest.approx(half, abs=0.0051)
    assert shown[4] == int(np.sum(np.abs(noise / eps) > half))


CHECKS = {"eps-tests-slider": check_tests_explorable, "eps-bars-slider": check_bars_explorable}
#: Keys pressed on a slider's handle, and the value each sequence must reach from the previous one.
MOVES = [(["ArrowRight"] * 10, 1.5), (["ArrowLeft"] * 3, 1.35), (["End"], END), (["ArrowRight"], END),
         (["Home"], START), (["PageUp"], None)]


@needs_chromium
@pytest.mark.parametrize("name", sorted(PAGES))
def test_sliders_move_the_plotted_data_and_numbers(book_build: BookBuild, tmp_path: Path, name: str) -> None:
    assert book_build.returncode == 0, "the book did not build"
    page = DevTools(tmp_path / "profile")
    try:
        page.open((book_build.html / "book" / f"{name}.html").as_uri())
        deadline = time.monotonic() + 60
        while not page.evaluate("typeof Bokeh !== 'undefined' && Bokeh.documents.length === "
                                f"{len(PAGES[name])}"):
            assert time.monotonic() < deadline, "the explorables did not render"
            time.sleep(0.2)
        page.evaluate(HELPERS)
        handles = page.evaluate("window.__deep(document, (el) => el.classList.contains('noUi-handle')).length")
        assert handles == len(PAGES[name])
        for number, slider in enumerate(PAGES[name]):
            assert page.evaluate(f"window.__model('{slider}').value") == pytest.approx(1.0)
            CHECKS[slider](page, 1.0)
            value = 1.0
            for keys, expected in MOVES:
                page.evaluate(f"window.__deep(document, (el) => el.classList.contains('noUi-handle'))"
                              f"[{number}].focus(); true")
                for key in keys:
                    page.press(key)
                moved = page.evaluate(f"window.__model('{slider}').value")
                if expected is None:          # PageUp: a larger step up, whatever noUiSlider makes it
                    assert moved > value
                else:
                    assert moved == pytest.approx(expected, abs=1e-9), (slider, keys)
                value = moved
                eps = round((grid_index(value) + 1) * STEP, 2)
                CHECKS[slider](page, eps)
        assert not page.errors(), page.errors()
    finally:
        page.close()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_bokehjs_is_served_once_from_static(book_build: BookBuild, name: str) -> None:
    assert book_build.returncode == 0, "the book did not build"
    html = book_build.html
    text = (html / "book" / f"{name}.html").read_text()
    sources = [src.split("?")[0] for src in re.findall(r'<script[^>]+src="([^"]*bokeh[^"]*)"', text)]
    assert len(sources) == 2 and all(not s.startswith(("http:", "https:", "//")) for s in sources), sources
    for src in sources:
        assert (html / "book" / src).resolve().is_file(), src
    assert text.count(MARKER) >= len(PAGES[name])
    # Not inlined: the page is far smaller than BokehJS itself, and the explorables add under 300 kB.
    blocks = re.findall(r'<div class="dptutor-explorable">.*?</script>\s*</div>', text, flags=re.S)
    assert len(blocks) == len(PAGES[name])
    assert sum(len(b.encode()) for b in blocks) < MAX_GROWTH
    assert len(text.encode()) < (html / "book" / sources[0]).resolve().stat().st_size
    # Every other page goes without.
    for page in (html / "book").rglob("*.html"):
        if page.stem not in PAGES:
            assert "bokeh" not in page.read_text().lower(), page
