"""Every thread, with exact numbers (issue 4).

cProfile only sees the thread that enabled it.  With ``threads=True``
fastprof records every thread on its own shadow stack; the oracle for each
thread is cProfile itself, running the same workload alone:

- eight threads run eight different deterministic workloads at once (the
  GIL switching between them every 100 us, so their calls interleave
  finely); each thread's stats (``thread_stats()``, ``getstats(thread=id)``,
  ``dump_stats(thread=...)``) give the same (primitive, total) call counts
  and caller->callee edges as cProfile gives for that workload alone; the
  merged stats are the per-thread sums; and no edge joins the functions of
  two different threads;
- threads started before ``enable()`` (blocked on an Event until after it)
  and threads started after it are both recorded exactly; a thread that ends
  while profiling keeps its stats, closed when it ended (not at
  ``disable()``); a reused thread ident gets a new record;
- ``threads=False`` records only the thread that called ``enable()``, also
  when it ends and a new native thread takes its OS thread identity.

Timing is not the point here (see test_clocks.py); times are only checked
for sanity and, for ended threads, against a gap ten times their run time.
"""
import cProfile
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE,
                                reason="threads= is fastprof-only (cProfile sees one thread)")

N_THREADS = 8
JOIN_TIMEOUT = 120.0  # seconds; a thread still alive after that is a hang

# ---------------------------------------------------------------------------
# Workloads.  Shared functions (every thread calls them, with different
# arguments) plus, per thread index i, functions that only thread i runs.
# Everything is deterministic: the call counts depend on i only.

_SINK = []


def leaf(x):
    return x + 1


def rec(n):
    # direct recursion: n + 1 calls, 1 primitive
    if n == 0:
        return leaf(0)
    return rec(n - 1) + 1


def gen_values(n):
    # a generator: in the default mode every resume is a call, as cProfile
    for k in range(n):
        yield leaf(k)


_TEMPLATE = '''
def only_{i}_inner(k):
    return rec(k) + leaf(k)


def only_{i}(n, depth):
    total = 0
    for k in range(n):
        total += only_{i}_inner(depth)
        total += sum(gen_values(k % 4))
        _SINK.append(total)
    return total


def thread_main_{i}(barrier, n, depth, out):
    barrier.wait()
    t0 = time.perf_counter()
    r = only_{i}(n, depth)
    out[{i}] = (r, t0, time.perf_counter())
'''


def _make_workloads(count):
    """Per index i: a dict of the functions only thread i runs."""
    out = []
    for i in range(count):
        ns = {"rec": rec, "leaf": leaf, "gen_values": gen_values, "_SINK": _SINK, "time": time}
        code = compile(_TEMPLATE.format(i=i), "<fastprof-thread-workload-%d>" % i, "exec")
        exec(code, ns)
        out.append({"only": ns["only_%d" % i], "inner": ns["only_%d_inner" % i],
                    "main": ns["thread_main_%d" % i]})
    return out


WORKLOADS = _make_workloads(N_THREADS)


def workload_args(i):
    """(loop count, recursion depth) of thread i: different for each thread."""
    return 2000 + 500 * i, 3 + i


def key(func):
    code = func.__code__
    return (code.co_filename, code.co_firstlineno, code.co_name)


SHARED_KEYS = {key(leaf), key(rec), key(gen_values)}


def unique_keys(i):
    return {key(WORKLOADS[i]["only"]), key(WORKLOADS[i]["inner"]), key(WORKLOADS[i]["main"])}


def workload_py_keys(i):
    """The Python functions the workload of thread i runs (its own + shared)."""
    return {key(WORKLOADS[i]["only"]), key(WORKLOADS[i]["inner"])} | SHARED_KEYS


# ---------------------------------------------------------------------------
# Comparing stats


def fmt(k):
    return helpers.fmt_key(k)


def call_counts(stats, py_keys):
    """({function: (cc, nc)} for py_keys, {(caller, callee): (nc, cc)} for
    every edge whose caller is in py_keys -- callees include C functions,
    not fastprof's ``<gc>`` row: cProfile has none, and a collection comes
    whenever the allocations say)."""
    funcs = {k: stats[k][:2] for k in py_keys if k in stats}
    edges = {}
    for callee, value in stats.items():
        if callee == ("~", 0, "<gc>"):
            continue
        for caller, sub in value[4].items():
            if caller in py_keys:
                edges[(caller, callee)] = (sub[0], sub[1])
    return funcs, edges


