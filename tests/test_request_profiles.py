"""Per-request profiles without a web framework (every Python version):
the C routing (Profiler._route_by / _drop_route, csrc/fpy_route.c) checked
against cProfile, asyncio tasks and worker threads, concurrent requests;
fastprof.middleware's choices (trigger, every, slow_ms), its files (names,
trailer, max_files, formats), `fastprof view` and `fastprof merge DIR`.
Real servers: tests/test_middleware.py."""

import asyncio
import concurrent.futures
import contextvars
import cProfile
import logging
import os
import re
import subprocess
import sys
import threading
import time

import pytest

import fastprof
from fastprof.data.profile_file import load_profile
from fastprof.modes.middleware import ASGIMiddleware, WSGIMiddleware
from fastprof.recording.profiler import entries_to_stats
from helpers import cli_env, line_hits, settrace_hits

HERE = __file__.rstrip("c")
CLI = "import sys; from fastprof.cli import main; sys.exit(main())"


def leaf(n):
    return n * 2


def work_a(n):
    return sum(leaf(i) for i in range(n))


def work_b(n):
    return [leaf(i) for i in range(n)][-1]


def handler(kind, n, barrier=None):
    if barrier is not None:
        barrier.wait()  # every request in flight at once
    for _ in range(3):
        (work_a if kind == "a" else work_b)(n)
        time.sleep(0.001)  # let the other threads run in between
    return kind


def ours(stats):
    """{name: calls} of this file's functions in a pstats dict."""
    return {k[2]: v[1] for k, v in stats.items() if k[0] == HERE}


def route_records(prof, rid):
    return [t for t, _i, _n in prof.threads() if t >> 63 and (t >> 32) & 0x7FFFFFFF == rid]


def request_stats(prof, rid):
    from fastprof.data.model import merge_stats
    return merge_stats(entries_to_stats(prof.getstats(t)) for t in route_records(prof, rid))


def cprofile_of(func, *args):
    pr = cProfile.Profile()
    pr.runcall(func, *args)
    pr.create_stats()
    return ours(pr.stats)


def test_threads_concurrent_requests_match_cprofile():
    var = contextvars.ContextVar("rid")
    opened = set()
    prof = fastprof.Profile(threads=True)
    prof._route_by(var, opened)
    barrier = threading.Barrier(8)

    def request(rid, kind):
        opened.add(rid)
        token = var.set(rid)
        try:
            return handler(kind, 200 + rid, barrier)
        finally:
            var.reset(token)
            opened.discard(rid)

    prof.enable()
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(request, range(1, 9), "abababab"))
    finally:
        prof.disable()
    for rid, kind in zip(range(1, 9), "abababab"):
        got = ours(request_stats(prof, rid))
        want = cprofile_of(handler, kind, 200 + rid)
        assert got == want, (rid, got, want)
    # nothing was recorded outside the requests
    assert all(t >> 63 or not prof.getstats(t) for t, _i, _n in prof.threads())
    for rid in range(1, 9):
        prof._drop_route(rid)
        assert route_records(prof, rid) == []


def test_asyncio_tasks_and_worker_threads_follow_the_request():
    var = contextvars.ContextVar("rid")
    opened = set()
    prof = fastprof.Profile(threads=True)
    prof._route_by(var, opened)

    async def subtask(kind):
        await asyncio.sleep(0.001)
        return (work_a if kind == "a" else work_b)(50)

    async def request(rid, kind):
        opened.add(rid)
        token = var.set(rid)
        try:
            for _ in range(3):
                await asyncio.sleep(0.001)
                (work_a if kind == "a" else work_b)(100)
            await asyncio.create_task(subtask(kind))
            loop = asyncio.get_running_loop()
            ctx = contextvars.copy_context()  # as asyncio.to_thread / anyio / asgiref do
            await loop.run_in_executor(None, ctx.run, work_a if kind == "a" else work_b, 70)
        finally:
            var.reset(token)
            opened.discard(rid)

    async def main():
        await asyncio.gather(*[request(rid, "ab"[rid % 2]) for rid in range(1, 11)])

    prof.enable()
    try:
        asyncio.run(main())
    finally:
        prof.disable()
    for rid in range(1, 11):
        kind = "ab"[rid % 2]
        got = ours(request_stats(prof, rid))
        mine, other = ("work_a", "work_b") if kind == "a" else ("work_b", "work_a")
        assert got[mine] == 5 and other not in got, (rid, got)
        assert got["leaf"] == 3 * 100 + 50 + 70
        assert got["subtask"] >= 1
        # the worker thread's record is apart from the event loop's
        assert len(route_records(prof, rid)) == 2


