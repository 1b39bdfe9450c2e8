"""fastprof.middleware stays flat under a thread-per-request server: a
fresh thread per request, whether the requests are dropped (slow_ms, none
slow), written (every=1) or skipped (a trigger no request carries): after
thousands of requests more, the profiler's memory (its routing tables
included), the Python heap's blocks and the request threads' CPU time per
request (over the app's alone) are those measured before them.
benchmarks/questions/middleware_soak.py measures the same at length, and
under real servers.

The CPU check is a ratio of ratios, so it is made to need no quiet machine:
the gap between its two measurements is wide (GAP requests), so that a cost
that grows with the requests served (before the fix: about +0.3 us per
request served, 307 -> 1,796 us in 6,000) is several times the first
measure, where other work on a busy machine moves the measure by up to
3x (a loaded CI run: 10.4 -> 31.2, as much from a first measure low as
from the later ones high; the first is the higher of two)."""

import gc
import statistics
import sys
import threading
import time

import pytest

from fastprof.modes.middleware import WSGIMiddleware

PAIRS = 12          # per measure: chunks of the app alone and of the middleware, in turn
PER_CHUNK = 25      # requests
GAP = 5000          # requests served between the two measures
BOUND = 2.5         # a cost that grows with the requests served: ~5x over GAP
# "written" (each request's file written by a thread beside the requests):
# its first measure can come out low on a quiet machine too (9.8 where the
# same run then measured 31-70; 7.7 and 10.4 under load, 17-52 otherwise):
# a wider bound, still under the ~5.8x the leak it guards grew over GAP
BOUND_WRITTEN = 4.0


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


def measure(mw):
    """One measure: (the CPU per request of the middleware over that of the
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
    try:
        serve(mw, 100)  # first allocations, imports, the writer thread
        assert mw.profiler.flush(30)
        measure(mw)  # what comes once more after the first requests
        cpu1, mem1, heap1 = measure(mw)
        # a measure can come out low (a loaded machine's CI: 7.7 and 10.4
        # where the same run then measured 17 to 52, as a quiet one does
        # throughout): the first measure is the higher of two
        cpu1 = max(cpu1, measure(mw)[0])
        serve(mw, GAP)
        assert mw.profiler.flush(30)
        cpu2, mem2, heap2 = measure(mw)
        cpus = [cpu1, cpu2]
        bound = BOUND_WRITTEN if outcome == "written" else BOUND
        if cpu2 > bound * cpu1:
            # Other work can slow one measure more than the app-alone chunks
            # beside it; a cost that grows with the requests served stays:
            # the best of two measures more must be back within the bound.
            cpus += [measure(mw)[0] for _ in range(2)]
    finally:
        mw.profiler.close()
    # before: ~6 KB of C records and a thread name (2 blocks) per request,
    # and a drop that scanned every thread record
    assert mem2 <= mem1 + 64 * 1024, (mem1, mem2)
    # (10,000 blocks over GAP); "written" measured 180-314 blocks more after
    # GAP (cause not traced yet: the writer's caches or a slow growth)
    assert heap2 <= heap1 + (1000 if outcome == "written" else 300), (heap1, heap2)
    assert min(cpus[1:]) <= bound * cpu1, [round(c, 2) for c in cpus]
    if outcome == "written":
        assert mw.profiler.written >= 3 * PAIRS * PER_CHUNK  # (each measured chunk flushed)
