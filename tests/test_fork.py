"""Fork while profiling (issue 4).

A process profiles with ``threads=True`` while two other threads run, and
forks.  In the child only the forking thread survives; the calls that were
open in the parent's other threads will never return there.

- The child keeps profiling its own thread (and a thread it starts), with
  exact counts and sane times; the parent's other threads' open frames are
  not closed with the child's times, so their functions' cumtime does not
  balloon by the child's run time; what finished before the fork is kept.
- The parent's stats are unaffected: nothing the child ran shows there, and
  its own threads' counts are exact.
"""
import json
import os
import select
import signal
import sys
import threading
import time
import warnings

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    pytest.mark.skipif(helpers.USING_CPROFILE, reason="threads= is fastprof-only"),
]

CHILD_RUN = 0.5      # seconds the child profiles on after the fork
CHILD_TIMEOUT = 120  # seconds before a silent child is killed


def leaf(x):
    return x + 1


def rec(n):
    return leaf(n) if n == 0 else rec(n - 1) + 1


def bg_step():
    return rec(4)


def bg_loop(stop, started, count):
    started.set()
    while not stop.is_set():
        bg_step()
        count[0] += 1


def parent_before():
    return rec(3)


def parent_after():
    return rec(2)


def child_work(seconds):
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        leaf(0)
    return time.perf_counter() - t0


def child_thread_work():
    return rec(6)


def problems_in(stats, where):
    out = []
    for key, (cc, nc, tt, ct, callers) in stats.items():
        if not (0 <= cc <= nc) or tt < 0 or ct < 0 or ct < tt - 1e-6:
            out.append("%s %s: %r" % (where, helpers.fmt_key(key), (cc, nc, tt, ct)))
        for caller, sub in callers.items():
            if not (0 <= sub[1] <= sub[0]) or sub[2] < 0 or sub[3] < 0:
                out.append("%s %s <- %s: %r" % (where, helpers.fmt_key(key),
                                                helpers.fmt_key(caller), sub))
    return out


def rows(stats, *names):
    """{name: [cc, nc, tt, ct]} of this file's functions called `names`."""
    here = os.path.abspath(__file__)
    out = {}
    for key, value in stats.items():
        if key[2] in names and os.path.abspath(key[0]).rstrip("c") == here.rstrip("c"):
            out[key[2]] = list(value[:4])
    return out


def child_side(prof, t_enable):
    """Runs in the fork child; returns what the parent checks."""
    from fastprof.recording.profiler import entries_to_stats
    t_fork = time.perf_counter()
    spent = child_work(CHILD_RUN)
    th = threading.Thread(target=child_thread_work)
    th.start()
    th.join(CHILD_TIMEOUT / 2)
    prof.disable()
    child_run = time.perf_counter() - t_fork
    merged = entries_to_stats(prof.getstats())
    problems = problems_in(merged, "merged")
    per_thread = []
    for tid, ident, _native in prof.threads():
        stats = entries_to_stats(prof.getstats(thread=tid))
        problems += problems_in(stats, "thread %d" % tid)
        per_thread.append({"ident": ident, "rows": rows(stats, "child_work", "child_thread_work",
                                                        "bg_loop", "bg_step")})
    return {
        "problems": problems[:40],
        "before_fork": t_fork - t_enable,
        "child_run": child_run,
        "spent": spent,
        "rows": rows(merged, "child_work", "child_thread_work", "bg_loop", "bg_step",
                     "parent_before", "rec"),
        "per_thread": per_thread,
        "me": threading.get_ident(),
        "child_thread": th.ident,
    }


def read_child(pid, fd):
    """The child's JSON report, and its exit status; kills it on timeout."""
    deadline = time.monotonic() + CHILD_TIMEOUT
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the fork child hung (no report after %d s)" % CHILD_TIMEOUT)
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if ready:
            data = os.read(fd, 65536)
            if not data:
                break
            chunks.append(data)
    os.close(fd)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the fork child did not exit")
        time.sleep(0.01)
    return b"".join(chunks).decode("utf-8", "replace"), status


