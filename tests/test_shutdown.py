"""How ``python -m fastprof`` ends: as python ends (issue 11, items 1, 2, 10).

- A program that leaves a ThreadPoolExecutor or ProcessPoolExecutor open
  exits, as under python: threading's exit hooks (which wake the
  executors' workers) run before the threads are waited for.
- Threads that outlive the main script are profiled until they end, timed
  right (own and cumulative time, every call with its caller), with no
  frame of the profiler or of the interpreter's shutdown in any profile;
  the same when Ctrl-C ends the wait.
- A forked child never writes or prints the parent's profile, and ends as
  it would without the profiler.

Every program runs in a subprocess with a timeout, in its own session, so
a hang fails the test (and kills the whole process group) rather than the
suite.  Times are checked with generous lower bounds only.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import fastprof as fastprof_pkg
import helpers
from fastprof.data.profile_file import load_profile

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE, reason="runs python -m fastprof")

TIMEOUT = 60  # seconds: every program here ends in well under one

FASTPROF_DIR = os.path.dirname(os.path.abspath(fastprof_pkg.__file__))


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return str(path)


def start(args, cwd, **kw):
    return subprocess.Popen([sys.executable] + list(args), cwd=str(cwd),
                            env=helpers.subprocess_env(PYTHONIOENCODING="utf-8"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kw)


def finish(proc, timeout=TIMEOUT):
    """(returncode, stdout, stderr) once the process and every process that
    holds its output pipes (forked children) have ended; a hang kills the
    process group and fails."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = proc.communicate()
        pytest.fail("the program did not exit within %d s (it exits at once under "
                    "python)\nstdout: %s\nstderr: %s" % (timeout, out[-2000:], err[-2000:]))
    return proc.returncode, out, err


def fastprof(args, cwd, timeout=TIMEOUT):
    return finish(start(["-m", "fastprof"] + list(args), cwd), timeout)


def by_name(stats, name, filename=None):
    rows = [(k, v) for k, v in stats.items()
            if k[2] == name and (filename is None or os.path.basename(k[0]) == filename)]
    assert len(rows) == 1, (name, rows)
    return rows[0]


def profiler_frames(stats):
    """Rows that only the profiler or the shutdown it caused can explain:
    fastprof's own Python functions, and the interpreter's shutdown of
    threads (which runs in the main thread after the script ends, where
    cProfile records nothing either)."""
    bad = []
    for key in stats:
        filename, _line, name = key
        if filename != "~" and os.path.dirname(os.path.abspath(filename)) == FASTPROF_DIR:
            bad.append(key)
        elif os.path.basename(filename) == "threading.py" and name in ("_shutdown",
                                                                        "_python_exit"):
            bad.append(key)
        elif name in ("_python_exit", "_run_exitfuncs"):
            bad.append(key)
    return bad


def all_stats(data):
    yield "merged", data.stats
    for t in data.threads or ():
        yield "thread %s" % t["name"], t["stats"]


def assert_no_profiler_frames(data):
    for where, stats in all_stats(data):
        assert not profiler_frames(stats), "%s: %s" % (where, profiler_frames(stats))


def assert_callers_complete(stats, callee, caller):
    """Every call of *callee* is charged to *caller*, and the callees of
    *caller* took no longer than *caller* itself."""
    ckey, (cc, nc, tt, ct, callers) = by_name(stats, callee)
    pkey, prow = by_name(stats, caller)
    assert set(callers) == {pkey}, callers
    assert callers[pkey][0] == nc, (callers[pkey], nc)
    callees_ct = sum(v[4][pkey][3] for k, v in stats.items() if pkey in v[4])
    assert callees_ct <= prow[3] * 1.001 + 1e-6, (callees_ct, prow)
    assert prow[2] <= prow[3] * 1.001 + 1e-6, prow


# -- item 1: open executors ------------------------------------------------------

THREAD_POOL = """\
from concurrent.futures import ThreadPoolExecutor

def task(n):
    return sum(range(n))

ex = ThreadPoolExecutor(2)           # never shut down: python does it at exit
print(ex.submit(task, 10).result())
"""

