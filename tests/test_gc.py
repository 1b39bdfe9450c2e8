"""Garbage collections are recorded as the pseudo-function ``<gc>``
(pstats key ``('~', 0, '<gc>')``), called by the function that was running
when the collection started (``Profile(gc=True)``, the default).

Oracles: a Python callback of our own in ``gc.callbacks`` counts the
collections ("start" phases); a fake clock advanced only by C code (so no
profiled call takes the time) makes every time exact; cProfile gives the
counts of everything else.
"""
import functools
import gc
import os
import pstats
import subprocess
import sys
import textwrap
import threading
import types

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE, reason="<gc> rows are fastprof's")

GC = ("~", 0, "<gc>")
COLLECT = ("~", 0, "<built-in method gc.collect>")


def key(func):
    code = func.__code__
    return (code.co_filename, code.co_firstlineno, code.co_name)


@pytest.fixture
def gc_state():
    """Low threshold for many collections; thresholds, enabled state and
    gc.callbacks restored afterwards (and checked to be ours again)."""
    thresholds = gc.get_threshold()
    enabled = gc.isenabled()
    callbacks = list(gc.callbacks)
    gc.collect()
    gc.set_threshold(50)
    yield
    gc.set_threshold(*thresholds)
    (gc.enable if enabled else gc.disable)()
    leftover = list(gc.callbacks)
    gc.callbacks[:] = callbacks
    assert leftover == callbacks, "a callback was left in gc.callbacks"


class Oracle:
    """Counts collections while `active` (set by the profiled code itself)."""

    def __init__(self):
        self.active = False
        self.starts = 0

    def __call__(self, phase, info):
        if phase == "start" and self.active:
            self.starts += 1


ORACLE = Oracle()
KEEP = []


def allocate(n):
    # Only bytecode allocates here (no Python callee), so every collection
    # starts while this function is on top of the stack.
    ORACLE.active = True
    keep = []
    for i in range(n):
        keep.append([i])
    ORACLE.active = False
    KEEP.append(keep)


def gc_rows(stats):
    row = stats.get(GC)
    if row is None:
        return 0, {}
    return row[1], {c: v[0] for c, v in row[4].items()}


# -- counts ----------------------------------------------------------------------

def test_collections_are_gc_calls_from_the_allocating_function(gc_state):
    import fastprof
    ORACLE.starts = 0
    pr = fastprof.Profile()
    # the young generation empty at enable() (making the Profile allocates:
    # its calibration), so no collection runs before allocate is on the stack
    gc.collect()
    pr.enable()
    gc.callbacks.append(ORACLE)
    try:
        allocate(20000)
        gc.collect()
    finally:
        gc.callbacks.remove(ORACLE)
        pr.disable()
    KEEP.clear()
    pr.create_stats()
    n, callers = gc_rows(pr.stats)
    assert ORACLE.starts > 20  # the low threshold made many collections
    assert callers[key(allocate)] == ORACLE.starts
    assert callers[COLLECT] == 1  # the explicit collection, under gc.collect
    assert n == sum(callers.values())
    cc, nc, tt, ct, _ = pr.stats[GC]
    assert cc == nc and 0 <= tt <= ct
    # the oracle comes after our callback: its "start" calls run inside the
    # collection (callees of <gc>), its "stop" calls after it
    assert pr.stats[key(Oracle.__call__)][4][GC][0] == n


def test_gc_false_records_no_gc_row(gc_state):
    import fastprof
    pr = fastprof.Profile(gc=False)
    callbacks = list(gc.callbacks)
    with pr:
        assert gc.callbacks == callbacks  # nothing registered
        allocate(5000)
        gc.collect()
    KEEP.clear()
    pr.create_stats()
    assert GC not in pr.stats
    assert pr.options["gc"] is False and fastprof.Profile().options["gc"] is True


# -- times (fake clock) -----------------------------------------------------------

TICKS = []           # the fake clock: its length
TEN = [None] * 10


def allocate_timed(n):
    gc.enable()      # collections can only start in here
    keep = []
    for i in range(n):
        TICKS.extend(TEN)  # 10 ticks of own work per iteration
        keep.append([i])
    gc.disable()
    KEEP.append(keep)