def test_fork_while_profiling_threads():
    import fastprof
    from fastprof import _fastprof
    from fastprof.recording.profiler import entries_to_stats

    # raw times: the child's "spent" is read by the profiled code, the profiler's cost included
    prof = fastprof.Profile(threads=True, compensate=False)
    stop = threading.Event()
    started = [threading.Event(), threading.Event()]
    counts = [[0], [0]]
    bg = [threading.Thread(target=bg_loop, args=(stop, started[i], counts[i]), daemon=True)
          for i in range(2)]
    prof.enable()
    t_enable = time.perf_counter()
    try:
        for t in bg:
            t.start()
        for e in started:
            assert e.wait(CHILD_TIMEOUT)
        parent_before()
        time.sleep(0.05)  # the background threads are deep in bg_loop/bg_step
        r, w = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 3.12+: fork() with threads running
            pid = os.fork()
        if pid == 0:  # the child: report through the pipe, never return to pytest
            status = 0
            try:
                os.close(r)
                report = json.dumps(child_side(prof, t_enable))
            except BaseException:
                import traceback
                report = json.dumps({"error": traceback.format_exc()})
                status = 1
            try:
                os.write(w, report.encode())
            finally:
                os._exit(status)
        os.close(w)
        text, status = read_child(pid, r)
        for _ in range(3):
            parent_after()
    finally:
        stop.set()
        for t in bg:
            t.join(CHILD_TIMEOUT)
        prof.disable()

    # -- the child ------------------------------------------------------------
    assert os.WIFEXITED(status), "the fork child died: status %r\n%s" % (status, text[-3000:])
    report = json.loads(text) if text else {"error": "no report (exit %d)" % status}
    assert "error" not in report, report["error"]
    assert not report["problems"], "insane stats in the child:\n%s" % "\n".join(
        report["problems"])
    r = report["rows"]
    # its own thread went on being profiled, exactly
    assert r["child_work"][:2] == [1, 1], r
    assert r["child_work"][3] == pytest.approx(report["spent"], rel=0.10), r
    assert r["parent_before"][:2] == [1, 1], r  # finished before the fork: kept
    assert r["child_thread_work"][:2] == [1, 1], "a thread started in the child: %s" % r
    child_ident_rows = [t["rows"] for t in report["per_thread"]
                        if t["ident"] == report["child_thread"] and "child_thread_work" in t["rows"]]
    assert child_ident_rows, report["per_thread"]
    # the parent's other threads: their open calls did not go on in the child
    limit = 2 * report["before_fork"] + 0.1
    hint = ("" if hasattr(_fastprof, "_after_fork_child") else
            " (this build has no after-fork handler: _fastprof._after_fork_child is missing)")
    for name in ("bg_loop", "bg_step"):
        ct = r.get(name, [0, 0, 0.0, 0.0])[3]
        assert ct <= limit, (
            "in the fork child, %s (open in the parent's other threads at the fork) has "
            "cumtime %.3f s: more than its two threads could run before the fork "
            "(%.3f s each); the child's %.3f s were added%s"
            % (name, ct, report["before_fork"], report["child_run"], hint))

    # -- the parent -------------------------------------------------------------
    stats = entries_to_stats(prof.getstats())
    assert not problems_in(stats, "parent")
    p = rows(stats, "child_work", "child_thread_work", "parent_before", "parent_after",
             "bg_loop", "bg_step")
    assert "child_work" not in p and "child_thread_work" not in p, p
    assert p["parent_before"][:2] == [1, 1] and p["parent_after"][:2] == [3, 3], p
    assert p["bg_loop"][:2] == [2, 2], p
    assert p["bg_step"][:2] == [counts[0][0] + counts[1][0]] * 2, (p, counts)
    for _tid, ident, _name, st in prof.thread_stats():
        for i, t in enumerate(bg):
            if ident == t.ident:
                assert rows(st, "bg_step")["bg_step"][:2] == [counts[i][0]] * 2


def test_fork_child_can_restart_profiling():
    """In the child, disable() then a fresh enable() on the inherited
    profiler, and a new profiler, both work."""
    import fastprof
    from fastprof.recording.profiler import entries_to_stats

    prof = fastprof.Profile(threads=True)
    stop = threading.Event()
    started = threading.Event()
    t = threading.Thread(target=bg_loop, args=(stop, started, [0]), daemon=True)
    prof.enable()
    try:
        t.start()
        assert started.wait(CHILD_TIMEOUT)
        r, w = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pid = os.fork()
        if pid == 0:
            status = 0
            try:
                os.close(r)
                prof.disable()
                prof.clear()
                prof.enable()
                parent_after()
                prof.disable()
                first = rows(entries_to_stats(prof.getstats()), "parent_after", "rec", "bg_loop")
                second = fastprof.Profile(threads=True)
                second.enable()
                child_thread_work()
                second.disable()
                again = rows(entries_to_stats(second.getstats()), "child_thread_work", "rec")
                report = json.dumps({"first": first, "second": again})
            except BaseException:
                import traceback
                report = json.dumps({"error": traceback.format_exc()})
                status = 1
            try:
                os.write(w, report.encode())
            finally:
                os._exit(status)
        os.close(w)
        text, status = read_child(pid, r)
    finally:
        stop.set()
        t.join(CHILD_TIMEOUT)
        prof.disable()
    assert os.WIFEXITED(status), (status, text[-3000:])
    report = json.loads(text)
    assert "error" not in report, report["error"]
    assert report["first"]["parent_after"][:2] == [1, 1], report
    assert report["first"]["rec"][:2] == [1, 3], report
    assert "bg_loop" not in report["first"], report
    assert report["second"]["child_thread_work"][:2] == [1, 1], report
    assert report["second"]["rec"][:2] == [1, 7], report
