"""Memory by request and over a long run (docs/memory.md, issue 33's
"request" row).

- The middleware with ``memory=True``: each request's file holds the bytes
  its functions allocated, in its thread and in the worker threads that
  ran its code, and nothing of the requests running at the same time.
- What a row allocated is kept by an owner id (csrc/fp_heap.c); the ids of
  ended threads and of requests thrown away are handed out again, so a
  service that starts a thread or records a request per task keeps a
  bounded table: ``Profile.memory()`` stays flat over batches.
"""
import concurrent.futures
import contextvars
import os
import sys
import threading

import fastprof
from fastprof.data.profile_file import load_profile
from fastprof.modes.middleware import WSGIMiddleware

KEPT = []  # what the requests allocate stays alive: its net is its size
SIZES = {"/a": 100_000, "/b": 200_000, "/c": 300_000, "/d": 400_000}


def make(n):
    return bytearray(n)


def make_in_worker(n):
    return bytearray(n)


def serve(pool, n):
    KEPT.append(make(n))
    ctx = contextvars.copy_context()  # as asyncio.to_thread / anyio / asgiref do
    KEPT.append(pool.submit(ctx.run, make_in_worker, n // 10).result())


def _app(pool, barrier):
    def app(environ, start_response):
        n = SIZES[environ["PATH_INFO"]]
        barrier.wait(30)  # the four requests run at the same time
        serve(pool, n)
        start_response("200 OK", [])
        return [b""]
    return app


def _call(mw, path):
    body = mw({"REQUEST_METHOD": "GET", "PATH_INFO": path}, lambda s, h, e=None: None)
    try:
        b"".join(body)
    finally:
        getattr(body, "close", lambda: None)()


def _by_name(table):
    return {key[2]: row for key, row in table.items()}


def _is_size(allocated, size):
    """The bytes a row allocated are *size*, give or take a small block the
    interpreter makes while the function runs: on 3.9-3.11 the frame object
    the profile hook has it make (as tests/test_memory_profile.py's
    test_threads says); on 3.12+, after a full collection (which empties
    the interpreter's free lists), a 48-byte block alive at the end: the
    first small object of its kind made since (a one-item tuple), allocated
    for real and then kept on the free list, as tracemalloc sees it too.
    The requests' sizes differ by 100 KB and more: which
    request's bytes a row holds is not in doubt."""
    return size <= allocated <= size + 200


def test_each_request_file_holds_its_own_bytes(tmp_path):
    pool = concurrent.futures.ThreadPoolExecutor(1)
    mw = WSGIMiddleware(_app(pool, threading.Barrier(len(SIZES))), tmp_path, every=1, memory=True,
                        lines=[__name__ + ":serve"])
    threads = [threading.Thread(target=_call, args=(mw, path)) for path in SIZES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    pool.shutdown()
    assert mw.profiler.flush(120)
    files = sorted(os.listdir(tmp_path))
    assert len(files) == len(SIZES), files
    for name in files:
        data = load_profile(tmp_path / name)
        n = SIZES[data.request["path"]]
        rows = _by_name(data.memory)
        # its own bytearrays, each its size (the object's header included),
        # none of the other requests'
        assert _is_size(rows["make"].allocated, sys.getsizeof(bytearray(n))), (name, rows["make"])
        assert rows["make"].net >= sys.getsizeof(bytearray(n))
        assert _is_size(rows["make_in_worker"].allocated, sys.getsizeof(bytearray(n // 10))), name
        assert rows["app"].allocated_incl >= rows["make"].allocated
        # every row is one of the request's functions (the context
        # variable's reset, whose return is in no request, is not)
        assert set(data.memory) <= set(data.stats), set(data.memory) - set(data.stats)
        # the worker thread's bytes are in its own thread record
        by_thread = {t["name"]: _by_name(t["memory"]) for t in data.threads}
        assert len(by_thread) == 2, list(by_thread)
        worker = [rows for rows in by_thread.values() if "make_in_worker" in rows]
        assert len(worker) == 1 and "make" not in worker[0]
        # the process's totals when it ended (its bytearrays alive then)
        assert data.memory_totals["current"] >= rows["make"].net + rows["make_in_worker"].net
        # its lines' bytes (lines=): the line that called make() allocated
        # what make() did, for this request only
        (serve_lines,) = data.lines_memory.values()
        # (3.9-3.11: with make's frame object, which the calling line makes)
        incl = rows["make"].allocated_incl
        (line,) = [ln for ln, b in serve_lines.items() if incl <= b[0] <= incl + 1000]
        assert serve_lines[line][1] >= rows["make"].net
    KEPT.clear()


def test_asgi_requests_tasks_and_worker_threads(tmp_path):
    """Three requests at once on one event loop: each file holds the bytes
    of its own task, the task it started and the worker thread its
    ``to_thread`` ran on, none of the others'."""
    import asyncio

    from fastprof.modes.middleware import ASGIMiddleware

    async def subtask(n):
        await asyncio.sleep(0.001)
        KEPT.append(make(2 * n))

    async def app(scope, receive, send):
        n = SIZES[scope["path"]]
        await asyncio.sleep(0.001)
        KEPT.append(make(n))
        await asyncio.create_task(subtask(n))
        KEPT.append(await asyncio.to_thread(make_in_worker, 3 * n))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def request(mw, path):
        async def receive():
            return {"type": "http.request"}

        async def send(message):
            pass
        await mw({"type": "http", "method": "GET", "path": path, "headers": [], "query_string": b""},
                 receive, send)

    mw = ASGIMiddleware(app, tmp_path, every=1, memory=True)

    async def main():
        await asyncio.gather(*[request(mw, path) for path in SIZES])
    asyncio.run(main())
    assert mw.profiler.flush(120)
    for name in sorted(os.listdir(tmp_path)):
        data = load_profile(tmp_path / name)
        n = SIZES[data.request["path"]]
        rows = _by_name(data.memory)
        assert _is_size(rows["make"].allocated, sys.getsizeof(bytearray(n)) + sys.getsizeof(bytearray(2 * n)))
        assert _is_size(rows["make_in_worker"].allocated, sys.getsizeof(bytearray(3 * n)))
    KEPT.clear()


def test_a_requests_totals_leave_out_what_was_freed_between_requests(tmp_path):
    """every=N: the profiler (and its allocator hooks) is off between the
    requests it records, so it does not see the frees of that time; the
    next recorded request starts its heap afresh instead of counting those
    blocks alive."""
    big = []

    def app(environ, start_response):
        if environ["PATH_INFO"] == "/big":
            big.append(make(5_000_000))
        start_response("200 OK", [])
        return [b""]
    mw = WSGIMiddleware(app, tmp_path, every=1, memory=True)
    _call(mw, "/big")
    big.clear()  # freed while no request is recorded
    _call(mw, "/small")
    assert mw.profiler.flush(120)
    first, second = [load_profile(tmp_path / n) for n in sorted(os.listdir(tmp_path))]
    assert first.memory_totals["current"] >= 5_000_000
    assert second.memory_totals["peak"] < 5_000_000, second.memory_totals


def test_what_a_thread_allocates_out_of_any_request_is_no_requests():
    """Routing by hand (what the middleware does): after the request's
    context is left, the thread's allocations count for no request, not
    for the last row it was in."""
    var = contextvars.ContextVar("rid")
    prof = fastprof.Profile(threads=True, memory=True)
    prof._route_by(var, {1})
    prof.enable()
    try:
        token = var.set(1)
        kept = make(1000)
        var.reset(token)
        after = bytearray(1_000_000)  # out of the request
        make(2000)
    finally:
        prof.disable()
    records = [t for t, _i, _n in prof.threads() if t >> 63]
    assert len(records) == 1
    rows = prof.memory_stats(threads=set(records))
    assert _is_size(rows[(make.__code__.co_filename, make.__code__.co_firstlineno, "make")].allocated,
                    sys.getsizeof(kept))
    assert sum(row.allocated for row in rows.values()) < len(after), {
        key[2]: row.allocated for key, row in rows.items()}


# -- a bounded table over a long run --------------------------------------------

def _row_maker(i):
    """A function of its own per i (distinct rows, each a heap owner)."""
    namespace = {}
    exec("def f%d(keep):\n    keep.append([%d])\n" % (i, i), namespace)
    return namespace["f%d" % i]


ROWS = [_row_maker(i) for i in range(30)]


def _task(keep):
    for f in ROWS:
        f(keep)


BATCHES, SETTLED = 6, 3
# what the owners' counts would grow by in a batch if no id were handed out
# again: 64 bytes an owner, one per row of a record at least
LEAK_PER_RECORD = 64 * len(ROWS)


def _growth(run_batch, prof):
    """Profile.memory() after each batch: the growth over the last
    BATCHES - SETTLED (the first ones fill the tables, the free lists and
    the owners in use between two sweeps)."""
    sizes = []
    for _ in range(BATCHES):
        run_batch()
        sizes.append(prof.memory())
    return sizes[-1] - sizes[SETTLED - 1], sizes


def test_ended_threads_rows_are_handed_out_again():
    """600 threads a batch, 30 rows each: 18,000 owners a batch."""
    prof = fastprof.Profile(memory=True, threads=True)
    n = 600

    def batch():
        keep = []
        threads = [threading.Thread(target=_task, args=(keep,)) for _ in range(n)]
        for t in threads:
            t.start()
            t.join()  # (one at a time: their records are folded as they end)
    prof.enable()
    try:
        grown, sizes = _growth(batch, prof)
    finally:
        prof.disable()
    assert grown < LEAK_PER_RECORD * n * (BATCHES - SETTLED) / 4, sizes
    # and what they allocated is all there
    rows = _by_name(prof.memory_stats())
    assert sum(rows[f.__name__].allocations for f in ROWS) >= n * BATCHES * len(ROWS)


def test_requests_thrown_away_give_their_rows_back(tmp_path):
    """600 requests a batch, on a thread each, none kept (slow_ms): their
    records are dropped, their owners with them."""
    n = 600
    mw = WSGIMiddleware(lambda environ, start_response: (_task([]), start_response("200 OK", []),
                                                         [b""])[2],
                        tmp_path, slow_ms=100_000, memory=True)

    def batch():
        for _ in range(n):
            t = threading.Thread(target=_call, args=(mw, "/"))
            t.start()
            t.join()
    try:
        grown, sizes = _growth(batch, mw.profiler._profile)
    finally:
        mw.profiler.close()  # (slow_ms: enabled between the requests until then)
    assert grown < LEAK_PER_RECORD * n * (BATCHES - SETTLED) / 4, sizes
    assert not os.listdir(tmp_path)
