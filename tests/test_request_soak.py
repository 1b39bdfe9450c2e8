"""fastprof.middleware stays flat under a thread-per-request server: a
fresh thread per request, batch after batch, whether the requests are
dropped (slow_ms, none slow), written (every=1) or skipped (a trigger no
request carries): the profiler's memory (its routing tables included),
the Python heap's blocks and the request threads' CPU time per request
(over the app's alone) of the last batch are those of the second.
benchmarks/questions/middleware_soak.py measures the same at length, and
under real servers."""

import gc
import os
import statistics
import sys
import threading
import time

import pytest

from fastprof.modes.middleware import WSGIMiddleware

BATCHES = 5
PAIRS = 12          # per batch: chunks of the app alone and of the middleware, in turn
PER_CHUNK = 25      # requests


def app(environ, start_response):
    rows = [{"id": i, "name": "item %d" % i} for i in range(30)]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [str(len(rows)).encode()]


def one_request(wsgi):
    body = wsgi({"REQUEST_METHOD": "GET", "PATH_INFO": "/items", "QUERY_STRING": ""},
                lambda status, headers, exc_info=None: None)
    for _chunk in body:
        pass
    getattr(body, "close", lambda: None)()


def serve(wsgi, n):
    """n requests, each in a thread of its own, as a thread-per-request
    server; the CPU seconds per request of those threads (the writer
    thread's file system calls, the noisiest part on a busy machine, left
    out)."""
    cpu = []

    def request():
        one_request(wsgi)
        cpu.append(time.thread_time())

    for _ in range(n):
        t = threading.Thread(target=request)
        t.start()
        t.join()
    return sum(cpu) / n


def batch(mw):
    """One batch: (the CPU per request of the middleware over that of the
    app alone, the median of chunks run in turn, so that a machine busy
    with other work slows both alike; the profiler's bytes and the Python
    heap's blocks after it)."""
    ratios = []
    for _ in range(PAIRS):
        cpu = serve(mw, PER_CHUNK)
        assert mw.profiler.flush(30)
        ratios.append(cpu / serve(app, PER_CHUNK))
    gc.collect()
    return statistics.median(ratios), mw.profiler._profile.memory(), sys.getallocatedblocks()


@pytest.mark.parametrize("outcome", ["dropped", "written", "skipped"])
def test_thread_per_request_stays_flat(outcome, tmp_path):
    options = {"dropped": {"slow_ms": 100000}, "written": {"every": 1, "max_files": 20},
               "skipped": {"trigger": "X-Profile"}}[outcome]
    mw = WSGIMiddleware(app, tmp_path, **options)
    serve(mw, 100)  # first allocations, imports, the writer thread
    assert mw.profiler.flush(30)
    # on a machine busier than its cores (CI runs two test lanes on two),
    # other work moves the CPU ratios by up to 1.5x between batches: the
    # bound is looser there; the memory bounds below stay exact
    bound = 1.3 if os.getloadavg()[0] < (os.cpu_count() or 1) else 2.0
    try:
        got = [batch(mw) for _ in range(BATCHES)]
        cpus = [g[0] for g in got]
        if cpus[-1] > bound * cpus[1]:
            # Other work on a busy machine can slow some batches more than
            # the app-alone chunks beside them; a cost that grows with the
            # requests served keeps growing: three batches more, the best of
            # the last ones must be back within the bound.
            cpus += [batch(mw)[0] for _ in range(3)]
    finally:
        mw.profiler.close()
    (cpu2, mem2, heap2), (_cpu5, mem5, heap5) = got[1], got[-1]
    # before: ~6 KB of C records and a thread name (2 blocks) per request,
    # and a drop that scanned every thread record
    assert mem5 <= mem2 + 64 * 1024, [g[1] for g in got]
    assert heap5 <= heap2 + 300, [g[2] for g in got]
    assert min(cpus[BATCHES - 1:]) <= bound * cpu2, ([round(c, 2) for c in cpus], bound)
    if outcome == "written":
        assert mw.profiler.written >= BATCHES * PAIRS * PER_CHUNK  # (each chunk flushed)
