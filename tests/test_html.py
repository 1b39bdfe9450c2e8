"""The HTML report, driven in headless Chromium over the DevTools protocol.

Chromium is driven through ``--remote-debugging-pipe`` (file descriptors 3
and 4, NUL-separated JSON), so no websocket package and no browser download
is needed: only ``/usr/bin/chromium`` (Debian package ``chromium``).  The
tests are skipped, with a reason, when no Chromium is installed.

Run as a script to write the README screenshots::

    PYTHONPATH=python python3 tests/test_html.py --docs docs
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if os.path.join(ROOT, "python") not in sys.path:  # script use
    sys.path.append(os.path.join(ROOT, "python"))

from fastprof.exports import export  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402
from fastprof.data.profile_file import CallPaths, ProfileData, load_profile  # noqa: E402
from fastprof.exports.html import render_html, report_data  # noqa: E402

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser",
                       "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable")


def find_chromium():
    env = os.environ.get("FASTPROF_CHROMIUM")
    for path in ((env,) if env else ()) + CHROMIUM_CANDIDATES:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("chromium") or shutil.which("chromium-browser")


# ---------------------------------------------------------------- DevTools

class CDPError(RuntimeError):
    pass


class Chromium:
    """A headless Chromium with one page, spoken to over the DevTools pipe."""

    def __init__(self, executable, width=1400, height=1000, timeout=30.0):
        self.timeout = timeout
        self.profile_dir = tempfile.mkdtemp(prefix="fastprof-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def child_fds():  # runs in the child: chrome reads fd 3, writes fd 4
            a = os.dup(to_chrome_r)
            b = os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions",
                "--disable-dev-shm-usage", "--mute-audio", "--hide-scrollbars",
                "--user-data-dir=" + self.profile_dir, "--remote-debugging-pipe",
                "--window-size=%d,%d" % (width, height), "about:blank"]
        # not the sanitizer preload of an ASan test run: chromium is no Python
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTHONMALLOC")}
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, close_fds=False, preexec_fn=child_fds,
                                     env=env)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._responses = {}
        self.events = []
        self.mark = 0
        self._closed = False
        self._stderr = []
        threading.Thread(target=self._read_loop, daemon=True).start()
        threading.Thread(target=self._stderr_loop, daemon=True).start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(domain + ".enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    # -- plumbing
    def _stderr_loop(self):
        for line in self.proc.stderr:
            self._stderr.append(line.decode("utf-8", "replace"))

    def _read_loop(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._closed = True
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw.decode("utf-8"))
                with self._cond:
                    if "id" in msg:
                        self._responses[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self._cond.notify_all()

    def call(self, method, session=None, **params):
        with self._lock:
            self._next_id += 1
            mid = self._next_id
        msg = {"id": mid, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode("utf-8") + b"\0"
        os.write(self._to_chrome, data)
        deadline = time.monotonic() + self.timeout
        with self._cond:
            while mid not in self._responses:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    raise CDPError("no answer to %s (chromium %s)\n%s" % (
                        method, "exited" if self._closed else "timed out", "".join(self._stderr[-20:])))
                self._cond.wait(left)
            resp = self._responses.pop(mid)
        if "error" in resp:
            raise CDPError("%s: %s" % (method, resp["error"]))
        return resp.get("result", {})

    def send(self, method, **params):
        """A command to the page."""
        return self.call(method, session=self.session, **params)

    def wait_event(self, method, since=0, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while True:
                for ev in self.events[since:]:
                    if ev.get("method") == method:
                        return ev
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise CDPError("no %s event" % method)
                self._cond.wait(left)

    # -- page helpers
    def navigate(self, url):
        """Load *url*; problems() and requested_urls() then cover this page only."""
        mark = self.mark = len(self.events)
        self.send("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", since=mark)
        self.wait_for("document.body && document.body.getAttribute('data-ready') === '1'")

    def eval(self, expression):
        res = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise CDPError("JS error in %r: %s" % (expression, res["exceptionDetails"]))
        return res["result"].get("value")

    def wait_for(self, expression, timeout=60.0):
        deadline = time.monotonic() + timeout
        while True:
            if self.eval("!!(%s)" % expression):
                return
            if time.monotonic() > deadline:
                raise CDPError("timed out waiting for %s" % expression)
            time.sleep(0.05)

    def click_at(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=0 if kind == "mouseMoved" else 1)

    def click(self, selector):
        """A real mouse click in the middle of the element *selector* matches."""
        box = self.eval("""(function(){
            var e = document.querySelector(%s); if (!e) return null;
            e.scrollIntoView({block: 'center', inline: 'nearest'});
            var r = e.getBoundingClientRect();
            return [r.left + Math.min(r.width / 2, 20), r.top + r.height / 2, r.width, r.height];
        })()""" % json.dumps(selector))
        if box is None:
            raise CDPError("no element matches %s" % selector)
        assert box[2] > 0 and box[3] > 0, "element %s is not visible: %r" % (selector, box)
        self.click_at(box[0], box[1])

    def type_into(self, selector, text):
        self.eval("document.querySelector(%s).focus()" % json.dumps(selector))
        self.send("Input.insertText", text=text)

    def screenshot(self, path, full_page=False, clip_selector=None):
        params = {"format": "png"}
        if clip_selector:
            r = self.eval("""(function(){var r=document.querySelector(%s).getBoundingClientRect();
                return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];})()"""
                          % json.dumps(clip_selector))
            params["clip"] = {"x": r[0], "y": r[1], "width": r[2], "height": r[3], "scale": 1}
            params["captureBeyondViewport"] = True
        elif full_page:
            params["captureBeyondViewport"] = True
        import base64
        data = base64.b64decode(self.send("Page.captureScreenshot", **params)["data"])
        with open(path, "wb") as f:
            f.write(data)
        return data

    def problems(self):
        """Console errors, uncaught exceptions and error log entries so far."""
        out = []
        for ev in self.events[self.mark:]:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append("exception: %s" % json.dumps(p.get("exceptionDetails"))[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append("console.%s: %s" % (p["type"], json.dumps(p.get("args"))[:500]))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append("log: %s" % json.dumps(p["entry"])[:500])
        return out

    def requested_urls(self):
        return [ev["params"]["request"]["url"] for ev in self.events[self.mark:]
                if ev.get("method") == "Network.requestWillBeSent"]

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile_dir, ignore_errors=True)


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


# ---------------------------------------------------------------- profiles

WORKLOAD = textwrap.dedent('''\
    import time

    def spin(seconds):
        """Busy-wait: time that shows up as tottime."""
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            n += 1
        return n

    def parse_config(n):
        out = []
        for _ in range(n):
            out.append(spin(0.002))
        return out

    def render_page():
        spin(0.01)
        return parse_config(2)

    def handle_request():
        render_page()
        parse_config(1)
        return sorted([3, 1, 2])

    def serve(requests):
        for _ in range(requests):
            handle_request()

    def main():
        serve(4)
''')


def _load_workload(tmp_path, name="webapp"):
    path = tmp_path / (name + ".py")
    path.write_text(WORKLOAD)
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cprofile_data(tmp_path):
    """A real cProfile profile of WORKLOAD, read back from its .prof file."""
    import cProfile
    mod = _load_workload(tmp_path)
    prof = cProfile.Profile()
    prof.runcall(mod.main)
    out = tmp_path / "cprofile.prof"
    prof.dump_stats(str(out))
    return load_profile(str(out))


def fastprof_data(tmp_path):
    """The same workload under fastprof with call paths, or None without the C module."""
    try:
        import fastprof
        prof = fastprof.Profile(callpaths=True)
    except Exception:
        return None
    mod = _load_workload(tmp_path, "webapp_fp")
    prof.runcall(mod.main)
    out = tmp_path / "fastprof.prof"
    prof.dump_stats(str(out))
    return load_profile(str(out))


def synthetic_data():
    """A fastprof-style profile with call paths (exact numbers, no C module needed)."""
    f = "/nonexistent/app.py"
    main, a, b, leaf = (f, 1, "main"), (f, 10, "alpha"), (f, 20, "beta"), (f, 30, "leaf")
    stats = {
        main: (1, 1, 0.1, 1.0, {}),
        a: (1, 1, 0.1, 0.6, {main: (1, 1, 0.1, 0.6)}),
        b: (1, 1, 0.1, 0.3, {main: (1, 1, 0.1, 0.3)}),
        leaf: (3, 3, 0.7, 0.7, {a: (2, 2, 0.5, 0.5), b: (1, 1, 0.2, 0.2)}),
    }
    cp = CallPaths([main, a, b, leaf], [
        (-1, 0, 1, 0.1, 1.0),
        (0, 1, 1, 0.1, 0.6),
        (1, 3, 2, 0.5, 0.5),
        (0, 2, 1, 0.1, 0.3),
        (3, 3, 1, 0.2, 0.2),
    ])
    return ProfileData(stats, callpaths=cp, clock="monotonic")


# ---------------------------------------------------------------- offline tests (no browser)

def test_report_is_self_contained(tmp_path):
    page = render_html(cprofile_data(tmp_path), title="cprofile.prof")
    # no external resource of any kind
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)=', page, re.I)
    assert not re.search(r'url\(\s*["\']?(https?:)?//', page)
    assert "http-equiv=\"Content-Security-Policy\"" in page and "default-src 'none'" in page
    # placeholders all filled
    assert "@@" not in page
    # the JSON blob parses back and holds the workload
    blob = re.search(r'<script id="fastprof-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    payload = json.loads(blob)
    names = {f[0] for f in payload["functions"]}
    assert {"spin", "parse_config", "render_page", "handle_request", "serve"} <= names


def test_report_escapes_script_end(tmp_path):
    f = "/x/</script><script>alert(1)</script>.py"
    key = (f, 1, "</script>")
    page = render_html(ProfileData({key: (1, 1, 0.5, 0.5, {})}))
    assert page.count("</script>") == 2  # the data blob's and the code's, nothing injected
    blob = re.search(r'<script id="fastprof-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    assert json.loads(blob)["functions"][0][0] == "</script>"


def test_report_embeds_source_of_readable_files(tmp_path):
    data = cprofile_data(tmp_path)
    payload = report_data(data)
    by_name = {f[0]: i for i, f in enumerate(payload["functions"])}
    src = payload["sources"][str(by_name["render_page"])]
    assert src["start"] == 17
    assert src["lines"][0] == "def render_page():"
    assert src["lines"][-1].strip() == "return parse_config(2)"
    # C functions and unreadable files have no source
    assert str(by_name["<built-in method builtins.sorted>"]) not in payload["sources"]
    syn = report_data(synthetic_data())
    assert syn["sources"] == {}


def test_report_tree_exact_vs_estimated(tmp_path):
    assert report_data(synthetic_data())["views"][0]["tree"]["exact"] is True
    est = report_data(cprofile_data(tmp_path))["views"][0]["tree"]
    assert est["exact"] is False and len(est["func"]) > 0


# ---------------------------------------------------------------- browser tests

@pytest.fixture(scope="module")
def browser():
    exe = find_chromium()
    if not exe:
        helpers.tool_missing("chromium is not installed (apt-get install chromium)")
    b = Chromium(exe)
    yield b
    b.close()


def test_harness_sees_errors_and_fetches(browser, tmp_path):
    """The checks below mean something: a broken page *is* caught."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><img src='http://fastprof.invalid/x.png'>"
                   "<script>document.body.setAttribute('data-ready', '1');"
                   "console.error('oops'); setTimeout(function(){ null.boom(); }, 0);</script></body></html>")
    browser.navigate("file://" + str(bad))
    deadline = time.monotonic() + 30  # the timeout's exception comes when chromium gets to it
    while True:
        found = "\n".join(browser.problems())
        fetched = any(u.startswith("http://fastprof.invalid/") for u in browser.requested_urls())
        if ("console.error" in found and "exception" in found and fetched) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert "console.error" in found and "exception" in found
    assert fetched