def diff(expected, actual, what):
    lines = []
    for k in sorted(set(expected) | set(actual), key=repr):
        if expected.get(k) != actual.get(k):
            name = fmt(k) if what == "function" else "%s -> %s" % (fmt(k[0]), fmt(k[1]))
            lines.append("  %s %s: cProfile %s, fastprof %s" % (what, name, expected.get(k),
                                                                actual.get(k)))
    return lines


def assert_same_counts(expected_stats, actual_stats, py_keys, context):
    ef, ee = call_counts(expected_stats, py_keys)
    af, ae = call_counts(actual_stats, py_keys)
    assert ef, "the reference run saw none of the workload (%s)" % context
    problems = diff(ef, af, "function") + diff(ee, ae, "edge")
    assert not problems, "%s [Python %s]: counts differ from cProfile alone:\n%s" % (
        context, sys.version.split()[0], "\n".join(problems[:60]))


def assert_sane(stats, context=""):
    """No negative counts or times, primitive <= total, cumtime >= tottime,
    callers' counts within the callee's."""
    for k, (cc, nc, tt, ct, callers) in stats.items():
        assert 0 <= cc <= nc, (context, fmt(k), cc, nc)
        assert tt >= 0 and ct >= 0, (context, fmt(k), tt, ct)
        assert ct >= tt - 1e-6, (context, fmt(k), tt, ct)
        total = 0
        for caller, (snc, scc, stt, sct) in callers.items():
            assert 0 <= scc <= snc, (context, fmt(caller), fmt(k), snc, scc)
            assert stt >= 0 and sct >= 0, (context, fmt(caller), fmt(k), stt, sct)
            total += snc
        assert total <= nc, (context, fmt(k), "callers' calls", total, "> calls", nc)


def reference_stats(i):
    """The workload of thread i run alone under cProfile (this thread)."""
    n, depth = workload_args(i)
    prof = cProfile.Profile()
    prof.enable()
    WORKLOADS[i]["only"](n, depth)
    prof.disable()
    prof.create_stats()
    return prof.stats