PROCESS_POOL = """\
from concurrent.futures import ProcessPoolExecutor

def parent_side():
    ex = ProcessPoolExecutor(2)      # never shut down: python does it at exit
    # a builtin: the script's own functions cannot be pickled by name under
    # python -m cProfile / fastprof (the script is not sys.modules["__main__"])
    print(ex.submit(sum, range(10)).result())

if __name__ == "__main__":
    parent_side()
"""


@pytest.mark.parametrize("output", ["-o", "print"])
def test_open_thread_pool_executor_exits(tmp_path, output):
    script = write(tmp_path / "pool.py", THREAD_POOL)
    args = ["-o", str(tmp_path / "pool.prof")] if output == "-o" else []
    rc, out, err = fastprof(args + [script], tmp_path)
    assert rc == 0, err
    assert out.startswith("45\n"), out
    if output == "print":
        assert "function calls" in out and "(task)" in out and "(_worker)" in out
        return
    data = load_profile(str(tmp_path / "pool.prof"))
    assert by_name(data.stats, "task")[1][1] == 1
    workers = [t for t in data.threads if "_worker" in {k[2] for k in t["stats"]}]
    assert workers, [t["name"] for t in data.threads]
    # the woken workers' loops ran to their end, inside the profile
    for t in workers:
        assert by_name(t["stats"], "_worker")[1][1] == 1
    assert_no_profiler_frames(data)


def test_open_process_pool_executor_exits(tmp_path):
    script = write(tmp_path / "ppool.py", PROCESS_POOL)
    rc, out, err = fastprof(["-o", str(tmp_path / "ppool.prof"), script], tmp_path)
    assert rc == 0, err
    assert out == "45\n", out
    data = load_profile(str(tmp_path / "ppool.prof"))
    assert by_name(data.stats, "parent_side")[1][1] == 1
    assert_no_profiler_frames(data)


def test_no_threads_still_exits_with_an_open_executor(tmp_path):
    script = write(tmp_path / "pool.py", THREAD_POOL)
    rc, out, err = fastprof(["--no-threads", "-o", str(tmp_path / "p.prof"), script], tmp_path)
    assert rc == 0, err
    assert by_name(load_profile(str(tmp_path / "p.prof")).stats, "<module>", "pool.py")[1][1] == 1


# -- item 2: threads that outlive the main script --------------------------------

SPIN = """\
import sys, threading, time

def spin(seconds):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        pass
    print("spun %.6f" % (time.perf_counter() - t0), flush=True)

threading.Thread(target=spin, args=(float(sys.argv[1]),), name="spinner").start()
print("main done", flush=True)
"""


def test_thread_that_outlives_main_is_timed_right(tmp_path):
    script = write(tmp_path / "spin.py", SPIN)
    # raw times: the spin's own clock reads include the profiler's cost
    rc, out, err = fastprof(["--no-compensate", "-o", str(tmp_path / "spin.prof"), script, "0.6"],
                            tmp_path)
    assert rc == 0, err
    assert out.startswith("main done\n"), out  # the thread ran on after main ended
    spun = float(out.split("spun ")[1])
    data = load_profile(str(tmp_path / "spin.prof"))
    threads = {t["name"]: t["stats"] for t in data.threads}
    spinner = threads["spinner"]
    _key, (cc, nc, tt, ct, _callers) = by_name(spinner, "spin")
    assert nc == 1
    assert ct >= 0.8 * spun, (ct, spun)
    assert_callers_complete(spinner, "<built-in method time.perf_counter>", "spin")
    assert_callers_complete(data.stats, "<built-in method time.perf_counter>", "spin")
    # the main thread: the script, and nothing of the wait that followed
    main = threads["MainThread"]
    assert "spin" not in {k[2] for k in main}
    assert not {k for k in main if k[2] in ("join", "_wait_for_tstate_lock", "_shutdown")}, main
    assert_no_profiler_frames(data)