def _open(browser, path):
    browser.navigate("file://" + str(path))


def _frames(browser):
    return browser.eval("""Array.prototype.map.call(document.querySelectorAll('#flame .frame'), function(d){
        var r = d.getBoundingClientRect(); var n = +d.getAttribute('data-node');
        return {node: n, name: n === 0 ? 'all' : window.fastprofReport.data.functions[
                   window.fastprofReport.tree().func[n - 1]][0],
                left: r.left, width: r.width, top: r.top};})""")


def _table_column(browser, col):
    return browser.eval("""Array.prototype.map.call(document.querySelectorAll('#functions tbody tr'),
        function(tr){ var td = tr.children[%d]; return td.getAttribute('data-value') !== null ?
            parseFloat(td.getAttribute('data-value')) : td.textContent; })""" % col)


@pytest.fixture(params=["cprofile", "fastprof", "synthetic"])
def report(request, tmp_path):
    if request.param == "cprofile":
        data = cprofile_data(tmp_path)
    elif request.param == "fastprof":
        data = fastprof_data(tmp_path)
        if data is None:
            pytest.skip("the fastprof C module is not built")
    else:
        data = synthetic_data()
    out = tmp_path / "report.html"
    assert export(data, str(out), title=request.param + ".prof") == "html"
    return request.param, data, out