def test_closed_request_is_not_recorded_and_routing_needs_disabled():
    var = contextvars.ContextVar("rid")
    prof = fastprof.Profile(threads=True)
    prof._route_by(var, set())  # id 5 never opened
    token = var.set(5)
    prof.enable()
    try:
        work_a(10)
        with pytest.raises(RuntimeError):
            prof._route_by(None, None)
    finally:
        prof.disable()
        var.reset(token)
    assert route_records(prof, 5) == []
    with pytest.raises(TypeError):
        prof._route_by(var, [])
    with pytest.raises(ValueError):
        prof._drop_route(0)
    prof._route_by(None, None)
    prof.enable()
    work_a(10)
    prof.disable()
    assert ours(entries_to_stats(prof.getstats())).get("work_a") == 1


def test_only_and_fast_combine_with_routing():
    for kwargs in ({"only": [__name__ + ":work_*"]},
                   {"fast": True} if sys.version_info[:2] != (3, 13) else None):
        if kwargs is None:
            continue
        var = contextvars.ContextVar("rid")
        opened = {1}
        prof = fastprof.Profile(threads=True, **kwargs)
        prof._route_by(var, opened)
        prof.enable()
        token = var.set(1)
        try:
            work_a(30)
            work_b(30)
        finally:
            var.reset(token)
            prof.disable()
        got = ours(request_stats(prof, 1))
        if "only" in kwargs:
            assert got["work_a"] == 1 and got["work_b"] == 1 and "leaf" not in got
        else:
            assert got["work_a"] == 1 and got["leaf"] == 60


# -- the middleware without a server ------------------------------------------

def wsgi_app(environ, start_response):
    kind = environ["PATH_INFO"].strip("/") or "a"
    if kind == "boom":
        raise RuntimeError("boom")
    handler(kind, 100)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [kind.encode()]


def call_wsgi(app, path, query="", headers=None):
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query}
    for k, v in (headers or {}).items():
        environ["HTTP_" + k.upper().replace("-", "_")] = v
    status = []
    body = app(environ, lambda s, h, e=None: status.append(s))
    try:
        out = b"".join(body)
    finally:
        getattr(body, "close", lambda: None)()
    return status[0], out


async def call_asgi(mw, path, method="GET", headers=(), query=b""):
    """One HTTP request through ASGI middleware *mw*, with no body."""
    async def receive():
        return {"type": "http.request"}

    async def send(message):
        pass
    await mw({"type": "http", "method": method, "path": path, "headers": list(headers),
              "query_string": query}, receive, send)


def written(mw, count=None):
    assert mw.profiler.flush(120)  # (returns as soon as they are written)
    d = mw.profiler.directory
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_trigger_header_and_query(tmp_path):
    mw = WSGIMiddleware(wsgi_app, tmp_path, trigger="X-Profile")
    assert call_wsgi(mw, "/a") == ("200 OK", b"a")
    assert call_wsgi(mw, "/b", headers={"X-Profile": "0"}) == ("200 OK", b"b")
    assert written(mw) == []
    call_wsgi(mw, "/a", headers={"X-Profile": "1"})
    call_wsgi(mw, "/b", query="x=1&X-Profile=1")
    call_wsgi(mw, "/b", query="X-Profile")
    call_wsgi(mw, "/b", query="X-Profile=0")
    names = written(mw)
    assert len(names) == 3
    data = [load_profile(tmp_path / n) for n in names]
    assert [d.request["path"] for d in data] == ["/a", "/b", "/b"]
    assert all(d.request["status"] == 200 and d.request["method"] == "GET" for d in data)
    assert ours(data[0].stats)["work_a"] == 3 and "work_b" not in ours(data[0].stats)


def test_every_n(tmp_path):
    mw = WSGIMiddleware(wsgi_app, tmp_path, every=3)
    for _ in range(9):
        call_wsgi(mw, "/a")
        assert not mw.profiler._profile.enabled  # enabled only while a request is recorded
    assert len(written(mw)) == 3


