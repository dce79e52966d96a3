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

from helpers import BookBuild
from dptutor.accounting import advanced_composition, basic_composition, optimal_composition_epsilon
from dptutor.audit import estimate_loss, exact_loss
from dptutor.distributions import dptext_pdf, laplace_pdf, laplace_ppf_centered
from dptutor.epsilon import laplace_interval, posterior_bound, tpr_bound
from dptutor.mechanisms import MECHANISMS

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"),
                             shutil.which("google-chrome")) if p), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium); .ci/run installs it")

MARKER = "dptutor-explorable"
LEVEL, COUNT = 0.95, 412                     # the epsilon chapter's count explorable: confidence level and count
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


def snap(value: float, start: float, step: float, size: int) -> int:
    """The index of a slider's value in its explorable's grid, as the explorables' CustomJS computes it."""
    return min(size - 1, max(0, round((value - start) / step)))


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text.replace("ε", "").replace(",", ""))]


def shown_text(page: DevTools, name: str, start: str) -> str:
    text = page.evaluate(f"window.__model('{name}').text")
    assert text in page.evaluate(f"window.__shown({json.dumps(start)})"), "the text is not on the page"
    return text


def value(page: DevTools, slider: str) -> float:
    return page.evaluate(f"window.__model('{slider}').value")


# -- the checks: each reads its sliders' values and compares the page with what dptutor computes ------------

def check_tests_explorable(page: DevTools) -> None:
    eps = round((snap(value(page, "eps-tests-slider"), 0.05, 0.05, 200) + 1) * 0.05, 2)
    curve = page.evaluate("window.__data('eps-tests-curve')")
    marker = page.evaluate("window.__data('eps-tests-marker')")
    kink = 1.0 / (1.0 + math.exp(eps))
    assert curve["x"] == pytest.approx([0.0, kink, 1.0], rel=1e-12)
    assert curve["y"] == pytest.approx([0.0, tpr_bound(kink, eps), 1.0], rel=1e-12)
    assert marker["x"] == pytest.approx([eps], rel=1e-12)
    assert marker["y"] == pytest.approx([posterior_bound(eps)], rel=1e-12)
    shown = numbers(shown_text(page, "eps-tests-text", "ε = "))
    assert shown[0] == pytest.approx(eps, abs=0.005)
    assert shown[2] == pytest.approx(100 * tpr_bound(0.01, eps), abs=0.0051)      # "1 %" is shown[1]
    assert shown[4] == pytest.approx(100 * posterior_bound(eps), abs=0.0051)      # "50 %" is shown[3]


def check_bars_explorable(page: DevTools) -> None:
    eps = round((snap(value(page, "eps-bars-slider"), 0.05, 0.05, 200) + 1) * 0.05, 2)
    half = laplace_interval(1.0, eps, LEVEL)
    bar = page.evaluate("window.__data('eps-bars-bar')")
    releases = page.evaluate("window.__data('eps-bars-releases')")
    marker = page.evaluate("window.__data('eps-bars-marker')")
    assert bar["low"] == pytest.approx([COUNT - half], rel=1e-12)
    assert bar["high"] == pytest.approx([COUNT + half], rel=1e-12)
    noise = np.array(releases["noise"])
    assert np.allclose(releases["y"], COUNT + noise / eps, rtol=1e-12)
    assert marker["x"] == pytest.approx([eps], rel=1e-12) and marker["y"] == pytest.approx([half], rel=1e-12)
    shown = numbers(shown_text(page, "eps-bars-text", "ε = "))
    assert shown[0] == pytest.approx(eps, abs=0.005) and shown[1] == COUNT
    assert shown[2] == pytest.approx(half, abs=0.0051)
    assert shown[4] == int(np.sum(np.abs(noise / eps) > half))


def check_laplace_explorable(page: DevTools) -> None:
    eps = (snap(value(page, "lap-eps-slider"), 0.1, 0.1, 20) + 1) / 10
    sens = (snap(value(page, "lap-sens-slider"), 0.5, 0.5, 4) + 1) / 2
    scale = sens / eps
    dens = page.evaluate("window.__data('lap-explore-densities')")
    loss = page.evaluate("window.__data('lap-explore-loss')")
    band = page.evaluate("window.__data('lap-explore-band')")
    y = np.linspace(-4.0, 6.0, 81)
    assert dens["y"] == pytest.approx(y.tolist(), abs=1e-12)
    assert dens["p"] == pytest.approx(laplace_pdf(y, 0.0, scale).tolist(), rel=1e-12)
    assert dens["q"] == pytest.approx(laplace_pdf(y, sens, scale).tolist(), rel=1e-12)
    expected = np.log(laplace_pdf(y, 0.0, scale) / laplace_pdf(y, sens, scale))
    assert loss["loss"] == pytest.approx(expected.tolist(), abs=1e-9)
    assert band["bottom"] == pytest.approx([-eps]) and band["top"] == pytest.approx([eps])
    shown = numbers(shown_text(page, "lap-explore-text", "ε = "))
    assert shown[:3] == pytest.approx([eps, sens, scale], abs=0.0051)
    assert shown[3:] == pytest.approx([expected.min(), expected.max()], abs=0.000051)
    assert shown[3:] == pytest.approx([-eps, eps], abs=0.000051)   # the loss reaches -eps and +eps, no more