def test_thread_that_outlives_main_printed_table(tmp_path):
    script = write(tmp_path / "spin.py", SPIN)
    rc, out, err = fastprof(["-s", "tottime", script, "0.3"], tmp_path)
    assert rc == 0, err
    # the table comes after everything the program printed, its threads' too
    head, table = out.split("function calls", 1)
    assert "main done" in head and "spun" in head
    assert "(spin)" in table and "run_cli" not in table and "(_shutdown)" not in table


def test_write_error_after_the_threads_ended_is_reported(tmp_path):
    # the output directory goes away while python waits for a thread
    script = write(tmp_path / "rm.py", """\
        import os, sys, threading, time
        def late():
            time.sleep(0.2)
            os.rmdir(sys.argv[1])
        threading.Thread(target=late).start()
        """)
    out_dir = tmp_path / "gone"
    out_dir.mkdir()
    rc, out, err = fastprof(["-o", str(out_dir / "x.prof"), script, str(out_dir)], tmp_path)
    # reported on one line; the exit status was settled when python began to wait
    assert err.strip().splitlines() == [
        "python -m fastprof: error: cannot write %s: No such file or directory"
        % (out_dir / "x.prof")], err
    assert rc == 0


def _ctrl_c_during_the_wait(args, cwd, wait=0.5):
    proc = start(args, cwd)
    line = proc.stdout.readline()
    assert line == "main done\n", (line, proc.stderr.read() if proc.poll() is not None else "")
    time.sleep(wait)
    proc.send_signal(signal.SIGINT)
    return finish(proc)


def test_ctrl_c_while_python_waits_for_threads_keeps_the_profile(tmp_path):
    script = write(tmp_path / "spin.py", SPIN)
    waited = 0.5
    # python itself: "Exception ignored in: <module 'threading'...>", then exits
    plain_rc, _out, plain_err = _ctrl_c_during_the_wait([script, "120"], tmp_path, waited)
    prof = str(tmp_path / "spin.prof")
    # raw times: compared with the wall time the spin ran, profiler's cost included
    rc, out, err = _ctrl_c_during_the_wait(["-m", "fastprof", "--no-compensate", "-o", prof,
                                            script, "120"], tmp_path, waited)
    assert rc == plain_rc, (rc, plain_rc, err)
    assert err.splitlines()[-1:] == plain_err.splitlines()[-1:], (err, plain_err)
    data = load_profile(prof)
    spinner = {t["name"]: t["stats"] for t in data.threads}["spinner"]
    _key, (cc, nc, tt, ct, _callers) = by_name(spinner, "spin")
    assert nc == 1
    assert ct >= 0.8 * waited, ct  # it ran from before "main done" until the profile ended
    assert_callers_complete(spinner, "<built-in method time.perf_counter>", "spin")
    assert_no_profiler_frames(data)


def test_thread_started_by_a_thread_after_main_ended(tmp_path):
    # python 3.12 refuses to start threads once it waits for the others
    # ("can't create new thread at interpreter shutdown"), 3.9-3.11 and 3.13+
    # allow it: under fastprof the program sees what it sees under python
    script = write(tmp_path / "late.py", """\
        import threading, time
        def child():
            print("child ran", flush=True)
        def worker():
            time.sleep(0.2)
            try:
                t = threading.Thread(target=child)
                t.start()
                t.join()
            except RuntimeError as exc:
                print("RuntimeError:", exc, flush=True)
        threading.Thread(target=worker).start()
        """)
    plain = finish(start([script], tmp_path))
    rc, out, err = fastprof(["-o", str(tmp_path / "late.prof"), script], tmp_path)
    assert (rc, out) == plain[:2], (err, plain)
    names = {k[2] for k in load_profile(str(tmp_path / "late.prof")).stats}
    assert "worker" in names
    assert ("child" in names) == ("child ran" in out)


# -- item 10: a forked child never writes the parent's profile ---------------------