def test_page_loads_offline_without_errors(browser, report, tmp_path):
    kind, data, out = report
    _open(browser, out)
    assert browser.problems() == []
    urls = browser.requested_urls()
    assert urls and all(u.startswith(("file://", "data:", "about:")) for u in urls), urls
    total = sum(v[2] for v in data.stats.values())
    summary = browser.eval("document.getElementById('summary').textContent")
    assert "total profiled time" in summary
    assert browser.eval("document.querySelectorAll('#functions tbody tr').length") == len(data.stats)
    # the estimated-paths warning is there exactly when the tree is estimated
    note = browser.eval("document.getElementById('flame-note').textContent")
    assert ("estimated" in note) == (data.callpaths is None)
    png = browser.screenshot(str(tmp_path / ("report-%s.png" % kind)), full_page=True)
    w, h = png_size(png)
    assert w >= 1000 and h >= 600
    assert total > 0


def test_table_sorts_and_filters(browser, tmp_path):
    out = tmp_path / "r.html"
    export(cprofile_data(tmp_path), str(out))
    _open(browser, out)
    # default: tottime, descending
    assert browser.eval("document.querySelector('#functions th[data-key=tt]').getAttribute('aria-sort')") == "descending"
    tt = _table_column(browser, 2)
    assert tt == sorted(tt, reverse=True) and tt[0] > 0
    browser.click("#functions th[data-key=tt]")
    tt = _table_column(browser, 2)
    assert tt == sorted(tt) and tt[-1] > tt[0]
    assert browser.eval("document.querySelector('#functions th[data-key=tt]').getAttribute('aria-sort')") == "ascending"
    browser.click("#functions th[data-key=nc]")
    calls = _table_column(browser, 1)
    assert calls == sorted(calls, reverse=True) and calls[0] > calls[-1]
    browser.click("#functions th[data-key=name]")
    names = browser.eval("Array.prototype.map.call(document.querySelectorAll('#functions tbody tr td.fn > div:first-child'),"
                         " function(d){return d.textContent.toLowerCase();})")
    assert names == sorted(names)
    # filter by regex
    browser.type_into("#filter", "^(spin|serve)$")
    names = browser.eval("Array.prototype.map.call(document.querySelectorAll('#functions tbody tr td.fn > div:first-child'),"
                         " function(d){return d.textContent;})")
    assert sorted(names) == ["serve", "spin"]
    assert browser.problems() == []


def test_caller_callee_navigation_and_source(browser, tmp_path):
    out = tmp_path / "r.html"
    export(cprofile_data(tmp_path), str(out))
    _open(browser, out)
    browser.type_into("#filter", "^parse_config$")
    browser.click("#functions tbody tr")
    detail = browser.eval("document.getElementById('detail').textContent")
    assert "parse_config" in detail
    callers = browser.eval("Array.prototype.map.call(document.querySelectorAll('#detail .callers a.fnlink'),"
                           " function(a){return a.textContent;})")
    callees = browser.eval("Array.prototype.map.call(document.querySelectorAll('#detail .callees a.fnlink'),"
                           " function(a){return a.textContent;})")
    assert sorted(callers) == ["handle_request", "render_page"]
    assert "spin" in callees
    src = browser.eval("document.querySelector('#detail pre.source').textContent")
    assert "def parse_config(n):" in src and "spin(0.002)" in src
    # follow a caller link: the panel now shows that function and its callees
    browser.click("#detail .callers a.fnlink[data-func='%d']" % browser.eval(
        "window.fastprofReport.data.functions.findIndex(function(f){return f[0]==='render_page';})"))
    assert browser.eval("document.querySelector('#detail h3').textContent") == "render_page"
    callees = browser.eval("Array.prototype.map.call(document.querySelectorAll('#detail .callees a.fnlink'),"
                           " function(a){return a.textContent;})")
    assert sorted(callees) == ["parse_config", "spin"]
    assert browser.problems() == []