DPT_SEED, DPT_DRAWS = 2022, 20_000           # the dptext chapter's shared uniforms


def check_dptext_explorable(page: DevTools) -> None:
    a = round(-0.5 + 0.025 * snap(value(page, "dpt-explore-slider"), -0.5, 0.025, 21), 3)
    v = a + np.random.default_rng(DPT_SEED).random(DPT_DRAWS)
    real = (v > -0.5) & (v < 0.5)
    draws = laplace_ppf_centered(v[real])
    edges = np.linspace(-6.0, 6.0, 49)
    bars = page.evaluate("window.__data('dpt-explore-bars')")
    assert bars["top"] == pytest.approx((np.histogram(draws, edges)[0] / (DPT_DRAWS * 0.25)).tolist(), rel=1e-12)
    curve = page.evaluate("window.__data('dpt-explore-curve')")
    x = np.array(curve["x"])
    lowest = laplace_ppf_centered(a) if a > -0.5 else -np.inf
    assert curve["y"] == pytest.approx(np.where(x >= lowest, laplace_pdf(x), 0.0).tolist(), rel=1e-12)
    if a == 0.0:                               # DPText's own uniform: the real draws' law is dptext_pdf's
        assert curve["y"] == pytest.approx(dptext_pdf(x, nan="keep").tolist(), rel=1e-12)
    shown = numbers(shown_text(page, "dpt-explore-text", "a = "))
    assert shown[0] == pytest.approx(a, abs=0.0005)
    assert shown[1] == pytest.approx(100 * (1 - real.mean()), abs=0.051)
    assert shown[2] == pytest.approx(100 * np.mean(draws < 0) * real.mean(), abs=0.051)


def check_audit_explorable(page: DevTools) -> None:
    i = snap(value(page, "ra-explore-slider"), 2.0, 0.25, 17)
    run = estimate_loss(MECHANISMS["laplace"], n=1, epsilon=1.0, trials=int(round(10 ** (2 + 0.25 * i))), rng=1)
    low, high = run.confidence_interval(0.95)
    now = page.evaluate("window.__data('ra-explore-now')")
    assert now["x"] == pytest.approx([2 + 0.25 * i]) and now["loss"] == pytest.approx([run.loss], rel=1e-12)
    assert now["low"] == pytest.approx([low], rel=1e-12) and now["high"] == pytest.approx([high], rel=1e-12)
    shown = numbers(shown_text(page, "ra-explore-text", "T = "))
    assert shown[0] == run.trials
    assert shown[2] == 95                      # "95 %"
    assert [shown[1], *shown[3:]] == pytest.approx([run.loss, low, high, exact_loss("laplace", 1, 1.0)], abs=0.000051)


ACC_K = np.unique(np.geomspace(1, 2000, 200).round().astype(int))    # the accounting chapter's grid of k


def check_accounting_explorable(page: DevTools) -> None:
    k = int(ACC_K[snap(value(page, "acc-explore-slider"), 0, 1, ACC_K.size)])
    totals = [basic_composition(0.1, 0.0, k)[0], advanced_composition(0.1, 0.0, k, 1e-6)[0],
              optimal_composition_epsilon(0.1, k, 1e-6)]
    now = page.evaluate("window.__data('acc-explore-now')")
    assert now["k"] == [k] * 3 and now["total"] == pytest.approx(totals, rel=1e-12)
    shown = numbers(shown_text(page, "acc-explore-text", "k = "))
    assert shown[0] == k and shown[1] == 0.1
    assert shown[2:] == pytest.approx(totals, abs=0.00051)


class Slider:
    """A slider as the reader sees it: its range, its step, its first value, and the check of its explorable."""

    def __init__(self, name: str, start: float, end: float, step: float, initial: float, check) -> None:
        self.name, self.start, self.end, self.step, self.initial, self.check = name, start, end, step, initial, check


