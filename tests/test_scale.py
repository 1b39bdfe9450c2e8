"""A program with 200,000 distinct functions profiles without trouble, and
the tables stay within 256 bytes per function plus 128 per caller->callee
edge (plus 128 per call-path node when call paths are recorded), as
Profile.memory() reports them (the C-heap side of the same budget is checked
by tests/c/test_memory.c).

A program that starts 20,000 short threads one after the other (a server's
thread per request): reading the profile costs about the same after 8,000
threads as after 1,000, and the memory does not grow with the threads
(the records of ended threads fold into their group's,
csrc/fpy_thread_fold.c), while the counts stay exact."""
import _thread
import sys
import threading
import time

import pytest

import fastprof
from fastprof.data.profile_file import load_profile

N_FUNCTIONS = 200_000
BYTES_PER_FUNCTION = 256
BYTES_PER_EDGE = 128
BYTES_PER_NODE = 128


def _template():
    return None


def _distinct_functions(n):
    """n functions with n distinct code objects (same body, distinct first lines)."""
    code = _template.__code__
    glb = _template.__globals__
    return [type(_template)(code.replace(co_firstlineno=i + 1, co_name="f%d" % i), glb)
            for i in range(n)]


def _call_all(functions):
    for f in functions:
        f()


@pytest.mark.parametrize("callpaths", [False, True])
def test_200k_distinct_functions(callpaths):
    functions = _distinct_functions(N_FUNCTIONS)
    pr = fastprof.Profile(builtins=False, callpaths=callpaths)
    pr.enable()
    _call_all(functions)
    pr.disable()

    pr.create_stats()
    by_name = {key[2]: value for key, value in pr.stats.items()}
    made = [name for name in by_name if name.startswith("f") and name[1:].isdigit()]
    assert len(made) == N_FUNCTIONS
    assert all(by_name["f%d" % i][:2] == (1, 1) for i in range(0, N_FUNCTIONS, 997))
    caller = by_name["_call_all"]
    assert caller[:2] == (1, 1)

    n_functions = len(pr.stats)
    n_edges = sum(len(value[4]) for value in pr.stats.values())
    assert n_edges >= N_FUNCTIONS  # every f is called from _call_all
    n_nodes = len(pr.profile_data().callpaths.nodes) if callpaths else 0
    assert n_nodes >= (N_FUNCTIONS if callpaths else 0)
    used = pr.memory()
    budget = (BYTES_PER_FUNCTION * n_functions + BYTES_PER_EDGE * n_edges
              + BYTES_PER_NODE * n_nodes)
    assert 0 < used <= budget, (used, budget, n_functions, n_edges, n_nodes)

    pr.clear()
    assert pr.memory() < used // 100


def _short_task(k, done):
    done.release()
    return k + 1


def _threads_one_by_one(ks):
    """A thread per k, each started once the one before has run: _thread's
    (threading's cost three times as much to start, for the same records),
    but before 3.12, where only threading's threads get the profile hook."""
    for k in ks:
        done = _thread.allocate_lock()
        done.acquire()
        if sys.version_info >= (3, 12):
            _thread.start_new_thread(_short_task, (k, done))
        else:
            threading.Thread(target=_short_task, args=(k, done)).start()
        if not done.acquire(timeout=60):
            raise AssertionError("thread %d did not run" % k)


def _read(prof, path):
    """(seconds of thread_stats() + dump_stats(path), thread_stats())."""
    t0 = time.perf_counter()
    records = prof.thread_stats()
    prof.dump_stats(str(path))
    return time.perf_counter() - t0, records


def test_20k_short_threads(tmp_path):
    key = (_short_task.__code__.co_filename, _short_task.__code__.co_firstlineno, "_short_task")
    prof = fastprof.Profile(threads=True)
    prof.enable()
    _threads_one_by_one(range(1000))
    small, _ = _read(prof, tmp_path / "1k.prof")  # (its imports too)
    prof.enable()
    _threads_one_by_one(range(1000, 2000))
    mem_2k = prof.memory()
    _threads_one_by_one(range(2000, 8000))
    big, records = _read(prof, tmp_path / "8k.prof")
    # quadratic, as before the records of ended threads were folded: 64x
    # the 1,000 threads' time (29 s measured); linear: at most 8x; some
    # room for a loaded machine
    assert big < 5.0 and big <= 16 * small + 1.0, (small, big)
    # the newest 64 ended, their group's, this thread's, the last one's
    assert len(records) <= 64 + 3, len(records)
    assert sum(st[key][1] for _t, _i, _n, st in records if key in st) == 8000
    data = load_profile(str(tmp_path / "8k.prof"))
    assert data.stats[key][:2] == (8000, 8000)
    # each task's thread, on a record of its own or summed in its group's
    assert sum(t.get("threads", 1) for t in data.threads if key in t["stats"]) == 8000

    prof.enable()
    _threads_one_by_one(range(8000, 20000))
    mem_20k = prof.memory()
    prof.disable()
    assert mem_20k <= 1.25 * mem_2k + 65536, (mem_2k, mem_20k)
    prof.create_stats()
    assert prof.stats[key][:2] == (20000, 20000)