@pytest.fixture
def fast_switching():
    """Make the GIL change hands every 100 us so the threads interleave."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def join_all(threads, timeout=JOIN_TIMEOUT):
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in threads if t.is_alive()]
    assert not alive, "threads still running after %.0f s (hang?): %s" % (timeout, alive)


def records_by_ident(prof):
    """{ident: [(id, stats), ...]} from thread_stats()."""
    out = {}
    for tid, ident, _name, stats in prof.thread_stats():
        out.setdefault(ident, []).append((tid, stats))
    return out


# ---------------------------------------------------------------------------
# Eight threads at once


def test_eight_threads_match_cprofile_alone(fast_switching, tmp_path):
    import fastprof
    from fastprof.recording.profiler import entries_to_stats

    refs = [reference_stats(i) for i in range(N_THREADS)]

    barrier = threading.Barrier(N_THREADS)
    results = {}
    threads = [threading.Thread(target=WORKLOADS[i]["main"], name="worker-%d" % i,
                                args=(barrier, *workload_args(i), results), daemon=True)
               for i in range(N_THREADS)]
    prof = fastprof.Profile(threads=True)
    prof.enable()
    try:
        for t in threads:
            t.start()
        join_all(threads)
    finally:
        prof.disable()
    assert sorted(results) == list(range(N_THREADS)), "a worker failed: %s" % results
    # the premise: the workloads really ran at the same time (each one
    # overlapped another; with the GIL switching every 100 us, their calls
    # interleave)
    for i, (_r, start, end) in results.items():
        others = [j for j, (_r2, s2, e2) in results.items() if j != i and s2 < end and start < e2]
        assert others, "workload %d ran alone: %s" % (i, results)

    # All eight were alive together (the barrier), so their idents differ.
    by_ident = records_by_ident(prof)
    per_thread = {}
    for i, t in enumerate(threads):
        records = by_ident.get(t.ident)
        assert records, "thread %d (ident %d) has no record in threads(): %s" % (
            i, t.ident, prof.threads())
        assert len(records) == 1, (i, records)
        per_thread[i] = records[0]
    ids = [r[0] for r in prof.threads()]
    assert len(ids) == len(set(ids)), "thread ids are not unique: %s" % prof.threads()

    for i in range(N_THREADS):
        tid, stats = per_thread[i]
        assert_sane(stats, "thread %d" % i)
        # per-thread counts == cProfile running the workload alone
        assert_same_counts(refs[i], stats, workload_py_keys(i), "thread %d" % i)
        # the thread's entry point was called once, by Thread.run
        (main_cc, main_nc) = stats[key(WORKLOADS[i]["main"])][:2]
        assert (main_cc, main_nc) == (1, 1)
        # nothing of another thread's workload in this thread's stats
        for j in range(N_THREADS):
            if j != i:
                stray = unique_keys(j) & set(stats)
                assert not stray, "thread %d's stats hold thread %d's functions: %s" % (
                    i, j, [fmt(k) for k in stray])
        # getstats(thread=id) is what thread_stats() reports
        direct = entries_to_stats(prof.getstats(thread=tid))
        assert {k: v[:2] for k, v in direct.items()} == {k: v[:2] for k, v in stats.items()}

    # Merged stats (getstats() / .stats) are the sums over all thread records.
    prof.create_stats()
    merged = prof.stats
    assert_sane(merged, "merged")
    all_records = prof.thread_stats()
    sum_funcs, sum_edges, sum_tt = {}, {}, {}
    for _tid, _ident, _name, stats in all_records:
        for k, (cc, nc, tt, _ct, callers) in stats.items():
            a, b = sum_funcs.get(k, (0, 0))
            sum_funcs[k] = (a + cc, b + nc)
            sum_tt[k] = sum_tt.get(k, 0.0) + tt
            for caller, sub in callers.items():
                a, b = sum_edges.get((caller, k), (0, 0))
                sum_edges[(caller, k)] = (a + sub[0], b + sub[1])
    merged_funcs = {k: v[:2] for k, v in merged.items()}
    merged_edges = {(c, k): sub[:2] for k, v in merged.items() for c, sub in v[4].items()}
    problems = diff(sum_funcs, merged_funcs, "function") + diff(sum_edges, merged_edges, "edge")
    assert not problems, "merged stats are not the per-thread sums (cProfile = sum):\n%s" % (
        "\n".join(problems[:60]))
    for k, tt in sum_tt.items():
        assert merged[k][2] == pytest.approx(tt, rel=1e-6, abs=1e-9), fmt(k)
    # ... and equal the sums of the cProfile runs, for the workload.
    all_py = set().union(*(workload_py_keys(i) for i in range(N_THREADS)))
    ref_sum = {}
    for ref in refs:
        for k, v in ref.items():
            if k in all_py:
                a, b = ref_sum.get(k, (0, 0))
                ref_sum[k] = (a + v[0], b + v[1])
    assert {k: merged_funcs[k] for k in ref_sum} == ref_sum

    # No cross-thread edges.
    owner = {}
    for i in range(N_THREADS):
        for k in unique_keys(i):
            owner[k] = i
    crossing = [(c, k) for (c, k) in merged_edges
                if c in owner and k in owner and owner[c] != owner[k]]
    assert not crossing, "edges between functions of different threads: %s" % [
        "%s -> %s" % (fmt(c), fmt(k)) for c, k in crossing]
    # the shared functions are only ever called from the workload
    workload_callers = set(owner) | SHARED_KEYS | {('~', 0, '<built-in method builtins.sum>')}
    for k in SHARED_KEYS:
        strangers = set(merged[k][4]) - workload_callers
        assert not strangers, "%s called from outside the workload: %s" % (
            fmt(k), [fmt(c) for c in strangers])
    for i in range(N_THREADS):
        callers = set(merged[key(WORKLOADS[i]["only"])][4])
        assert callers == {key(WORKLOADS[i]["main"])}, [fmt(c) for c in callers]

    # The per-thread file and table show that thread only.
    out = tmp_path / "thread3.prof"
    prof.dump_stats(str(out), thread=per_thread[3][0])
    import pstats
    from_file = pstats.Stats(str(out)).stats
    assert {k: v[:2] for k, v in from_file.items()} == {
        k: v[:2] for k, v in per_thread[3][1].items()}


def test_print_stats_of_one_thread(capsys):
    import fastprof
    results = {}
    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=WORKLOADS[i]["main"], args=(barrier, 3, 2, results))
               for i in (1, 2)]
    prof = fastprof.Profile(threads=True)
    prof.enable()
    for t in threads:
        t.start()
    join_all(threads)
    prof.disable()
    tid = dict((ident, tid) for tid, ident, _n, _s in prof.thread_stats())[threads[1].ident]
    capsys.readouterr()
    prof.print_stats("calls", thread=tid)
    out = capsys.readouterr().out
    assert "only_2" in out and "only_1" not in out, out


# ---------------------------------------------------------------------------
# Threads started before and after enable(), ended threads, ident reuse


def _waiter(event, i, out):
    # entered before enable(): this frame itself is not recorded
    event.wait()
    n, depth = workload_args(i)
    t0 = time.perf_counter()
    WORKLOADS[i]["only"](n, depth)
    out[i] = time.perf_counter() - t0


def _runner(i, out):
    n, depth = workload_args(i)
    t0 = time.perf_counter()
    WORKLOADS[i]["only"](n, depth)
    out[i] = time.perf_counter() - t0


def test_threads_started_before_and_after_enable(fast_switching):
    import fastprof
    before = [0, 1, 2]
    after = [3, 4, 5]
    refs = {i: reference_stats(i) for i in before + after}
    go = threading.Event()
    done = {}
    early = [threading.Thread(target=_waiter, args=(go, i, done), daemon=True) for i in before]
    for t in early:
        t.start()
    time.sleep(0.05)  # let them block in Event.wait()
    prof = fastprof.Profile(threads=True)
    prof.enable()
    try:
        late = [threading.Thread(target=_runner, args=(i, done), daemon=True) for i in after]
        for t in late:
            t.start()
        go.set()
        join_all(early + late)
        # every worker has ended; the profiler is still on
        time.sleep(0.3)
    finally:
        prof.disable()
    assert sorted(done) == before + after, done

    by_ident = records_by_ident(prof)
    for i, t in zip(before + after, early + late):
        records = by_ident.get(t.ident)
        assert records, "thread %d (%s enable()) was not recorded" % (
            i, "started before" if i in before else "started after")
        # idents may be reused once a thread ended: find the record running i
        mine = [st for _tid, st in records if key(WORKLOADS[i]["only"]) in st]
        assert len(mine) == 1, (i, len(mine))
        stats = mine[0]
        assert_sane(stats, "thread %d" % i)
        assert_same_counts(refs[i], stats, workload_py_keys(i), "thread %d" % i)
        # closed when the thread ended, not at disable() 0.3 s later
        ct = stats[key(WORKLOADS[i]["only"])][3]
        assert ct <= done[i] * 1.5 + 0.05, (
            "thread %d: cumtime %.3f s but it ran %.3f s: its frames were closed late"
            % (i, ct, done[i]))
    prof.create_stats()
    assert_sane(prof.stats, "merged")


def test_thread_that_ends_leaves_consistent_stats():
    """A thread ends mid-profile; more threads come and go (idents get
    reused); each gets its own record, every record is exact and closed."""
    import fastprof
    refs = {i: reference_stats(i) for i in range(4)}
    prof = fastprof.Profile(threads=True)
    done = {}
    threads = []
    prof.enable()
    try:
        for i in range(4):  # one after the other: idents are often reused
            t = threading.Thread(target=_runner, args=(i, done), daemon=True)
            threads.append(t)
            t.start()
            join_all([t])
            time.sleep(0.02)
        mid = prof.thread_stats()  # stats of ended threads, read while enabled
        time.sleep(0.2)
    finally:
        prof.disable()
    records = prof.threads()
    ids = [r[0] for r in records]
    assert len(ids) == len(set(ids)), records
    assert len(records) >= 5, "one record per thread (4 workers + this one): %s" % records
    seen = set()
    for tid, ident, _name, stats in prof.thread_stats():
        assert_sane(stats, "thread id %d" % tid)
        mine = [i for i in range(4) if key(WORKLOADS[i]["only"]) in stats]
        assert len(mine) <= 1, "one record holds several threads' work: %s" % mine
        if mine:
            i = mine[0]
            seen.add(i)
            assert ident == threads[i].ident
            assert_same_counts(refs[i], stats, workload_py_keys(i), "ended thread %d" % i)
            ct = stats[key(WORKLOADS[i]["only"])][3]
            assert ct <= done[i] * 1.5 + 0.05, (i, ct, done[i])
    assert seen == {0, 1, 2, 3}
    # what was read while enabled is what disable() left for the ended threads
    mid_only = {}
    for _tid, _ident, _name, stats in mid:
        for i in range(4):
            k = key(WORKLOADS[i]["only"])
            if k in stats:
                mid_only[i] = stats[k][:2]
    assert mid_only == {i: refs[i][key(WORKLOADS[i]["only"])][:2] for i in range(4)}


def _spin_until(flag, started):
    started[0] = 1
    while not flag:  # no call: the thread's only event is this frame's return
        pass


def test_thread_with_nothing_recorded_is_not_listed():
    """A thread already running when profiling starts whose every event
    returns from a frame begun before (a test runner's thread waking up,
    xdist's) has no record to show: thread_stats() and the file list only
    the threads that recorded a call (a one-thread profile stays one)."""
    import _thread

    import fastprof
    flag, started, returned, done, ended = [], [0], [0], [], threading.Event()

    def run():
        _spin_until(flag, started)
        returned[0] = 1  # (no call: no event)
        while not done:
            pass
        ended.set()  # a call, after the profile is over

    prof = fastprof.Profile(threads=True)
    spinner = _thread.start_new_thread(run, ())
    deadline = time.monotonic() + JOIN_TIMEOUT
    while not started[0] and time.monotonic() < deadline:
        time.sleep(0.001)
    prof.enable()
    try:
        sum(i for i in range(10))
        flag.append(1)
        while not returned[0] and time.monotonic() < deadline:
            time.sleep(0.001)
    finally:
        prof.disable()
        done.append(1)
    assert returned[0] and ended.wait(JOIN_TIMEOUT)
    listed = [ident for _tid, ident, _n, _s in prof.thread_stats()]
    assert threading.get_ident() in listed and spinner not in listed, listed
    assert spinner not in [t["ident"] for t in prof.profile_data().threads]


# ---------------------------------------------------------------------------
# disable(this_thread=True): the calling thread stops, the others go on
# (what python -m fastprof does to the main thread when the script ends)


def _stopped_thread_side():
    return leaf(1)


def test_disable_this_thread_stops_only_the_calling_thread():
    import fastprof
    ref = reference_stats(2)
    go = threading.Event()
    done = {}
    worker = threading.Thread(target=_waiter, args=(go, 2, done), daemon=True)
    worker.start()
    # raw times: the worker's done[2] is its own clock reads, the profiler's cost included
    prof = fastprof.Profile(threads=True, compensate=False)
    prof.enable()
    try:
        rec(2)  # recorded: this thread was profiled until now
        prof.disable(this_thread=True)
        assert prof.enabled  # the other threads are still profiled
        prof.disable(this_thread=True)  # again: nothing changes
        _stopped_thread_side()  # not recorded
        go.set()
        join_all([worker])
        assert prof.enabled
    finally:
        prof.disable()
    assert not prof.enabled
    by_ident = records_by_ident(prof)
    ((_tid, mine),) = by_ident[threading.get_ident()]
    assert_sane(mine, "the stopped thread")
    assert mine[key(rec)][:2] == (1, 3)
    assert key(_stopped_thread_side) not in mine and key(_waiter) not in mine
    assert not {k for k in mine if k[2] == "join"}, "recorded after it stopped"
    ((_tid, theirs),) = by_ident[worker.ident]
    assert_sane(theirs, "the worker")
    # the worker ran its whole workload after this thread stopped: exact
    assert_same_counts(ref, theirs, workload_py_keys(2), "worker")
    ct = theirs[key(WORKLOADS[2]["only"])][3]
    assert ct >= 0.5 * done[2], (ct, done[2])
    # a new round records this thread again
    prof.enable()
    _stopped_thread_side()
    prof.disable()
    ((_tid, mine),) = records_by_ident(prof)[threading.get_ident()]
    assert mine[key(_stopped_thread_side)][:2] == (1, 1)


def test_disable_this_thread_without_threads_is_disable():
    import fastprof
    prof = fastprof.Profile()
    prof.enable()
    rec(1)
    prof.disable(this_thread=True)
    assert not prof.enabled
    _stopped_thread_side()
    prof.create_stats()
    assert key(rec) in prof.stats and key(_stopped_thread_side) not in prof.stats
    with pytest.raises(TypeError):
        prof.disable(True)  # keyword only


# ---------------------------------------------------------------------------
# threads=False


def test_threads_false_records_only_the_enabling_thread():
    import fastprof
    ref = reference_stats(6)
    go = threading.Event()
    done = {}
    early = threading.Thread(target=_waiter, args=(go, 0, done), daemon=True)
    early.start()
    prof = fastprof.Profile()  # threads=False is the default, as cProfile
    assert prof.options["threads"] is False
    prof.enable()
    try:
        late = threading.Thread(target=_runner, args=(1, done), daemon=True)
        late.start()
        go.set()
        n, depth = workload_args(6)
        WORKLOADS[6]["only"](n, depth)
        join_all([early, late])
    finally:
        prof.disable()
    assert sorted(done) == [0, 1]
    records = prof.threads()
    assert [r[1] for r in records] == [threading.get_ident()], records
    prof.create_stats()
    assert_sane(prof.stats)
    for i in (0, 1):
        stray = unique_keys(i) & set(prof.stats)
        assert not stray, "threads=False recorded another thread: %s" % [fmt(k) for k in stray]
    assert_same_counts(ref, prof.stats, workload_py_keys(6), "enabling thread")


def test_threads_false_enabled_from_a_worker_thread():
    """The enabling thread need not be the main thread."""
    import fastprof
    ref = reference_stats(5)
    prof = fastprof.Profile(threads=False)
    started, finish = threading.Event(), threading.Event()
    errors = []

    def worker():
        try:
            prof.enable()
            started.set()
            n, depth = workload_args(5)
            WORKLOADS[5]["only"](n, depth)
            finish.wait(JOIN_TIMEOUT)
            prof.disable()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            started.set()

    t = threading.Thread(target=worker, daemon=True)
    t.start()
    assert started.wait(JOIN_TIMEOUT)
    n, depth = workload_args(4)
    WORKLOADS[4]["only"](n, depth)  # the main thread: not recorded
    finish.set()
    join_all([t])
    assert not errors, errors
    records = prof.threads()
    assert [r[1] for r in records] == [t.ident], records
    prof.create_stats()
    assert_sane(prof.stats)
    assert not unique_keys(4) & set(prof.stats)
    assert_same_counts(ref, prof.stats, workload_py_keys(5), "worker that enabled")


def _owner_work():
    return sum(range(10))


def _other_work():
    return sum(range(20))


# Two native threads, the second started once the first has ended, all in
# one C call: no Python code runs in between (a C library's thread pool).
ONE_AFTER_ANOTHER_C = r"""
#include <pthread.h>
typedef void *(*start_fn)(void *);
int one_after_another(start_fn first, start_fn second)
{
    pthread_t t;
    if (pthread_create(&t, 0, first, 0) || pthread_join(t, 0))
        return -1;
    if (pthread_create(&t, 0, second, 0) || pthread_join(t, 0))
        return -1;
    return 0;
}
"""


def build_one_after_another(tmp_path):
    import ctypes
    import shutil
    import subprocess
    cc = os.environ.get("CC", "cc")
    if not shutil.which(cc):
        helpers.tool_missing("a C compiler (%s) to build the native-thread helper" % cc)
    src, lib = tmp_path / "one_after_another.c", tmp_path / "one_after_another.so"
    src.write_text(ONE_AFTER_ANOTHER_C)
    subprocess.run([cc, "-shared", "-fPIC", "-pthread", str(src), "-o", str(lib)], check=True)
    fn = ctypes.CDLL(str(lib)).one_after_another
    start_type = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
    fn.argtypes = [start_type, start_type]
    return fn, start_type


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's reuse of a joined thread's identity")
def test_threads_false_new_native_thread_in_the_ended_owners_place(tmp_path):
    """A native thread enables a threads=False profiler and ends; the next
    native thread gets the same OS thread identity (glibc reuses a joined
    thread's stack and descriptor), and no Python code runs in between to
    tell them apart. Its calls are not the enabling thread's: they are not
    recorded."""
    import fastprof
    one_after_another, start_type = build_one_after_another(tmp_path)
    prof = fastprof.Profile(threads=False)
    idents = []

    def owner(_):
        prof.enable()
        _owner_work()
        idents.append(threading.get_ident())

    def other(_):
        _other_work()
        idents.append(threading.get_ident())

    starts = [start_type(owner), start_type(other)]
    try:
        rc = one_after_another(*starts)
    finally:
        prof.disable()
    assert rc == 0
    if idents[0] != idents[1]:
        pytest.skip("the second native thread did not reuse the first one's identity")
    prof.create_stats()
    names = {k[2]: v[1] for k, v in prof.stats.items()}
    assert names.get("_owner_work") == 1, sorted(names)
    assert "_other_work" not in names, "threads=False recorded a thread that is not the enabling one"
    assert [r[1] for r in prof.threads()] == [idents[0]]


def test_profiler_never_calls_thread_is_alive(monkeypatch):
    """Naming threads must not touch their state: ``Thread.is_alive()`` may
    release the thread's lock (before 3.13), and racing a ``join()`` in
    another thread that broke the program's threading (seen in the stress
    test as "release unlocked lock")."""
    import fastprof

    ended = threading.Thread(target=rec, args=(2,), name="ended-before")
    ended.start()
    ended.join()
    calls = []

    def spy(self):
        calls.append(self.name)
        raise AssertionError("the profiler called Thread.is_alive()")

    monkeypatch.setattr(threading.Thread, "is_alive", spy)
    prof = fastprof.Profile(threads=True)
    prof.enable()
    worker = threading.Thread(target=rec, args=(3,), name="worker")
    worker.start()
    worker.join()
    prof.disable()
    prof.create_stats()
    names = {name for _tid, _ident, name, _stats in prof.thread_stats()}
    assert calls == []
    assert "worker" in names and "ended-before" not in names


# ---------------------------------------------------------------------------
# Many threads: the records of ended threads are folded per name group, but
# the newest 64 (docs/threads-coroutines.md, csrc/fpy_thread_fold.c)

KEPT_ENDED = 64  # ended threads that keep a record of their own


def _churn_leaf(k):
    return k + 1


def _churn_rec(n):
    return _churn_leaf(n) if n == 0 else _churn_rec(n - 1) + 1


def _churn_task(k):
    return _churn_rec(k % 4) + _churn_leaf(k)


CHURN_KEYS = {key(_churn_leaf), key(_churn_rec), key(_churn_task)}


def _churn_reference(ks):
    """cProfile of _churn_task(k) for each k, in this thread."""
    prof = cProfile.Profile()
    prof.enable()
    for k in ks:
        _churn_task(k)
    prof.disable()
    prof.create_stats()
    return prof.stats


def _one_by_one(ks, name=None):
    for k in ks:
        t = threading.Thread(target=_churn_task, args=(k,),
                             name=None if name is None else "%s-%d" % (name, k))
        t.start()
        join_all([t])


def _live_worker(i, started, release):
    n, depth = workload_args(i)
    WORKLOADS[i]["only"](n, depth)
    started.set()
    release.wait(JOIN_TIMEOUT)


def test_ended_threads_fold_into_their_name_group():
    """150 threads named alike, then 30 named otherwise, run one after the
    other while a long-lived thread waits: the newest 64 ended threads keep
    their records, the 116 older ones are one record of their group, named
    for it and counting them; the live thread's record and the totals are
    cProfile's numbers exactly, in the views and the file too."""
    import fastprof
    from fastprof.data.thread_groups import thread_pattern
    from fastprof.tools import view
    ref_live = reference_stats(2)
    ref_churn = _churn_reference(range(180))
    prof = fastprof.Profile(threads=True)
    started, release = threading.Event(), threading.Event()
    live = threading.Thread(target=_live_worker, args=(2, started, release), name="live")
    prof.enable()
    try:
        live.start()
        assert started.wait(JOIN_TIMEOUT)
        _one_by_one(range(150))
        _one_by_one(range(150, 180), name="pool")
    finally:
        prof.disable()
    try:
        records = prof.thread_stats()
    finally:
        release.set()
        join_all([live])
    churn_name = {tid: name for tid, ident, name, stats in records if key(_churn_task) in stats}
    folded = [r for r in records if r[0] >> 62 == 1]
    assert len(folded) == 1, [r[:3] for r in records]
    tid, ident, name, stats = folded[0]
    kept_alike = [n for n in churn_name.values() if not n.startswith("pool-") and n != name]
    assert len(kept_alike) == KEPT_ENDED - 30
    pattern = thread_pattern(kept_alike[0])
    assert name == "%s x%d ended" % (pattern, 150 - len(kept_alike)) and ident == 0
    assert stats[key(_churn_task)][:2] == (116, 116)
    assert sorted(n for n in churn_name.values() if n.startswith("pool-")) == sorted(
        "pool-%d" % k for k in range(150, 180))
    for tid, _ident, name, stats in records:
        assert_sane(stats, name)
        if tid in churn_name and tid >> 62 == 0:
            assert stats[key(_churn_task)][:2] == (1, 1), name
    mine = [r for r in records if r[1] == live.ident]
    assert [r[2] for r in mine] == ["live"]
    assert_same_counts(ref_live, mine[0][3], workload_py_keys(2), "a live thread among ended ones")
    # the totals, the per-thread records summed, the file, the views
    prof.create_stats()
    assert_same_counts(ref_churn, prof.stats, CHURN_KEYS, "180 ended threads, merged")
    summed = {}
    for _tid, _ident, _name, stats in records:
        for k in CHURN_KEYS:
            if k in stats:
                summed[k] = summed.get(k, 0) + stats[k][1]
    assert summed == {k: ref_churn[k][1] for k in CHURN_KEYS}
    data = prof.profile_data()  # ("live" has ended since: the oldest ended, folded too)
    group = {t["group"]: t["threads"] for t in data.threads if t.get("threads")}
    assert group == {pattern: 116, "live": 1}
    assert view.threads_selected(data, None) == 180 + 2  # and this thread and "live"
    stats, what = view.select_stats(data, pattern)
    assert what == "150 threads %s" % pattern
    assert stats[key(_churn_task)][:2] == (150, 150)
    assert "182 threads recorded" in view.threads_line(data)
    assert "150\u00d7 %s" % pattern in view.threads_line(data)


def test_names_of_folded_threads_are_forgotten():
    """What the profiler keeps per ended thread goes with its record: the
    name written down when it started too (a server runs for days)."""
    import fastprof
    prof = fastprof.Profile(threads=True)
    prof.enable()
    try:
        _one_by_one(range(400))
    finally:
        prof.disable()
    records = prof.threads()
    assert len(records) <= KEPT_ENDED + 2, len(records)
    prof.take_thread_names()
    assert len(prof._thread_names) <= len(records), len(prof._thread_names)


def test_reading_per_thread_stats_while_threads_come_and_go(fast_switching):
    """thread_stats() and profile_data()'s per-thread records, read over and
    over while threads end and get folded: every read works, and each one's
    records sum to no more than the totals read after it."""
    import fastprof
    prof = fastprof.Profile(threads=True)
    stop = []
    errors = []

    def churn():
        try:
            k = 0
            while not stop:
                _one_by_one([k])
                k += 1
        except BaseException as exc:
            errors.append(exc)

    churner = threading.Thread(target=churn, name="churner")
    prof.enable()
    try:
        churner.start()
        deadline = time.monotonic() + 3.0
        reads = 0

        def folded():
            return any(r[0] >> 62 == 1 for r in prof.threads())
        # 3 s and 20 reads at least, and on until a thread was folded (a
        # machine busy with other work ends fewer threads in 3 s)
        while (time.monotonic() < deadline or reads < 20 or not folded()) and (
                time.monotonic() < deadline + 120):
            records = prof.thread_stats() if reads % 2 else prof.thread_records()
            calls = sum((r[3] if reads % 2 else r["stats"]).get(key(_churn_task), (0, 0))[1]
                        for r in records)
            prof.create_stats()
            total = prof.stats.get(key(_churn_task), (0, 0))[1]
            assert calls <= total, (calls, total)
            prof.enable()
            reads += 1
    finally:
        stop.append(1)
        join_all([churner])
        prof.disable()
    assert not errors, errors
    assert any(r[0] >> 62 == 1 for r in prof.threads()), "no thread was folded"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.9-3.11: a profile hook per thread")
def test_hooks_of_ended_threads_go():
    """3.9-3.11: each thread gets a hook object; an ended thread's goes when
    its record is folded, so they do not pile up."""
    import gc

    import fastprof
    prof = fastprof.Profile(threads=True)
    prof.enable()
    try:
        _one_by_one(range(300))
    finally:
        prof.disable()
    prof.threads()  # folds
    gc.collect()
    hooks = [o for o in gc.get_objects() if type(o).__name__ == "_Hook"]
    assert len(hooks) <= KEPT_ENDED + 2, len(hooks)