#: Every page with explorables, and its sliders in page order.
PAGES = {
    "epsilon": [Slider("eps-tests-slider", 0.05, 10.0, 0.05, 1.0, check_tests_explorable),
                Slider("eps-bars-slider", 0.05, 10.0, 0.05, 1.0, check_bars_explorable)],
    "laplace_mechanism": [Slider("lap-eps-slider", 0.1, 2.0, 0.1, 1.0, check_laplace_explorable),
                          Slider("lap-sens-slider", 0.5, 2.0, 0.5, 1.0, check_laplace_explorable)],
    "dptext": [Slider("dpt-explore-slider", -0.5, 0.0, 0.025, -0.5, check_dptext_explorable)],
    "reading_audits": [Slider("ra-explore-slider", 2.0, 6.0, 0.25, 5.0, check_audit_explorable)],
    "accounting": [Slider("acc-explore-slider", 0, ACC_K.size - 1, 1, int(np.searchsorted(ACC_K, 100)),
                          check_accounting_explorable)],
}
#: Bokeh documents (one per explorable) on each page.
EXPLORABLES = {"epsilon": 2, "laplace_mechanism": 1, "dptext": 1, "reading_audits": 1, "accounting": 1}
#: Keys pressed on a slider's handle: each moves the value by this many steps, or to an end (None: PageUp, a
#: larger step up, whatever noUiSlider makes it).
MOVES = [(["ArrowRight"] * 10, 10), (["ArrowLeft"] * 3, -3), (["End"], "end"), (["ArrowRight"], 1),
         (["Home"], "start"), (["PageUp"], None)]


def expected_value(slider: Slider, value: float, move) -> float | None:
    if move == "end":
        return slider.end
    if move == "start":
        return slider.start
    if move is None:
        return None
    return min(slider.end, max(slider.start, value + move * slider.step))


def explorable_pages(html: Path) -> set[str]:
    """The pages whose HTML holds an explorable, found from the marker in the built site."""
    return {page.stem for page in (html / "book").rglob("*.html") if MARKER in page.read_text()}


def test_every_page_with_an_explorable_is_tested(book_build: BookBuild) -> None:
    assert book_build.returncode == 0, "the book did not build"
    assert explorable_pages(book_build.html) == set(PAGES)


@needs_chromium
@pytest.mark.parametrize("name", sorted(PAGES))
def test_sliders_move_the_plotted_data_and_numbers(book_build: BookBuild, tmp_path: Path, name: str) -> None:
    assert book_build.returncode == 0, "the book did not build"
    move_sliders(book_build.html, tmp_path, name)


def move_sliders(html: Path, tmp_path: Path, name: str) -> None:
    page = DevTools(tmp_path / "profile")
    try:
        page.open((html / "book" / f"{name}.html").as_uri())
        deadline = time.monotonic() + 60
        while not page.evaluate("typeof Bokeh !== 'undefined' && Bokeh.documents.length === "
                                f"{EXPLORABLES[name]}"):
            assert time.monotonic() < deadline, "the explorables did not render"
            time.sleep(0.2)
        page.evaluate(HELPERS)
        handles = page.evaluate("window.__deep(document, (el) => el.classList.contains('noUi-handle')).length")
        assert handles == len(PAGES[name])
        for number, slider in enumerate(PAGES[name]):
            now = value(page, slider.name)
            assert now == pytest.approx(slider.initial)
            slider.check(page)
            for keys, move in MOVES:
                page.evaluate(f"window.__deep(document, (el) => el.classList.contains('noUi-handle'))"
                              f"[{number}].focus(); true")
                for key in keys:
                    page.press(key)
                moved = value(page, slider.name)
                expected = expected_value(slider, now, move)
                if expected is None:
                    assert moved > now or now == slider.end
                else:
                    assert moved == pytest.approx(expected, abs=1e-9), (slider.name, keys)
                now = moved
                slider.check(page)
        assert not page.errors(), page.errors()
    finally:
        page.close()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_bokehjs_is_served_once_from_static(book_build: BookBuild, name: str) -> None:
    assert book_build.returncode == 0, "the book did not build"
    check_served(book_build.html, name)


def check_served(html: Path, name: str) -> None:
    text = (html / "book" / f"{name}.html").read_text()
    sources = [src.split("?")[0] for src in re.findall(r'<script[^>]+src="([^"]*bokeh[^"]*)"', text)]
    assert len(sources) == 2 and all(not s.startswith(("http:", "https:", "//")) for s in sources), sources
    for src in sources:
        assert (html / "book" / src).resolve().is_file(), src
    assert text.count(MARKER) >= EXPLORABLES[name]
    # Not inlined: the page is far smaller than BokehJS itself, and the explorables add under 300 kB.
    blocks = re.findall(r'<div class="dptutor-explorable">.*?</script>\s*</div>', text, flags=re.S)
    assert len(blocks) == EXPLORABLES[name]
    assert sum(len(b.encode()) for b in blocks) < MAX_GROWTH
    assert len(text.encode()) < (html / "book" / sources[0]).resolve().stat().st_size
    # Every other page goes without.
    for page in (html / "book").rglob("*.html"):
        if page.stem not in PAGES:
            assert "bokeh" not in page.read_text().lower(), page