def test_slow_ms_keeps_only_slow(tmp_path):
    def app(environ, start_response):
        time.sleep(float(environ["QUERY_STRING"]) / 1000)
        start_response("204 No Content", [])
        return []
    # fast ones 300 ms under the bound: a stall of a loaded machine does not
    # make them slow
    mw = WSGIMiddleware(app, tmp_path, slow_ms=300)
    for ms in (1, 350, 2, 500, 0):
        call_wsgi(mw, "/s", query=str(ms))
    data = [load_profile(tmp_path / n) for n in written(mw)]
    # the 350 and 500 ms ones (however much longer a loaded machine made them)
    durations = sorted(d.request["duration"] for d in data)
    assert len(durations) == 2 and durations[0] >= 0.35 and durations[1] >= 0.5, durations
    assert all(d.request["status"] == 204 for d in data)
    assert [t for t in mw.profiler._profile.threads() if t[0] >> 63] == []  # all dropped
    # slow_ms records every request: enabled between them, until close()
    assert mw.profiler._profile.enabled
    mw.profiler.close()
    assert not mw.profiler._profile.enabled


def test_max_files_and_file_names(tmp_path):
    mw = WSGIMiddleware(wsgi_app, tmp_path, every=1, max_files=4)
    for i in range(7):
        call_wsgi(mw, "/a" if i % 2 else "/b")
        time.sleep(0.002)  # names sort by time to the millisecond
    names = written(mw)
    assert len(names) == 4
    for name in names:
        assert name.endswith(".prof") and "-GET-" in name and "-200-" in name
    # the newest kept: the last request was /b (i=6)
    assert "-GET-b-200-" in names[-1]


def test_exception_still_finishes(tmp_path):
    mw = WSGIMiddleware(wsgi_app, tmp_path, every=1)
    with pytest.raises(RuntimeError):
        call_wsgi(mw, "/boom")
    data = [load_profile(tmp_path / n) for n in written(mw)]
    assert [d.request["status"] for d in data] == [500]
    assert not mw.profiler._profile.enabled


def test_html_format(tmp_path):
    mw = WSGIMiddleware(wsgi_app, tmp_path, every=1, format="html")
    call_wsgi(mw, "/a")
    (name,) = written(mw)
    assert name.endswith(".html")
    text = (tmp_path / name).read_text()
    assert '"request":{"method":"GET","path":"/a","status":200' in text
    assert "work_a" in text


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="say which requests"):
        WSGIMiddleware(wsgi_app, tmp_path)
    with pytest.raises(ValueError, match="slow_ms"):
        WSGIMiddleware(wsgi_app, tmp_path, slow_ms=-1)
    with pytest.raises(ValueError, match="every"):
        WSGIMiddleware(wsgi_app, tmp_path, every=0)
    with pytest.raises(ValueError, match="unknown format"):
        WSGIMiddleware(wsgi_app, tmp_path, every=1, format="xml")
    # lines= is taken (per request: the tests of lines= below); its own errors stay
    WSGIMiddleware(wsgi_app, tmp_path, every=1, lines=["x"])
    with pytest.raises(TypeError, match="list of patterns"):
        WSGIMiddleware(wsgi_app, tmp_path, every=1, lines="x")
    with pytest.raises(ValueError, match="fast=True cannot be combined with lines="):
        WSGIMiddleware(wsgi_app, tmp_path, every=1, lines=["x"], fast=True)