def _check_flame_zoom(browser, name):
    frames = _frames(browser)
    width = browser.eval("document.getElementById('flame').clientWidth")
    root = [f for f in frames if f["node"] == 0]
    assert len(root) == 1 and abs(root[0]["width"] - width) <= 1
    target = max((f for f in frames if f["name"] == name), key=lambda f: f["width"])
    assert target["width"] < width - 10  # not already full width
    browser.click_at(target["left"] + min(target["width"] / 2, 10), target["top"] + 8)
    assert browser.eval("window.fastprofReport.zoom()") == target["node"]
    zoomed = {f["node"]: f for f in _frames(browser)}
    assert abs(zoomed[target["node"]]["width"] - width) <= 1  # the frame now fills the graph
    assert browser.eval("document.querySelector('#detail h3').textContent") == name
    # the root stays on top, dimmed; clicking it resets
    r = zoomed[0]
    browser.click_at(r["left"] + 20, r["top"] + 8)
    assert browser.eval("window.fastprofReport.zoom()") == 0
    again = {f["node"]: f for f in _frames(browser)}
    assert abs(again[target["node"]]["width"] - target["width"]) <= 1


def test_flame_graph_click_zooms_and_root_resets(browser, report):
    kind, data, out = report
    _open(browser, out)
    _check_flame_zoom(browser, "beta" if kind == "synthetic" else "render_page")
    assert browser.problems() == []


def test_flame_graph_widths_follow_call_paths(browser, tmp_path):
    out = tmp_path / "syn.html"
    export(synthetic_data(), str(out))
    _open(browser, out)
    frames = _frames(browser)
    width = browser.eval("document.getElementById('flame').clientWidth")
    leafs = sorted((f for f in frames if f["name"] == "leaf"), key=lambda f: f["width"])
    # leaf under alpha: 0.5 of 1.0 total, under beta: 0.2
    assert len(leafs) == 2
    assert abs(leafs[1]["width"] / width - 0.5) < 0.01
    assert abs(leafs[0]["width"] / width - 0.2) < 0.01
    # search highlights both leaf frames and sums their time once
    browser.type_into("#flame-search", "leaf")
    assert browser.eval("document.querySelectorAll('#flame .frame.match').length") == 2
    assert "70.0%" in browser.eval("document.getElementById('flame-match').textContent")


def _memory_data():
    """A fastprof profile with memory along call paths: keep() holds 2 MB
    at the end, churn() makes and drops 5 MB, chatter() allocates nothing."""
    from fastprof import Profile

    kept = []

    def keep():
        kept.append(bytearray(2 * 10**6))

    def churn():
        for _ in range(5):
            b = bytearray(10**6)
            del b

    def chatter():
        # a share of the time (a few ms, the allocations' order) and no
        # byte: the small ints are the interpreter's own
        k = 0
        while k < 4:
            i = 0
            while i < 250:
                j = 0
                while j < 250:
                    j += 1
                i += 1
            k += 1

    def main():
        keep()
        churn()
        chatter()

    p = Profile(memory=True, callpaths=True, builtins=False)
    p.enable()
    main()
    p.disable()
    return p.profile_data()


def test_memory_table_and_flame_by_bytes(browser, tmp_path):
    if helpers.USING_CPROFILE:
        pytest.skip("memory is fastprof's")
    data = _memory_data()
    out = tmp_path / "mem.html"
    export(data, str(out), min_percent=0)
    _open(browser, out)
    assert browser.problems() == []
    assert "memory peak" in browser.eval("document.getElementById('summary').textContent")
    assert not browser.eval("document.getElementById('memory-section').hidden")
    rows = browser.eval("""Array.prototype.map.call(document.querySelectorAll('#memory tbody tr'),
        function(tr){ return [tr.querySelector('a').textContent,
                              parseFloat(tr.children[1].getAttribute('data-value'))]; })""")
    # most allocated first: churn's 5 MB, then keep's 2 MB
    assert [r[0].split(".")[-1] for r in rows[:2]] == ["churn", "keep"], rows
    assert rows[0][1] >= 5 * 10**6 and 2 * 10**6 <= rows[1][1] < 3 * 10**6
    # the flame graph by bytes allocated: churn 5/7 of the width, chatter none
    assert browser.eval("window.fastprofReport.flameBy()") == "time"
    chatter_by_time = [f for f in _frames(browser) if f["name"].endswith("chatter")]
    assert chatter_by_time
    browser.eval("window.fastprofReport.setFlameBy('allocated')")
    frames = _frames(browser)
    width = browser.eval("document.getElementById('flame').clientWidth")
    (churn,) = [f for f in frames if f["name"].endswith("churn")]
    (keep,) = [f for f in frames if f["name"].endswith("keep")]
    assert abs(churn["width"] / width - 5 / 7) < 0.02, (churn, width)
    assert abs(keep["width"] / width - 2 / 7) < 0.02
    assert not [f for f in frames if f["name"].endswith("chatter")]
    assert "bytes allocated" in browser.eval("document.getElementById('flame-note').textContent")
    assert "MiB" in browser.eval("document.querySelector('#flame .frame.root').textContent")
    # held at the peak: only what was alive at the process's peak (keep's 2 MB and one of churn's)
    browser.eval("window.fastprofReport.setFlameBy('held')")
    frames = _frames(browser)
    (churn,) = [f for f in frames if f["name"].endswith("churn")]
    (keep,) = [f for f in frames if f["name"].endswith("keep")]
    assert abs(churn["width"] / width - 1 / 3) < 0.02 and abs(keep["width"] / width - 2 / 3) < 0.02
    browser.eval("window.fastprofReport.setFlameBy('time')")
    assert [f for f in _frames(browser) if f["name"].endswith("chatter")]


def _keep_2mb(kept):
    kept.append(bytearray(2 * 10**6))


def _churn_5mb():
    for _ in range(5):
        b = bytearray(10**6)
        del b


