"""The allocator hooks of memory profiling and the traced heap they fill
(issue 33; csrc/fpy_heap_hooks.c, csrc/fp_heap.c): the process's traced
bytes, now and at the peak, against tracemalloc on the same interpreter,
through the C profiler's ``memory=True``.

tracemalloc is the oracle. Started before the hooks, it sits inside them
and sees exactly the calls they see, so both totals must agree to the byte
when both start counting at the same point (``_memory_vs_tracemalloc(True)``
clears both with nothing allocated in between, and ``(False)`` reads both
before either builds its answer).

- a bytearray's buffer, which the object domain hands to the raw one, is
  counted once;
- equal totals over lists, dicts, strings, a large bytearray (an object
  allocation that falls through to the raw domain: one block), list growth
  (realloc), and threads that free each other's blocks;
- a block allocated before the hooks and freed while they count is
  ignored, not an error;
- tracemalloc started and stopped while the hooks count: both run, and the
  hooks come out cleanly;
- tracemalloc stopped while the hooks wrap it (it silently puts back the
  allocators it found): disable() warns that the chain changed, and no
  later memory profile starts in that process;
- fork while a thread allocates: the child runs and exits, nothing waits
  for the heap's lock;
- sixteen threads allocating and freeing across threads: equal totals
  (under ASan in the sanitized runs).
"""
import itertools
import os
import sys
import textwrap
import threading
import tracemalloc
import warnings

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE, reason="memory hooks are fastprof's")

if not helpers.USING_CPROFILE:
    from fastprof import _fastprof


def memory_profiler():
    return _fastprof.Profiler(memory=True, threads=True)


@pytest.fixture
def hooks_inside_tracemalloc():
    """tracemalloc started first, the hooks around it, both counting from
    the same point; undone in the right order whatever the test does."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    p = memory_profiler()
    p.enable()
    try:
        p._memory_vs_tracemalloc(True)
        yield p
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the chain changed: a RuntimeWarning
            p.disable()
        if not was_tracing:
            tracemalloc.stop()


def same_totals(p):
    ours, theirs = p._memory_vs_tracemalloc(False)
    assert ours == theirs
    return ours


def build(n):
    rows = [{"i": i, "s": str(i) * 3} for i in range(n)]
    text = "".join(r["s"] for r in rows)
    grown = []
    for i in range(n):
        grown.append(i)  # the list's array is resized: realloc
    return rows, text, grown


def test_totals_equal_tracemalloc(hooks_inside_tracemalloc):
    kept = build(20000)
    big = bytearray(10**6)
    del kept
    current, peak = same_totals(hooks_inside_tracemalloc)
    assert current >= 10**6 and peak > current
    del big
    current_after, _ = same_totals(hooks_inside_tracemalloc)
    # The bytearray's buffer is one block, counted once: freeing it takes
    # away 10**6 bytes (give or take the small objects of the reads).
    assert abs(current - current_after - 10**6) < 4096


def test_a_block_is_counted_once(hooks_inside_tracemalloc):
    # A bytearray is two blocks: the object (pymalloc) and its buffer, which
    # the object domain hands to the raw domain: both hooks see it, the
    # outer one counts it.
    before = hooks_inside_tracemalloc._memory_totals()["allocations"]
    kept = list(map(bytearray, itertools.repeat(10**4, 1000)))
    after = hooks_inside_tracemalloc._memory_totals()["allocations"]
    # (give or take the reads' own dict and numbers, and the list's growth)
    assert 2000 <= after - before < 2060
    assert kept


def test_threads_freeing_each_others_blocks(hooks_inside_tracemalloc):
    handed = []
    lock = threading.Lock()

    def maker():
        for _ in range(200):
            block = build(50)
            with lock:
                handed.append(block)

    def taker():
        taken = 0
        while taken < 400:
            with lock:
                if handed:
                    handed.pop()
                    taken += 1

    threads = [threading.Thread(target=f) for f in (maker, maker, taker)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    same_totals(hooks_inside_tracemalloc)


def test_sixteen_threads(hooks_inside_tracemalloc):
    shared = []
    lock = threading.Lock()
    start = threading.Barrier(16)

    def work(k):
        start.wait()
        for i in range(300):
            block = [bytearray(64 + (i * k) % 2000) for _ in range(5)]
            with lock:
                shared.append(block)
                if len(shared) > 50:
                    del shared[: 25]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    del shared[:]
    same_totals(hooks_inside_tracemalloc)
    assert hooks_inside_tracemalloc._memory_totals()["lost"] == 0


def test_block_from_before_freed_during_is_ignored():
    before = bytearray(10**7)
    p = memory_profiler()
    p.enable()
    try:
        del before
        totals = p._memory_totals()
    finally:
        p.disable()
    # Not a negative (wrapped) number: the unknown free counted nowhere.
    assert 0 <= totals["current"] < 10**6
    assert totals["lost"] == 0


def test_tracemalloc_started_and_stopped_inside_a_memory_profile():
    assert not tracemalloc.is_tracing()
    p = memory_profiler()
    p.enable()
    try:
        tracemalloc.start()
        kept = build(5000)
        theirs, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        ours = p._memory_totals()["current"]
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the chain is intact: no warning
            p.disable()
    # Both saw the blocks; ours also counts tracemalloc's own bookkeeping,
    # which it allocates through the hooks it wrapped (ours).
    assert ours >= theirs > 0
    assert kept


def run_child(code):
    result = helpers.run_python(["-c", textwrap.dedent(code)], timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_tracemalloc_stopped_under_the_hooks_leaves_its_chain():
    out = run_child("""
        import tracemalloc, warnings
        from fastprof import _fastprof
        tracemalloc.start()
        p = _fastprof.Profiler(memory=True)
        p.enable()
        tracemalloc.stop()  # puts back the allocators it found: ours are gone
        x = [str(i) for i in range(1000)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p.disable()
        print(caught[0].category.__name__, caught[0].message)
        try:
            _fastprof.Profiler(memory=True).enable()
        except RuntimeError as e:
            print(e)
        x = [str(i) for i in range(1000)]  # the allocators still work
        print("ok")
    """)
    lines = out.splitlines()
    assert lines[0].startswith("RuntimeWarning fastprof: another tool wrapped the allocators")
    assert "memory profiling is unavailable in this process" in lines[1]
    assert lines[2] == "ok"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_a_thread_allocates():
    out = run_child("""
        import os, threading
        from fastprof import _fastprof
        p = _fastprof.Profiler(memory=True, threads=True)
        p.enable()
        stop = threading.Event()
        def churn():
            while not stop.is_set():
                [bytearray(2000) for _ in range(50)]
        t = threading.Thread(target=churn)
        t.start()
        for _ in range(20):
            pid = os.fork()
            if pid == 0:
                [bytearray(2000) for _ in range(50)]
                os._exit(0 if p._memory_totals()["lost"] == 0 else 3)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0, status
        stop.set()
        t.join()
        p.disable()
        print(p._memory_totals()["lost"])
    """)
    assert out.split() == ["0"]