def test_unwritable_directory_logs_once(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("")
    mw = WSGIMiddleware(wsgi_app, blocker / "sub", every=1)
    with caplog.at_level(logging.WARNING, logger="fastprof.middleware"):
        for _ in range(3):
            assert call_wsgi(mw, "/a") == ("200 OK", b"a")
        mw.profiler.flush(10)
    msgs = [r.getMessage() for r in caplog.records if r.name == "fastprof.middleware"]
    assert len(msgs) == 1 and "cannot write request profiles" in msgs[0]
    assert mw.profiler.failed == 3


def test_asgi_middleware_concurrent(tmp_path):
    async def app(scope, receive, send):
        kind = scope["path"].strip("/")
        for _ in range(3):
            await asyncio.sleep(0.002)
            (work_a if kind == "a" else work_b)(50)
        await asyncio.to_thread(work_a if kind == "a" else work_b, 20)
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    mw = ASGIMiddleware(app, tmp_path, every=1)

    async def main():
        await asyncio.gather(*[call_asgi(mw, "/a" if i % 2 else "/b", "POST") for i in range(20)])

    asyncio.run(main())
    names = written(mw)
    assert len(names) == 20
    for n in names:
        d = load_profile(tmp_path / n)
        mine = "work_a" if d.request["path"] == "/a" else "work_b"
        other = "work_b" if mine == "work_a" else "work_a"
        got = ours(d.stats)
        assert got[mine] == 4 and other not in got, (n, got)
        assert d.request["status"] == 201 and d.request["method"] == "POST"
        assert {t["name"] for t in d.threads} >= {"MainThread"} and len(d.threads) == 2


def test_view_and_merge_directory(tmp_path):
    mw = WSGIMiddleware(wsgi_app, tmp_path / "p", every=1)
    for path in ("/a", "/a", "/b"):
        call_wsgi(mw, path)
    names = written(mw)
    assert len(names) == 3
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    view = subprocess.run([sys.executable, "-c", CLI, "view",
                           str(tmp_path / "p" / names[0])], capture_output=True, text=True, env=env)
    assert view.returncode == 0, view.stderr
    assert "Request: GET /a -> 200 in " in view.stdout
    merged = tmp_path / "all.prof"
    res = subprocess.run([sys.executable, "-c", CLI, "merge",
                          str(tmp_path / "p"), "-o", str(merged)], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    got = ours(load_profile(merged).stats)
    assert got["work_a"] == 6 and got["work_b"] == 3
    empty = tmp_path / "empty"
    empty.mkdir()
    res = subprocess.run([sys.executable, "-c", CLI, "merge",
                          str(empty), "-o", str(merged)], capture_output=True, text=True, env=env)
    assert res.returncode == 2 and "no .prof file" in res.stderr


def test_asgi_trigger_header_and_query(tmp_path):
    async def app(scope, receive, send):
        work_a(10)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    mw = ASGIMiddleware(app, tmp_path, trigger="X-Profile")

    async def main():
        await call_asgi(mw, "/none")
        await call_asgi(mw, "/zero", headers=[(b"x-profile", b"0")])
        await call_asgi(mw, "/header", headers=[(b"x-profile", b"yes")])
        await call_asgi(mw, "/query", query=b"a=1&X-Profile=1")

    asyncio.run(main())
    paths = sorted(load_profile(tmp_path / n).request["path"] for n in written(mw))
    assert paths == ["/header", "/query"]


def test_a_middleware_dropped_is_freed_and_close_ends_its_writer(tmp_path):
    """Nothing keeps a middleware that wrote profiles alive once it is
    dropped (an app reloaded, a test's): its profiler and records go, its
    writer thread ends. close() ends the writer thread too; a profile kept
    later starts another."""
    import gc
    import weakref
    mw = WSGIMiddleware(wsgi_app, tmp_path, every=1)
    call_wsgi(mw, "/a")
    assert len(written(mw)) == 1
    writer = mw.profiler._writer
    assert mw.profiler.close()
    assert not writer.is_alive() and mw.profiler._writer is None
    call_wsgi(mw, "/b")
    assert len(written(mw)) == 2 and mw.profiler._writer.is_alive()
    refs = weakref.ref(mw.profiler), weakref.ref(mw.profiler._profile)
    writer = mw.profiler._writer
    del mw
    gc.collect()
    assert [r() for r in refs] == [None, None]
    writer.join(30)  # ... and its writer thread ends
    assert not writer.is_alive()


# -- where a request's time went ---------------------------------------------------

def busy_cpu(seconds):
    """Run on the CPU for *seconds* of this thread's CPU time, with few
    events (so little of it is the profiler's own time, taken out)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        n = 0
        while n < 2000:
            n += 1


def test_route_times_per_thread_and_dropped_with_the_request():
    var = contextvars.ContextVar("rid")
    opened = {1}
    prof = fastprof.Profile(threads=True)
    prof.route_by(var, opened)

    def worker():  # a worker thread in a copy of the request's context
        busy_cpu(0.03)

    prof.enable()
    token = var.set(1)
    try:
        time.sleep(0.1)  # in the context, off the CPU
        busy_cpu(0.02)
        t = threading.Thread(target=contextvars.copy_context().run, args=(worker,))
        t.start()
        t.join()
    finally:
        var.reset(token)
        times = prof.request_times(1)
        prof.disable()
    by_ident = {ident: (run, cpu) for _tid, ident, run, cpu, _removed, _extra in times}
    # the profiler's cost taken out of each record's times: some, and part
    # of what the whole profile says it removed
    removed = [r for *_t, r, _extra in times]
    whole = prof.compensation_info()["removed"]
    assert all(r > 0 for r in removed) and sum(removed) <= whole * (1 + 1e-9), (removed, whole)  # (float sums)
    assert sorted(tid for tid, *_rest in times) == sorted(route_records(prof, 1))
    # (CPU time less the profiler's own, as estimated: loose below)
    run, cpu = by_ident[threading.get_ident()]
    assert run >= 0.1 and 0.01 <= cpu < 0.08, by_ident
    run, cpu = by_ident[t.ident]
    assert 0.015 <= cpu <= run + 0.005, by_ident
    prof.drop_request(1)
    assert prof.request_times(1) == [] and route_records(prof, 1) == []


def test_request_record_says_where_the_time_went(tmp_path):
    def app(environ, start_response):
        if environ["PATH_INFO"] == "/sleep":
            time.sleep(0.15)
        else:
            busy_cpu(0.05)
        start_response("200 OK", [])
        return [b""]

    mw = WSGIMiddleware(app, tmp_path, every=1)
    call_wsgi(mw, "/sleep")
    call_wsgi(mw, "/busy")
    profiles = [load_profile(tmp_path / n) for n in written(mw)]
    sleep, busy = [p.request for p in profiles]
    # the profiler's cost taken out of the request's times, said as in any
    # profile: two events a call, and on 3.12+ the other events charged to
    # the request: a call-site event of each Python call at least, and the
    # events of the middleware's frames begun before it (not recorded)
    for p in profiles:
        comp = p.compensation
        calls = sum(v[1] for v in p.stats.values())
        py_calls = sum(v[1] for k, v in p.stats.items() if k[0] != "~")
        if sys.version_info >= (3, 12):
            assert comp["on"] and 2 * calls + py_calls <= comp["events"] <= 4 * calls, (comp, calls)
        else:
            assert comp["on"] and comp["events"] == 2 * calls, (comp, calls)
        assert 0 < comp["removed"] < p.request["recorded"], comp
    # a sleep: in a recorded frame (time.sleep), off the CPU
    assert sleep["duration"] >= sleep["recorded"] >= 0.15
    assert sleep["cpu"] < 0.3 * sleep["duration"]
    assert "suspended" not in sleep  # a thread's request: no task to be suspended
    assert 0.025 <= busy["cpu"] <= busy["duration"]
    from fastprof.tools.view import request_hint, request_line
    # (its CPU time less the profiler's own may come to 0 s under ASan)
    assert re.match(r"Request: GET /sleep -> 200 in [\d.]+ ms: [\d.]+ ms in recorded frames, "
                    r"[\d.]+ (ns|.s|ms|s) CPU$", request_line(sleep)), request_line(sleep)
    assert "the times below are mostly waiting" in request_hint(sleep)[0]
    shown = subprocess.run([sys.executable, "-m", "fastprof.cli", "view", str(tmp_path / written(mw)[0])],
                           capture_output=True, text=True, env=cli_env(), check=True).stdout
    assert re.search(r"^profiler cost removed: \d+ ns/event, \d+ events$", shown, re.M), shown


def test_request_waiting_for_the_gil_says_so(tmp_path):
    """A request whose thread waits while another holds the GIL: its
    profile's time is mostly not CPU time, and its header says so."""
    started, go = threading.Event(), threading.Event()

    def app(environ, start_response):
        started.set()
        go.wait()        # returns once the main thread lets the GIL go: after its sum
        busy_cpu(0.005)
        start_response("200 OK", [])
        return [b""]

    mw = WSGIMiddleware(app, tmp_path, every=1)
    t = threading.Thread(target=call_wsgi, args=(mw, "/gil"))
    t.start()
    started.wait()
    t0 = time.perf_counter()
    go.set()
    sum(range(10_000_000))  # C code: the GIL is held throughout
    held = time.perf_counter() - t0
    t.join()
    (name,) = written(mw)
    data = load_profile(tmp_path / name)
    req = data.request
    assert req["duration"] >= 0.8 * held
    assert req["cpu"] < 0.5 * req["duration"], req
    from fastprof.tools.view import mode_notes
    notes = mode_notes(data)
    assert notes[0].startswith("Request: GET /gil -> 200 in ") and " CPU" in notes[0]
    assert notes[1].startswith("Its threads were on the CPU "), notes


def test_async_request_says_how_long_its_task_was_suspended(tmp_path):
    async def app(scope, receive, send):
        await asyncio.sleep(0.2)          # suspended
        busy_cpu(0.02)                    # on the event loop
        await asyncio.to_thread(busy_cpu, 0.03)  # suspended, a worker thread on the CPU
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    mw = ASGIMiddleware(app, tmp_path, every=1)
    asyncio.run(call_asgi(mw, "/async"))
    (name,) = written(mw)
    data = load_profile(tmp_path / name)
    req = data.request
    assert 0.2 <= req["suspended"] <= req["duration"] - 0.015, req
    assert req["cpu"] >= 0.03, req  # the loop's part (0.02) and the worker's (0.03)
    assert req["recorded"] <= req["duration"] * len(data.threads)
    from fastprof.tools.view import mode_notes
    notes = mode_notes(data)
    assert ", suspended " in notes[0]
    if req["suspended"] >= 0.5 * req["duration"]:
        assert notes[1].startswith("Its task was suspended "), notes


def test_request_header_lines_old_and_new_files():
    from fastprof.tools.view import request_hint, request_line
    old = {"method": "GET", "path": "/a", "status": 200, "duration": 0.0125, "time": 0.0}
    assert request_line(old) == "Request: GET /a -> 200 in 12.5 ms"
    assert request_hint(old) == []
    gil = dict(old, duration=0.237, recorded=0.00076, cpu=0.00081)
    assert request_line(gil) == ("Request: GET /a -> 200 in 237 ms: 760 \u00b5s in recorded frames, "
                                 "810 \u00b5s CPU")
    assert request_hint(gil) == [
        "Its threads were on the CPU 0.34% of its time and its recorded frames hold 0.32%: it "
        "mostly waited outside them (for the GIL while other threads ran, a lock, or I/O)"]
    task = dict(old, duration=1.75, recorded=0.35, cpu=0.3, suspended=1.4)
    assert request_line(task).endswith(": 350 ms in recorded frames, 300 ms CPU, suspended 1.40 s")
    assert request_hint(task)[0].startswith("Its task was suspended 80.0% of its time")
    busy = dict(old, duration=0.2, recorded=0.19, cpu=0.18)
    assert request_hint(busy) == []
    # a CPU-clock profile's frames hold CPU time: no word on time outside them
    assert request_hint(dict(busy, recorded=0.01), "cpu") == []


# -- lines= per request ---------------------------------------------------------

def lines_a(n):
    total = 0
    for i in range(n):
        total += i
    return total


def lines_b(n):
    out = []
    for i in range(n):
        if i % 3:
            out.append(i)
    return len(out)


LINES = [__name__ + ":lines_a", __name__ + ":lines_b"]


def lines_kind(path):
    """'/a/57' -> (lines_a, 57)"""
    _, kind, n = path.split("/")
    return (lines_a if kind == "a" else lines_b), int(n)


def lines_oracle(fn, n, times):
    """sys.settrace's line hits of *fn(n)* run *times* times, by function name."""
    hits = settrace_hits(lambda: [fn(n) for _ in range(times)], __name__)
    return {k[2]: v for k, v in hits.items() if k[2] in ("lines_a", "lines_b")}


def by_name(lines):
    return {k[2]: v for k, v in line_hits(lines).items() if v}


# a service's worker threads, made before any request (sync routes run there)
_POOL = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="lines-pool")


def test_wsgi_lines_per_request_concurrent(tmp_path):
    barrier = threading.Barrier(8)

    def app(environ, start_response):
        fn, n = lines_kind(environ["PATH_INFO"])
        barrier.wait()  # every request in flight at once
        for _ in range(3):
            fn(n)
            time.sleep(0.001)
        # a sync route's thread pool: a worker in a copy of the request's context
        ctx = contextvars.copy_context()
        _POOL.submit(ctx.run, fn, n).result()
        start_response("200 OK", [])
        return [b"ok"]

    _POOL.submit(lines_a, 1).result()  # the pool's thread runs before profiling
    mw = WSGIMiddleware(app, tmp_path, every=1, lines=LINES)
    paths = ["/%s/%d" % ("ab"[i % 2], 40 + 7 * i) for i in range(8)]
    threads = [threading.Thread(target=call_wsgi, args=(mw, p)) for p in paths]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines_b(11)  # outside any request: nowhere
    names = written(mw)
    assert len(names) == 8
    for name in names:
        data = load_profile(tmp_path / name)
        fn, n = lines_kind(data.request["path"])
        # its own kind's lines only, with sys.settrace's hits: 3 runs + the worker's
        assert by_name(data.lines) == lines_oracle(fn, n, 4), name
        assert set(data.lines_own) <= set(data.lines)
        assert ours(data.stats)[fn.__name__] == 4
    prof = mw.profiler._profile
    assert prof.line_stats() == {k: {} for k in prof.line_stats()}  # nothing outside them
    assert all(prof.request_lines(rid) == ({}, {}, {}) for rid in range(1, 10))  # all dropped


def test_lines_with_slow_ms_keeps_only_the_slow(tmp_path):
    def app(environ, start_response):
        fn, n = lines_kind(environ["PATH_INFO"])
        fn(n)
        time.sleep(float(environ["QUERY_STRING"]) / 1000)
        start_response("200 OK", [])
        return []

    mw = WSGIMiddleware(app, tmp_path, slow_ms=300, lines=LINES)
    for path, ms in (("/a/10", 1), ("/b/20", 350), ("/a/30", 0), ("/a/40", 500), ("/b/50", 2)):
        call_wsgi(mw, path, query=str(ms))
    data = sorted((load_profile(tmp_path / n) for n in written(mw)), key=lambda d: d.request["path"])
    assert [d.request["path"] for d in data] == ["/a/40", "/b/20"]
    for d in data:
        fn, n = lines_kind(d.request["path"])
        assert by_name(d.lines) == lines_oracle(fn, n, 1)
    prof = mw.profiler._profile
    assert all(prof.request_lines(rid) == ({}, {}, {}) for rid in range(1, 7))  # the fast ones too
    mw.profiler.close()


def test_asgi_lines_per_request_tasks_and_threads(tmp_path):
    async def app(scope, receive, send):
        fn, n = lines_kind(scope["path"])
        for _ in range(2):
            await asyncio.sleep(0.002)
            fn(n)
        # a task it starts and a worker thread (asyncio.to_thread copies the context)
        await asyncio.create_task(asyncio.to_thread(fn, n))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    mw = ASGIMiddleware(app, tmp_path, every=1, lines=LINES)

    async def main():
        await asyncio.gather(*[call_asgi(mw, "/%s/%d" % ("ab"[i % 2], 20 + 3 * i)) for i in range(12)])

    asyncio.run(main())
    names = written(mw)
    assert len(names) == 12
    for name in names:
        d = load_profile(tmp_path / name)
        fn, n = lines_kind(d.request["path"])
        assert by_name(d.lines) == lines_oracle(fn, n, 3), name


def test_lines_file_views_like_a_lines_profile(tmp_path):
    mw = WSGIMiddleware(lambda e, s: (lines_a(25), s("200 OK", []), [b""])[2], tmp_path,
                        every=1, lines=LINES)
    call_wsgi(mw, "/x")
    (name,) = written(mw)
    path = str(tmp_path / name)
    data = load_profile(path)
    # the same trailer fields as a Profile(lines=...) file: hits, times, own times, sources
    assert by_name(data.lines) == lines_oracle(lines_a, 25, 1)
    key = next(iter(data.lines))
    assert key[2] == "lines_a" and all(t >= 0 for _h, t in data.lines[key].values())
    assert set(data.lines_own) == {key}
    assert any("total += i" in text for text in data.sources[key[0]].values())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    view = subprocess.run([sys.executable, "-c", CLI, "view", path, "--lines"],
                          capture_output=True, text=True, env=env)
    assert view.returncode == 0, view.stderr
    row = next(line for line in view.stdout.splitlines() if "total += i" in line)
    assert row.split()[1] == "25", view.stdout  # the line's hits
    # the HTML report of a request, with its lines listed
    mw = WSGIMiddleware(lambda e, s: (lines_b(25), s("200 OK", []), [b""])[2], tmp_path / "h",
                        every=1, lines=LINES, format="html")
    call_wsgi(mw, "/y")
    (name,) = written(mw)
    text = (tmp_path / "h" / name).read_text()
    assert "out.append(i)" in text and "total += i" not in text
    lineno = lines_b.__code__.co_firstlineno + 4  # out.append(i): 16 of range(25)'s i
    assert re.search(r"\[%d,16,[^\]]*out\.append\(i\)" % lineno, text), text[:2000]


def test_line_counter_request_arguments():
    from fastprof import _fastprof
    lc = _fastprof.LineCounter(None)
    assert lc.stats() == {} and lc.stats(5) == {} and lc.own_stats(5) == {}
    lc.drop(5)  # nothing recorded for it: nothing to free
    for bad in (0, 1 << 31):
        with pytest.raises(ValueError, match="request id out of range"):
            lc.drop(bad)
    with pytest.raises(ValueError, match="request id out of range"):
        lc.stats(1 << 31)
    with pytest.raises(TypeError):
        lc.stats("x")


def test_lines_lost_for_memory_are_the_requests_own():
    """A line table that cannot be made for request 1 (the profiler's own
    allocations failing from the n-th on, the testing switch
    _mem_fail_after, each n in turn) is request 1's loss: request 2's
    lines, asked first, are whole and say nothing of it, and request 1's
    say MemoryError or are whole."""
    from fastprof import _fastprof
    want_b = lines_oracle(lines_b, 5, 1)
    lost = 0
    for n in range(40):
        var = contextvars.ContextVar("rid")
        prof = fastprof.Profile(lines=LINES)
        prof._route_by(var, {1, 2})
        prof.enable()
        try:
            token = var.set(2)
            lines_b(5)  # request 2: recorded whole, before anything fails
            var.reset(token)
            token = var.set(1)
            lines_b(5)  # request 1's table exists; lines_a's is made below
            try:
                _fastprof._mem_fail_after(n)
                lines_a(3)
            finally:
                _fastprof._mem_fail_after(-1)
                var.reset(token)
        finally:
            try:
                prof.disable()
            except MemoryError as exc:  # the profiler's own tables too
                assert "some calls were not recorded" in str(exc), exc
        assert by_name(prof.request_lines(2)[0]) == want_b, n
        try:
            got = by_name(prof.request_lines(1)[0])
        except MemoryError as exc:
            assert "request 1 lost" in str(exc), exc
            lost += 1
            continue
        assert got["lines_b"] == want_b["lines_b"], n
    assert lost >= 1  # some allocation was the line counter's


def test_lines_lost_for_memory_keep_the_requests_functions(tmp_path, caplog):
    # request_lines raising MemoryError (the test above: what C says then)
    # costs the file its lines only, told once in the log
    def app(environ, start_response):
        lines_a(7)
        start_response("200 OK", [])
        return [b"ok"]

    mw = WSGIMiddleware(app, tmp_path, every=1, lines=LINES)
    prof = mw.profiler._profile

    def request_lines(rid):
        raise MemoryError("fastprof: line stats of request %d lost for lack of memory" % rid)

    prof.request_lines = request_lines
    with caplog.at_level(logging.WARNING, logger="fastprof.middleware"):
        for _ in range(2):
            assert call_wsgi(mw, "/x") == ("200 OK", b"ok")
        names = written(mw)
    assert len(names) == 2
    for name in names:
        data = load_profile(tmp_path / name)
        assert ours(data.stats)["lines_a"] == 1 and data.lines == {}
    msgs = [r.getMessage() for r in caplog.records if r.name == "fastprof.middleware"]
    assert len(msgs) == 1 and "written without line stats" in msgs[0], msgs