@pytest.mark.parametrize("record_gc", [True, False])
def test_the_collection_pause_is_not_the_allocating_functions_time(gc_state, record_gc):
    """Two C callbacks around ours in gc.callbacks each advance the clock by
    4 ticks per phase (print() writing 4 pieces with TICKS.append): per
    collection, 8 ticks fall inside <gc> and 8 outside it. With builtins off
    and a C timer, nothing else moves the clock or is recorded."""
    import fastprof
    n = 3000
    sink = types.SimpleNamespace(write=TICKS.append)
    tick = functools.partial(print, file=sink)  # (phase, info): 4 writes
    before, after = functools.partial(tick), functools.partial(tick)
    TICKS.clear()
    gc.disable()
    pr = fastprof.Profile(functools.partial(len, TICKS), 1.0, builtins=False, gc=record_gc)
    gc.callbacks.append(before)
    pr.enable()
    gc.callbacks.append(after)
    try:
        allocate_timed(n)
    finally:
        gc.callbacks.remove(after)
        pr.disable()
        gc.callbacks.remove(before)
    KEEP.clear()
    pr.create_stats()
    collections, extra = divmod(len(TICKS) - 10 * n, 16)
    assert extra == 0 and collections > 10
    cc, nc, tt, ct, _ = pr.stats[key(allocate_timed)]
    assert ct == len(TICKS)
    if record_gc:
        assert pr.stats[GC][:4] == (collections, collections, 8 * collections, 8 * collections)
        assert tt == 10 * n + 8 * collections
    else:
        assert GC not in pr.stats
        assert tt == 10 * n + 16 * collections


# -- lifecycle ------------------------------------------------------------------------

def test_gc_callbacks_restored_after_disable_with_several_profilers(gc_state):
    import fastprof
    mine = Oracle()
    gc.callbacks.append(mine)
    original = list(gc.callbacks)
    a, b = fastprof.Profile(builtins=False), fastprof.Profile(builtins=False)
    for _ in range(3):
        a.enable()
        assert len(gc.callbacks) == len(original) + 1
        a.enable()  # enabling twice registers once
        assert len(gc.callbacks) == len(original) + 1
        a.disable()
        assert gc.callbacks == original
        a.disable()
    # two profilers at once, disabled in either order (each records its own);
    # only the explicit collection below, none triggered by allocations
    gc.disable()
    a.enable()
    try:
        b.enable()
    except ValueError:  # no second monitoring tool id / one hook per thread
        b = None
    gc.collect()
    if b is not None:
        b.disable()
        assert len(gc.callbacks) == len(original) + 1
        b.create_stats()
        assert gc_rows(b.stats)[0] == 1
    a.disable()
    assert gc.callbacks == original
    a.create_stats()
    # <=3.11: b's profile hook replaced a's on this thread, so a saw nothing
    from fastprof import _fastprof
    if b is None or _fastprof.USES_MONITORING:
        assert gc_rows(a.stats)[0] == 1
    # a user who emptied gc.callbacks meanwhile: disable() does not fail
    a.enable()
    saved = list(gc.callbacks)
    del gc.callbacks[:]
    a.disable()
    assert gc.callbacks == []
    gc.callbacks[:] = [c for c in saved if c in original]
    gc.callbacks.remove(mine)


def test_disable_and_clear_from_inside_a_collection(gc_state):
    """A callback (think: a finalizer) that disables or clears the profiler
    in the middle of a collection: the open <gc> is closed by disable(), the
    stop phase then records nothing, and the profiler stays usable."""
    import fastprof
    pr = fastprof.Profile(builtins=False)

    def disabler(phase, info):
        if phase == "start" and pr.enabled:
            pr.disable()
    gc.disable()  # the explicit collection only (3.14.10 may start one right after enable)
    pr.enable()
    gc.callbacks.append(disabler)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(disabler)
    assert not pr.enabled
    assert all(getattr(c, "__self__", None) is not pr for c in gc.callbacks)
    pr.create_stats()
    assert pr.stats[GC][:2] == (1, 1)

    pr = fastprof.Profile(builtins=False)

    def clearer(phase, info):
        if phase == "start":
            pr.clear()
    pr.enable()
    gc.callbacks.append(clearer)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(clearer)
    gc.collect()
    pr.disable()
    pr.create_stats()
    assert pr.stats[GC][:2] == (1, 1)  # the second collection only


def test_collections_in_a_thread_that_is_not_profiled(gc_state):
    import fastprof
    gc.disable()  # explicit collections only

    def work():
        gc.collect()
        gc.collect()

    for threads in (False, True):
        pr = fastprof.Profile(threads=threads)
        pr.enable()
        t = threading.Thread(target=work)
        t.start()
        t.join()
        pr.disable()
        pr.create_stats()
        n, callers = gc_rows(pr.stats)
        if threads:
            assert (n, callers) == (2, {COLLECT: 2})
            [(tid, stats)] = [(tid, s) for tid, _i, _n, s in pr.thread_stats() if GC in s]
            assert key(work) in stats
        else:
            assert n == 0