def test_memory_table_of_each_thread(browser, tmp_path):
    """Several threads: each thread's view shows its own memory rows."""
    if helpers.USING_CPROFILE:
        pytest.skip("memory is fastprof's")
    from fastprof import Profile
    kept = []
    p = Profile(memory=True, threads=True, builtins=False)
    p.enable()
    _keep_2mb(kept)
    worker = threading.Thread(target=_churn_5mb, name="churner")
    worker.start()
    worker.join()
    p.disable()
    out = tmp_path / "threads.html"
    export(p.profile_data(), str(out), min_percent=0)
    _open(browser, out)
    assert browser.problems() == []

    def memory_rows():
        return browser.eval("""Array.prototype.map.call(document.querySelectorAll('#memory tbody tr'),
            function(tr){ return [tr.querySelector('a').textContent,
                                  parseFloat(tr.children[1].getAttribute('data-value'))]; })""")

    def names(rows):
        return [r[0].split(".")[-1] for r in rows]
    everything = memory_rows()
    assert {"_keep_2mb", "_churn_5mb"} <= set(names(everything)), everything
    labels = browser.eval("window.fastprofReport.data.views.map(function(v){ return v.label; })")
    for view, mine, other in ((labels.index("churner"), "_churn_5mb", "_keep_2mb"),
                              (labels.index("MainThread"), "_keep_2mb", "_churn_5mb")):
        browser.eval("window.fastprofReport.loadView(%d)" % view)
        rows = memory_rows()
        assert mine in names(rows) and other not in names(rows), (view, rows)
        assert "the bytes of " in browser.eval("document.getElementById('memory-note').textContent")
    browser.eval("window.fastprofReport.loadView(0)")
    assert memory_rows() == everything
    del kept[:]


def test_report_without_memory_has_no_memory_parts(browser, tmp_path):
    out = tmp_path / "syn.html"
    export(synthetic_data(), str(out))
    _open(browser, out)
    assert browser.eval("document.getElementById('memory-section').hidden")
    assert browser.eval("document.getElementById('flame-by-box').hidden")


# ---------------------------------------------------------------- README screenshots

DOCS_WORKLOAD = textwrap.dedent('''\
    """A toy web app: enough layers for a flame graph worth a look."""
    import json
    import re

    WORD = re.compile(r"[a-z]+")

    def parse_request(raw):
        return json.loads(raw)

    def tokenize(text):
        return WORD.findall(text.lower())

    def score(words):
        return sum(len(w) % 7 for w in words)

    def search(query, documents):
        q = set(tokenize(query))
        hits = []
        for doc in documents:
            words = tokenize(doc)
            if q & set(words):
                hits.append((score(words), doc))
        return sorted(hits, reverse=True)

    def render_template(hits):
        rows = []
        for s, doc in hits:
            rows.append("<li>%d: %s</li>" % (s, escape(doc)))
        return "<ul>" + "".join(rows) + "</ul>"

    def escape(text):
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    def handle(raw, documents):
        req = parse_request(raw)
        hits = search(req["q"], documents)
        body = render_template(hits)
        return json.dumps({"status": 200, "body": body, "hits": hits})

    def main():
        documents = ["the quick brown fox & the <lazy> dog %d" % i for i in range(150)]
        documents += ["lorem ipsum dolor sit amet consectetur %d" % i for i in range(150)]
        for i in range(60):
            handle(json.dumps({"q": "quick fox" if i % 2 else "lorem dolor"}), documents)
''')


def write_docs_screenshots(outdir):
    """Write html-report.png and flamegraph.png of a real profile into *outdir*."""
    exe = find_chromium()
    if not exe:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    import importlib.util

    import fastprof  # the real thing: exact call paths
    tmp = tempfile.mkdtemp(prefix="fastprof-shots-")
    try:
        src = os.path.join(tmp, "webapp.py")
        with open(src, "w") as f:
            f.write(DOCS_WORKLOAD)
        spec = importlib.util.spec_from_file_location("webapp", src)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        prof = fastprof.Profile(callpaths=True)
        prof.runcall(mod.main)
        out = os.path.join(tmp, "report.html")
        sys.path.append(tmp)  # show webapp.py, not the temp dir, in the table
        try:
            export(prof.profile_data(), out, title="webapp.prof")
        finally:
            sys.path.remove(tmp)
        b = Chromium(exe, width=1400, height=1000)
        try:
            _open(b, out)
            b.type_into("#filter", "^search$")
            b.click("#functions tbody tr")
            b.eval("var e = document.getElementById('filter'); e.value = '';"
                   "e.dispatchEvent(new Event('input')); e.blur(); window.scrollTo(0, 0)")
            b.screenshot(os.path.join(outdir, "html-report.png"))
            b.screenshot(os.path.join(outdir, "flamegraph.png"), clip_selector="#flame-section")
        finally:
            b.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("wrote %s and %s" % (os.path.join(outdir, "html-report.png"), os.path.join(outdir, "flamegraph.png")))


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", metavar="DIR", default=os.path.join(ROOT, "docs"),
                    help="directory for html-report.png and flamegraph.png (default: docs/)")
    write_docs_screenshots(ap.parse_args().docs)


# ---------------------------------------------------------------- real programs, threads, sizes

REPORTS = os.path.join(ROOT, "build", "reports")

REAL_SCRIPT = textwrap.dedent('''\
    import threading

    def spin(n):
        s = 0
        for i in range(n):
            s += i
        return s

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def handler(k):
        spin(20000 + k)

    def main():
        import helper_mod          # imported at run time: exec gets a caller
        helper_mod.work()
        fib(17)
        threads = [threading.Thread(target=handler, args=(i,), name="Thread-%d (handler)" % (i + 1))
                   for i in range(30)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        spin(50000)

    main()
''')

HELPER_MODULE = textwrap.dedent('''\
    TABLE = [i * i for i in range(30000)]

    def work():
        return sum(TABLE[::3])
''')