# The child outlives its parent: it waits until it has been re-parented
# (the parent has exited, its profile written or printed), then ends.
FORK = """\
import atexit, os, sys, time

how = sys.argv[1]

def parent_only():
    return sum(range(100))

def child_only():
    return sum(range(10))

ppid = os.getpid()
pid = os.fork()
if pid == 0:
    child_only()
    atexit.register(lambda: os.close(os.open(os.environ["CHILD_ATEXIT"],
                                             os.O_CREAT | os.O_WRONLY)))
    if how != "wait":
        deadline = time.monotonic() + 30
        while os.getppid() == ppid and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
    if how == "os_exit":
        os._exit(0)
    if how in ("sys_exit", "wait"):
        sys.exit(7)
else:
    parent_only()
    if how == "wait":
        _, status = os.waitpid(pid, 0)
        print("child exit status", os.waitstatus_to_exitcode(status)
              if hasattr(os, "waitstatus_to_exitcode") else status >> 8, flush=True)
"""

MP_FORK = """\
import multiprocessing, os, sys, time

def child_only(path):
    # ends after the parent has written its profile (multiprocessing
    # children end with os._exit)
    deadline = time.monotonic() + 30
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)

def parent_only():
    return sum(range(100))

if __name__ == "__main__":
    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=child_only, args=(sys.argv[1],))
    p.start()
    parent_only()
    if sys.argv[2:] == ["touch"]:  # the parent's table is printed right after
        open(sys.argv[1], "w").close()
"""


def _fork_env(tmp_path):
    return {"CHILD_ATEXIT": str(tmp_path / "child-atexit")}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("how", ["end", "sys_exit", "os_exit"])
def test_forked_child_that_ends_last_does_not_overwrite_the_profile(tmp_path, how):
    script = write(tmp_path / "forker.py", FORK)
    prof = tmp_path / "fork.prof"
    proc = subprocess.Popen([sys.executable, "-m", "fastprof", "-o", str(prof), script, how],
                            cwd=str(tmp_path),
                            env=helpers.subprocess_env(**_fork_env(tmp_path)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    rc, out, err = finish(proc)  # returns once the child, which holds the pipes, ended
    assert rc == 0, err
    assert err == "", err
    names = {k[2] for k in load_profile(str(prof)).stats}
    assert "parent_only" in names and "child_only" not in names
    # the child went out as it would under python: atexit callbacks unless os._exit
    assert (tmp_path / "child-atexit").exists() == (how != "os_exit")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("how", ["end", "os_exit"])
def test_forked_child_prints_no_table(tmp_path, how):
    script = write(tmp_path / "forker.py", FORK)
    proc = subprocess.Popen([sys.executable, "-m", "fastprof", script, how],
                            cwd=str(tmp_path),
                            env=helpers.subprocess_env(**_fork_env(tmp_path)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    rc, out, err = finish(proc)
    assert rc == 0, err
    assert out.count("function calls") == 1, out
    assert "(parent_only)" in out and "(child_only)" not in out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_exit_status_and_atexit_unchanged(tmp_path):
    script = write(tmp_path / "forker.py", FORK)
    env = helpers.subprocess_env(**_fork_env(tmp_path))
    plain = subprocess.run([sys.executable, script, "wait"], cwd=str(tmp_path), env=env,
                           capture_output=True, text=True, timeout=TIMEOUT)
    assert "child exit status 7" in plain.stdout, plain
    os.unlink(str(tmp_path / "child-atexit"))
    proc = subprocess.Popen([sys.executable, "-m", "fastprof", script, "wait"],
                            cwd=str(tmp_path), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    rc, out, err = finish(proc)
    assert rc == 0, err
    assert out.startswith("child exit status 7\n"), out
    assert out.count("function calls") == 1, out
    assert (tmp_path / "child-atexit").exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_multiprocessing_fork_child_writes_nothing(tmp_path):
    script = write(tmp_path / "mpfork.py", MP_FORK)
    prof = tmp_path / "mp.prof"
    proc = start(["-m", "fastprof", "-o", str(prof), script, str(prof)], tmp_path)
    rc, out, err = finish(proc)
    assert rc == 0, err
    names = {k[2] for k in load_profile(str(prof)).stats}
    assert "parent_only" in names and "child_only" not in names
    proc = start(["-m", "fastprof", script, str(tmp_path / "marker"), "touch"], tmp_path)
    rc, out, err = finish(proc)
    assert rc == 0, err
    assert out.count("function calls") == 1, out