def test_custom_python_timer_with_collections_inside_it(gc_state):
    """A Python timer allocates (3.9-3.11: a collection may start inside it;
    3.12+: one scheduled may run at its first instruction): every collection
    is still counted, the timer itself is never recorded, no time is
    negative."""
    import fastprof
    ORACLE.starts = 0
    clock = [0]

    def timer():
        clock[0] += 1
        junk = [[], [], []]  # allocates container objects
        return clock[0] + len(junk) - 3

    pr = fastprof.Profile(timer, 1.0)
    # the young generation empty at enable(), whatever earlier tests left in it,
    # and no collection while only one of the two callbacks is in gc.callbacks
    gc.disable()
    gc.collect()
    pr.enable()
    gc.callbacks.append(ORACLE)
    gc.enable()
    try:
        allocate(5000)
    finally:
        gc.disable()
        gc.callbacks.remove(ORACLE)
        pr.disable()
    KEEP.clear()
    pr.create_stats()
    assert key(timer) not in pr.stats
    n, callers = gc_rows(pr.stats)
    # a collection run inside the timer is counted (at zero time) under the
    # frame on top then: allocate, or the list.append whose event was timed
    assert ORACLE.starts > 5 and n == ORACLE.starts
    assert set(callers) <= {key(allocate), ("~", 0, "<method 'append' of 'list' objects>")}
    for _cc, _nc, tt, ct, _callers in pr.stats.values():
        assert tt >= 0 and ct >= 0


def test_out_of_memory_during_a_collection_is_raised_at_disable(gc_state):
    import fastprof
    from fastprof import _fastprof
    pr = fastprof.Profile(builtins=False)
    gc.disable()  # no collection makes the <gc> row before the allocations fail
    pr.enable()
    _fastprof._mem_fail_after(0)
    try:
        gc.collect()  # <gc> needs a new row: dropped
    finally:
        _fastprof._mem_fail_after(-1)
    gc.collect()  # the row can be made now
    with pytest.raises(MemoryError, match="out of memory"):
        pr.disable()
    assert not pr.enabled
    assert all(getattr(c, "__self__", None) is not pr for c in gc.callbacks)
    pr.create_stats()
    assert pr.stats[GC][:2] == (1, 1)


# -- cProfile's counts, pstats readers, CLI ------------------------------------------

PROGRAM = textwrap.dedent('''\
    import gc

    class Node:
        def __init__(self, value, parent=None):
            self.value = value
            self.parent = parent
            self.children = []
            if parent is not None:
                parent.children.append(self)   # cycles: work for the collector

    def build(depth, parent=None):
        node = Node(depth, parent)
        if depth:
            for _ in range(3):
                build(depth - 1, node)
        return node

    def total(node):
        return node.value + sum(total(c) for c in node.children)

    def main():
        roots = [build(5) for _ in range(8)]
        s = sum(total(r) for r in roots)
        del roots
        gc.collect()
        return s
''')


def test_counts_equal_cprofiles_but_for_the_gc_row(tmp_path, gc_state):
    """Everything but <gc> (and its edges) is cProfile's counts, with
    collections happening (a low threshold and an explicit one)."""
    import cProfile
    import importlib.util

    import fastprof
    path = tmp_path / "gcprog.py"
    path.write_text(PROGRAM)
    spec = importlib.util.spec_from_file_location("gcprog", str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main()

    def counts(prof):
        prof.enable()
        mod.main()
        prof.disable()
        prof.create_stats()
        stats, _ = helpers.strip_internal(prof.stats, os.path.dirname(fastprof.__file__))
        funcs = {k: v[:2] for k, v in stats.items() if k != GC}
        edges = {(c, k): e[:2] for k, v in stats.items() if k != GC
                 for c, e in v[4].items() if c != GC}
        return funcs, edges, prof.stats

    ref_funcs, ref_edges, _ = counts(cProfile.Profile())
    funcs, edges, stats = counts(fastprof.Profile())
    assert funcs == ref_funcs
    assert edges == ref_edges
    n, callers = gc_rows(stats)
    assert n > 3 and callers[COLLECT] == 1


def test_pstats_reads_a_file_with_the_gc_row(tmp_path, gc_state):
    import fastprof
    out = str(tmp_path / "x.prof")
    pr = fastprof.Profile()
    with pr:
        allocate(3000)
        gc.collect()
    KEEP.clear()
    pr.dump_stats(out)
    st = pstats.Stats(out)
    assert GC in st.stats
    proc = subprocess.run([sys.executable, "-m", "pstats", out], input="callers gc\nquit\n",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "{gc}" in proc.stdout and "gc.collect" in proc.stdout


@pytest.mark.parametrize("flag,expect", [(None, True), ("--gc", True), ("--no-gc", False)])
def test_cli_gc_option(tmp_path, flag, expect):
    script = tmp_path / "prog.py"
    script.write_text("import gc\n\ndef main():\n    gc.collect()\n\nmain()\n")
    out = str(tmp_path / "x.prof")
    args = ["-m", "fastprof", "-o", out] + ([flag] if flag else []) + [str(script)]
    proc = helpers.run_python(args)
    assert proc.returncode == 0, proc.stderr
    stats = pstats.Stats(out).stats
    assert (GC in stats) == expect
    if expect:
        assert stats[GC][:2] == (1, 1) and COLLECT in stats[GC][4]