def _run_profiler(tmp_path, *args):
    (tmp_path / "server.py").write_text(REAL_SCRIPT)
    (tmp_path / "helper_mod.py").write_text(HELPER_MODULE)
    r = subprocess.run([sys.executable, "-m"] + list(args) + ["server.py"], cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def _save_shot(browser, name):
    os.makedirs(REPORTS, exist_ok=True)
    browser.screenshot(os.path.join(REPORTS, name), full_page=False)


@pytest.mark.parametrize("how", ["cprofile", "fastprof", "fastprof-callpaths"])
def test_flame_graph_of_a_real_program_is_not_empty(browser, tmp_path, how):
    """With or without call paths, the flame graph holds the program's work."""
    if how == "cprofile":
        _run_profiler(tmp_path, "cProfile", "-o", "p.prof")
    else:
        pytest.importorskip("fastprof._fastprof")
        # raw times: the frames are what is checked, and under ASan the
        # calibrated cost per event exceeds what fib's tiny calls cost, which
        # leaves fib no time of its own and folds it away
        _run_profiler(tmp_path, "fastprof", "--no-compensate",
                      *(["--callpaths"] if how.endswith("callpaths") else []), "-o", "p.prof")
    data = load_profile(str(tmp_path / "p.prof"))
    assert (data.callpaths is not None) == how.endswith("callpaths")
    out = tmp_path / "p.html"
    export(data, str(out), title=how + ".prof")
    _open(browser, out)
    assert browser.problems() == []
    names = [f["name"] for f in _frames(browser)]
    assert len(names) > 8 and {"main", "fib", "spin"} <= set(names), names
    # the flame graph's root is the header's total (the whole profile, once)
    total = sum(v[2] for v in data.stats.values())
    root = browser.eval("window.fastprofReport.nodeTotal(0)")
    assert root == pytest.approx(total, rel=1e-3)
    note = browser.eval("document.getElementById('flame-note').textContent")
    assert ("estimated" in note) == (data.callpaths is None)
    assert "paths below 0.01% of the total are folded into their callers" in note
    assert "add up to" not in note
    _save_shot(browser, "html-%s.png" % how)


def test_thread_selector_groups_threads(browser, tmp_path):
    pytest.importorskip("fastprof._fastprof")
    _run_profiler(tmp_path, "fastprof", "-o", "t.html")
    _open(browser, tmp_path / "t.html")
    assert browser.problems() == []
    options = browser.eval("Array.prototype.map.call(document.querySelectorAll('#thread option'),"
                           " function(o){return o.textContent;})")
    assert options[0] == "all threads"
    # ("Thread-N (ended)" until threads keep their Python names after they end)
    group = [o for o in options if re.match(r"Thread-N \((handler|ended)\) \u00d7 30 threads", o)]
    assert len(group) == 1 and any(o.startswith("MainThread") for o in options), options
    assert len(options) <= 5  # 31 threads, a handful of entries
    assert browser.eval("document.getElementById('thread-box').hidden") is False
    all_rows = browser.eval("document.querySelectorAll('#functions tbody tr').length")
    # pick the handlers: their own table, total and (estimated) flame graph
    idx = options.index(group[0])
    browser.eval("var s = document.getElementById('thread'); s.value = '%d';"
                 "s.dispatchEvent(new Event('change'))" % idx)
    assert browser.eval("window.fastprofReport.view()") == idx
    names = browser.eval("Array.prototype.map.call(document.querySelectorAll('#functions tbody tr td.fn > div:first-child'),"
                         " function(d){return d.textContent;})")
    assert "handler" in names and "fib" not in names and len(names) < all_rows
    view = browser.eval("window.fastprofReport.data.views[%d]" % idx)
    assert view["threads"] == 30
    assert browser.eval("window.fastprofReport.nodeTotal(0)") == pytest.approx(view["total"], rel=1e-3)
    assert "handler" in [f["name"] for f in _frames(browser)]
    assert "thread-seconds" in browser.eval("document.getElementById('summary').textContent")
    _save_shot(browser, "html-thread-selector.png")
    # and back
    browser.eval("var s = document.getElementById('thread'); s.value = '0'; s.dispatchEvent(new Event('change'))")
    assert browser.eval("document.querySelectorAll('#functions tbody tr').length") == all_rows
    assert browser.problems() == []


def test_header_says_where_a_request_time_went(browser, tmp_path):
    """A request's profile (fastprof.middleware): its header says the wall
    time, the time in recorded frames, the CPU time and, for a task, how
    long it was suspended; a file of an older version, the duration only."""
    old = {"method": "GET", "path": "/a", "status": 200, "duration": 0.0125, "time": 0.0}
    cases = [(old, "request GET /a \u2192 200 in 12.5 ms"),
             (dict(old, duration=0.237, recorded=0.00076, cpu=0.00081),
              "request GET /a \u2192 200 in 237 ms (760 \u00b5s in recorded frames, 810 \u00b5s CPU)"),
             (dict(old, duration=1.75, recorded=0.35, cpu=0.3, suspended=1.4),
              "request GET /a \u2192 200 in 1.75 s (350 ms in recorded frames, 300 ms CPU, "
              "suspended 1.40 s)")]
    for i, (request, want) in enumerate(cases):
        data = synthetic_data()
        data.request = request
        out = tmp_path / ("r%d.html" % i)
        export(data, str(out))
        _open(browser, out)
        assert browser.problems() == []
        summary = browser.eval("document.getElementById('summary').textContent")
        assert (" \u00b7 " + want + " \u00b7 ") in summary, summary


def test_table_columns_and_layout(browser, tmp_path):
    out = tmp_path / "r.html"
    export(cprofile_data(tmp_path), str(out))
    _open(browser, out)
    heads = browser.eval("Array.prototype.map.call(document.querySelectorAll('#functions th'),"
                         " function(t){return t.textContent;})")
    assert len(heads) == len(set(heads)), heads  # no two columns with one title
    # the table is not a scroll box of its own
    wrap = browser.eval("(function(){var w = document.querySelector('.table-wrap');"
                        " return [w.scrollHeight, w.clientHeight];})()")
    assert wrap[0] <= wrap[1] + 1
    # the flame graph never takes more than the screen
    box = browser.eval("document.querySelector('.flame-box').getBoundingClientRect().height")
    assert box <= browser.eval("window.innerHeight")


def test_paths_wrap_between_words_only(browser, tmp_path):
    key = ("/very/long/directory/name/for/a/package/module_with_a_long_name.py", 12,
           "SomeClassWithALongName.method_with_a_long_name")
    out = tmp_path / "w.html"
    export(ProfileData({key: (1, 1, 0.5, 0.5, {})}), str(out))
    browser.send("Emulation.setDeviceMetricsOverride", width=500, height=900, deviceScaleFactor=1, mobile=False)
    try:
        _open(browser, out)
        # each rendered line of the name/path cell ends at a separator, never mid-word
        lines = browser.eval("""(function(){
            var out = [];
            document.querySelectorAll('#functions td.fn > div').forEach(function (div) {
              var r = document.createRange(), tops = {}, text = '';
              var walker = document.createTreeWalker(div, NodeFilter.SHOW_TEXT);
              while (walker.nextNode()) {
                var node = walker.currentNode;
                for (var i = 0; i < node.length; i++) {
                  r.setStart(node, i); r.setEnd(node, i + 1);
                  var top = Math.round(r.getBoundingClientRect().top);
                  tops[top] = (tops[top] || '') + node.data[i];
                }
              }
              out.push(Object.keys(tops).sort(function(a, b){return a - b;}).map(function(k){ return tops[k]; }));
            });
            return out;})()""")
    finally:
        browser.send("Emulation.setDeviceMetricsOverride", width=1400, height=1000, deviceScaleFactor=1, mobile=False)
    assert len(lines) == 2 and all(len(div) >= 2 for div in lines), lines  # both wrapped
    assert "".join(lines[0]) == key[2] and "".join(lines[1]) == "%s:%d" % key[:2]
    for div in lines:
        for line in div[:-1]:
            assert line[-1] in "/.:_", lines


def test_big_call_tree_gives_a_small_report(tmp_path):
    """200,000 call paths (black's run has 189,000): the report stays under 3 MB."""
    import random
    rnd = random.Random(1)
    nfunc = 1500
    keys = [("/big/mod%d.py" % (i % 60), i, "function_number_%d" % i) for i in range(nfunc)]
    nodes = [(-1, 0, 1, 0.001, 0.0)]
    for i in range(1, 200000):
        parent = rnd.randrange(max(0, i - 50), i)  # deep, bushy
        nodes.append((parent, rnd.randrange(1, nfunc), 1, rnd.expovariate(1 / 5e-5), 0.0))
    stats = {}
    for _p, f, c, t, _c in nodes:
        row = stats.get(keys[f], (0, 0, 0.0, 0.0, {}))
        stats[keys[f]] = (row[0] + c, row[1] + c, row[2] + t, row[3] + t, {})
    data = ProfileData(stats, callpaths=CallPaths(keys, nodes))
    out = tmp_path / "big.html"
    export(data, str(out))
    size = out.stat().st_size
    assert size < 3 * 1024 * 1024, size
    tree = report_data(data, min_fraction=1e-4)["views"][0]["tree"]
    assert tree["min_percent"] == 0.01 and 0 < len(tree["func"]) < len(nodes) // 4


# ---------------------------------------------------------------- line stats (--lines)

def lines_data(tmp_path):
    """WORKLOAD under fastprof with line stats of parse_config only."""
    import fastprof
    mod = _load_workload(tmp_path, "webapp_lines")
    prof = fastprof.Profile(lines=["webapp_lines:parse_config"])
    prof.runcall(mod.main)
    out = tmp_path / "lines.prof"
    prof.dump_stats(str(out))
    return load_profile(str(out))


def synthetic_lines_data():
    """synthetic_data() with line stats of leaf, whose file is not readable."""
    data = synthetic_data()
    data.lines = {("/nonexistent/app.py", 30, "leaf"): {31: (3, 0.1), 33: (30, 0.55), 34: (3, 0.05)}}
    return data


def test_report_embeds_line_stats(tmp_path):
    syn = report_data(synthetic_lines_data())
    leaf = [f[0] for f in syn["functions"]].index("leaf")
    assert list(syn["lines"]) == [str(leaf)]
    block = syn["lines"][str(leaf)]
    # unreadable: the lines with stats only, no text; % of leaf's cumtime
    assert block == {"rows": [[31, 3, 0.1, "", None], [33, 30, 0.55, "", None], [34, 3, 0.05, "", None]],
                     "total": 0.7, "hot": [33, 31, 34], "readable": False, "own": False}
    assert report_data(synthetic_data())["lines"] == {}
    # with bytes per line (memory): a sixth element, and the flags
    data = synthetic_lines_data()
    data.lines_memory = {("/nonexistent/app.py", 30, "leaf"): {31: (100, 60, 100), 33: (5000, -40, None)}}
    block = report_data(data)["lines"][str(leaf)]
    assert [r[5] for r in block["rows"]] == [[100, 60, 100], [5000, -40, None], [0, 0, 0]]
    assert block["bytes"] is True and block["own_bytes"] is False


def line_bytes_work():
    kept = bytearray(3_000_000)
    text = "z" * 50_000
    del kept
    return text


def test_line_panel_shows_bytes(browser, tmp_path):
    """With memory, the line table has each line's bytes: alloc, net (a
    freeing line's negative) and own alloc."""
    import fastprof
    prof = fastprof.Profile(memory=True, lines=[__name__ + ":line_bytes_work"])
    prof.runcall(line_bytes_work)
    out = tmp_path / "bytes.html"
    prof.dump_stats(str(tmp_path / "bytes.prof"))
    export(load_profile(str(tmp_path / "bytes.prof")), str(out))
    _open(browser, out)
    _select(browser, "line_bytes_work")
    heads = browser.eval("Array.prototype.map.call(document.querySelectorAll('#detail table.linestats th'),"
                         " function(th){ return th.textContent; })")
    assert heads[heads.index("% func") + 1:heads.index("% func") + 4] == ["alloc", "net", "own alloc"]
    cells = browser.eval("""Array.prototype.map.call(document.querySelectorAll('#detail table.linestats tbody tr'),
        function(tr){ return [tr.querySelector('td.code').textContent, tr.querySelector('td.alloc').textContent,
                              tr.querySelector('td.net').textContent, tr.querySelector('td.ownalloc').textContent]; })""")
    by_code = {c[0].strip(): c[1:] for c in cells}
    assert by_code["kept = bytearray(3_000_000)"] == ["2.9 MiB", "2.9 MiB", "2.9 MiB"]
    assert by_code["del kept"][1] == "-2.9 MiB"
    assert browser.problems() == []


def _line_rows(browser):
    return browser.eval("""Array.prototype.map.call(document.querySelectorAll('#detail table.linestats tbody tr'),
        function(tr){ function c(k) { return tr.querySelector('td.' + k); }
            var own = c('own'), bar = c('heat').querySelector('.bar');
            return {line: +c('ln').textContent, hits: c('hits').textContent, time: c('time').textContent,
            own: own ? own.textContent : null, pct: c('pct').textContent,
            bar: bar ? bar.getBoundingClientRect().width /
                       c('heat').querySelector('.track').getBoundingClientRect().width : null,
            hot: tr.classList.contains('hot'), code: c('code').textContent}; })""")


def _select(browser, name):
    browser.eval("document.getElementById('filter').value = ''")
    browser.type_into("#filter", "^%s$" % name)
    browser.click("#functions tbody tr")
    assert browser.eval("document.querySelector('#detail h3').textContent") == name


def test_line_panel_shows_source_with_heat(browser, tmp_path):
    pytest.importorskip("fastprof._fastprof")
    data = lines_data(tmp_path)
    (key, table), = data.lines.items()
    assert key[2] == "parse_config"
    out = tmp_path / "lines.html"
    export(data, str(out))
    _open(browser, out)
    _select(browser, "parse_config")
    rows = _line_rows(browser)
    # the function's source from its def to its last line, with every
    # line's hits as recorded, percents of its cumtime, bars in proportion
    assert [r["line"] for r in rows] == list(range(key[1], max(table) + 1))
    assert rows[0]["code"] == "def parse_config(n):" and rows[0]["hits"] == ""
    by_line = {r["line"]: r for r in rows}
    cum = data.stats[key][3]
    for lineno, (hits, seconds) in table.items():
        r = by_line[lineno]
        assert r["hits"] == str(hits)
        assert float(r["pct"]) == pytest.approx(100 * seconds / cum, abs=0.051)
        assert r["bar"] == pytest.approx(seconds / cum, abs=0.01)
    # own time per line: a column, the call's line mostly its callee's time
    own = data.lines_own[key]
    assert all((r["own"] != "") == (r["line"] in table) for r in rows)
    spin_line = [r for r in rows if "spin(0.002)" in r["code"]][0]
    assert own[spin_line["line"]] < 0.5 * table[spin_line["line"]][1]
    # serve(4): 4 requests x (parse_config(2) + parse_config(1))
    # (the spin's 2 ms are wall time: the profiler's cost it removes from the
    # other lines is larger under ASan, hence well above half, not 90%)
    assert spin_line["hits"] == "12" and spin_line["hot"] and float(spin_line["pct"]) > 70
    assert sum(r["hot"] for r in rows) == min(3, sum(1 for h, t in table.values() if t > 0))
    assert browser.eval("document.querySelector('#detail pre.source')") is None
    browser.eval("document.querySelector('#detail table.linestats').scrollIntoView()")
    _save_shot(browser, "html-lines.png")
    # a function without line stats: the plain source, no line table
    _select(browser, "render_page")
    assert browser.eval("document.querySelector('#detail table.linestats')") is None
    assert "spin(0.01)" in browser.eval("document.querySelector('#detail pre.source').textContent")
    assert browser.problems() == []


def test_line_panel_without_readable_source(browser, tmp_path):
    out = tmp_path / "syn.html"
    export(synthetic_lines_data(), str(out))
    _open(browser, out)
    _select(browser, "leaf")
    rows = _line_rows(browser)
    assert [(r["line"], r["hits"], r["pct"], r["code"], r["hot"]) for r in rows] == [
        (31, "3", "14.3", "", True), (33, "30", "78.6", "", True), (34, "3", "7.1", "", True)]
    assert all(r["own"] is None for r in rows)  # no own times: no column
    note = browser.eval("document.querySelector('#detail .lines-box .note').textContent")
    assert "line numbers only" in note and "own:" not in note
    data = synthetic_lines_data()
    data.lines_own = {("/nonexistent/app.py", 30, "leaf"): {31: 0.1, 33: 0.25, 34: 0.0}}
    export(data, str(out))
    _open(browser, out)
    _select(browser, "leaf")
    assert [(r["line"], r["time"], r["own"]) for r in _line_rows(browser)] == [
        (31, "100 ms", "100 ms"), (33, "550 ms", "250 ms"), (34, "50.0 ms", "0 s")]
    assert "own: less those calls" in browser.eval(
        "document.querySelector('#detail .lines-box .note').textContent")
    assert browser.problems() == []
