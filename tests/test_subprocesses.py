"""``python -m fastprof --subprocesses``: the program's Python children are
profiled and merged into its profile (issue 14, item 3).

The program starts one child of each kind -- multiprocessing with fork,
spawn and forkserver, a ProcessPoolExecutor worker, a raw ``os.fork``
child and ``subprocess.run([sys.executable, child.py])`` -- each calling
its own function a known number of times.  The merged profile must have
each of them with exactly that count, the parent's functions with exactly
theirs (a fork child's inherited stats are not counted again), and one
profile per process beside the output.
"""
import os
import subprocess
import sys
import textwrap

import pytest

from fastprof.data.profile_file import load_profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork and forkserver need POSIX"),
    pytest.mark.skipif(helpers.USING_CPROFILE, reason="--subprocesses is fastprof-only"),
]

PROGRAM = textwrap.dedent("""\
    import json, multiprocessing, os, subprocess, sys
    from concurrent.futures import ProcessPoolExecutor

    def parent_fn(): pass
    def f_fork(): pass
    def f_spawn(): pass
    def f_forkserver(): pass
    def f_osfork(): pass
    def f_pool(x): return x

    def work(fn, n):
        for _ in range(n):
            fn()

    if __name__ == "__main__":
        for _ in range(7):
            parent_fn()
        for method, fn, n in (("fork", f_fork, 3), ("spawn", f_spawn, 4),
                              ("forkserver", f_forkserver, 5)):
            p = multiprocessing.get_context(method).Process(target=work, args=(fn, n))
            p.start()
            p.join()
            assert p.exitcode == 0, (method, p.exitcode)
        with ProcessPoolExecutor(max_workers=1) as ex:
            assert list(ex.map(f_pool, range(6))) == list(range(6))
        pid = os.fork()
        if pid == 0:
            work(f_osfork, 2)
            sys.exit(0)
        assert os.waitpid(pid, 0)[1] == 0
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([sys.executable, os.path.join(here, "child.py")], check=True)
        parent_fn()
        with open("tmpdir.txt", "w") as f:  # the private directory, for the test
            f.write(json.loads(os.environ.get("FASTPROF_SUBPROCESSES", "{}")).get("dir", ""))
""")

CHILD = textwrap.dedent("""\
    def f_subprocess(): pass
    for _ in range(9):
        f_subprocess()
""")

# function -> calls expected in the merged profile
CHILD_CALLS = {"f_fork": 3, "f_spawn": 4, "f_forkserver": 5, "f_pool": 6, "f_osfork": 2,
               "f_subprocess": 9}
PARENT_CALLS = {"parent_fn": 8}

KILLED = textwrap.dedent("""\
    import multiprocessing, os, signal, sys

    def parent_fn(): pass
    def f_ok(): pass
    def f_killed(): pass

    def killed(method):
        for _ in range(5):
            f_killed()
        os.kill(os.getpid(), signal.SIGKILL)

    def ok():
        for _ in range(3):
            f_ok()

    if __name__ == "__main__":
        parent_fn()
        for method in ("fork", "spawn", "forkserver"):
            ctx = multiprocessing.get_context(method)
            p = ctx.Process(target=killed, args=(method,))
            p.start()
            p.join()
            assert p.exitcode == -signal.SIGKILL, p.exitcode
            p = ctx.Process(target=ok)
            p.start()
            p.join()
        parent_fn()
        print("parent done")
        sys.exit(3)
""")


def write_program(tmp_path, text=PROGRAM):
    (tmp_path / "prog.py").write_text(text)
    (tmp_path / "child.py").write_text(CHILD)
    return str(tmp_path / "prog.py")


def run(args, cwd):
    return subprocess.run([sys.executable] + list(args), cwd=str(cwd), env=helpers.cli_env(),
                          timeout=300, capture_output=True, text=True)


def calls_by_name(stats, names):
    out = {}
    for (_file, _line, name), (_cc, nc, _tt, _ct, _callers) in stats.items():
        if name in names:
            assert name not in out, "two rows for %s" % name
            out[name] = nc
    return out


def test_children_merged_with_exact_counts(tmp_path):
    prog = write_program(tmp_path)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "merged 6 child processes" in r.stderr
    wanted = dict(CHILD_CALLS, **PARENT_CALLS)
    data = load_profile(str(out))
    assert calls_by_name(data.stats, wanted) == wanted
    # each mp child ran work() once, the os.fork child once: not the parent's frames again
    assert calls_by_name(data.stats, {"work"}) == {"work": 4}
    # pstats reads the merged file
    import pstats
    assert calls_by_name(pstats.Stats(str(out)).stats, wanted) == wanted

    # one profile per process: the parent's and each child's, each with its own function
    files = sorted((out.parent / (out.name + ".processes")).iterdir())
    assert len(files) == 7
    seen = {}
    for f in files:
        got = calls_by_name(load_profile(str(f)).stats, wanted)
        assert len(got) == 1 or set(got) == set(PARENT_CALLS), got
        seen.update(got)
        assert set(got) <= set(wanted)
    assert seen == wanted
    # the private directory is gone
    private = (tmp_path / "tmpdir.txt").read_text()
    assert "fastprof-children-" in private and not os.path.exists(private)


def test_view_one_process(tmp_path):
    prog = write_program(tmp_path)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog], tmp_path)
    assert r.returncode == 0, r.stderr
    pids = {}
    for f in (out.parent / (out.name + ".processes")).iterdir():
        for name in calls_by_name(load_profile(str(f)).stats, dict(CHILD_CALLS, **PARENT_CALLS)):
            pids[name] = int(f.name.split(".")[0])
    v = run(["-m", "fastprof.cli", "view", str(out), "--process", str(pids["f_spawn"]), "-n", "0"],
            tmp_path)
    assert v.returncode == 0, v.stderr
    assert "f_spawn" in v.stdout and "process %d" % pids["f_spawn"] in v.stdout
    for other in set(CHILD_CALLS) - {"f_spawn"} | {"parent_fn"}:
        assert other not in v.stdout
    missing = max(pids.values()) + 1000000
    v = run(["-m", "fastprof.cli", "view", str(out), "--process", str(missing)], tmp_path)
    assert v.returncode == 2
    assert "no process %d" % missing in v.stderr
    assert all(str(p) in v.stderr for p in pids.values())
    assert len(v.stderr.strip().splitlines()) == 1


def test_killed_child_loses_only_its_own(tmp_path):
    prog = write_program(tmp_path, KILLED)
    plain = run([prog], tmp_path)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog], tmp_path)
    assert (r.returncode, r.stdout) == (plain.returncode, plain.stdout) == (3, "parent done\n")
    assert "merged 3 child processes, 3 lost" in r.stderr
    # the parent names each child that left nothing
    lost = [line for line in r.stderr.splitlines() if "left no profile" in line]
    assert len(lost) == 3, r.stderr
    assert sum("(forked from process " in line for line in lost) == 2, lost  # fork, forkserver
    assert sum("(a multiprocessing spawn child" in line for line in lost) == 1, lost
    got = calls_by_name(load_profile(str(out)).stats, {"parent_fn", "f_ok", "f_killed"})
    assert got == {"parent_fn": 2, "f_ok": 9}


POOL = textwrap.dedent("""\
    import multiprocessing, sys

    def f_task(x): return x

    if __name__ == "__main__":
        with multiprocessing.get_context(sys.argv[1]).Pool(2) as pool:
            assert pool.map(f_task, range(10), chunksize=1) == list(range(10))
            if sys.argv[2] == "join":
                pool.close()
                pool.join()
        # leaving the with block terminates the workers still there (SIGTERM)
""")


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_pool_workers_closed_and_joined_are_merged(tmp_path, method):
    prog = write_program(tmp_path, POOL)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog, method, "join"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "merged " in r.stderr
    assert calls_by_name(load_profile(str(out)).stats, {"f_task"}) == {"f_task": 10}


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_pool_workers_terminated_keep_their_profiles(tmp_path, method):
    # Pool.terminate() (leaving the with block) sends the workers SIGTERM:
    # each writes its profile, then dies of the signal
    prog = write_program(tmp_path, POOL)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog, method, "terminate"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "lost" not in r.stderr, r.stderr
    stats = load_profile(str(out)).stats
    # the parent's own calls are there
    assert [k for k in stats if k[2] == "map" and k[0].endswith("pool.py")], sorted(stats)[:20]
    assert calls_by_name(stats, {"f_task"}) == {"f_task": 10}


# the program of the report: a spawn Pool left by its with block (terminate()),
# then a Python subprocess
POOL_THEN_SUBPROCESS = textwrap.dedent("""\
    import multiprocessing, subprocess, sys

    def square_sum(n):
        return sum(i * i for i in range(n))

    if __name__ == "__main__":
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            print(sum(pool.map(square_sum, range(40))))
        subprocess.run([sys.executable, "-c", "print('child')"], check=True)
""")


def test_pool_left_by_its_with_block_every_run(tmp_path):
    # each run: all 40 calls, and no child lost (on a busy machine one
    # worker may do all the tasks while the other is still starting: killed
    # then, before its profiler starts, it had nothing to lose)
    prog = write_program(tmp_path, POOL_THEN_SUBPROCESS)
    out = tmp_path / "mp.prof"
    for attempt in range(5):
        r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog], tmp_path)
        assert r.returncode == 0, (attempt, r.stderr)
        assert r.stdout == "%d\nchild\n" % sum(i * i for n in range(40) for i in range(n))
        assert "lost" not in r.stderr and (
            "merged 3 child processes (" in r.stderr or "merged 2 child processes (" in r.stderr), \
            (attempt, r.stderr)
        assert calls_by_name(load_profile(str(out)).stats, {"square_sum"}) == {"square_sum": 40}, \
            (attempt, r.stderr)


TERMINATED = textwrap.dedent("""\
    import multiprocessing, os, signal, sys, threading, time

    def f_before_term(): pass

    def victim(ready, with_thread):
        if with_thread:  # SIGTERM may then reach the process through that thread
            threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        for _ in range(7):
            f_before_term()
        ready.set()
        time.sleep(60)  # until terminated

    if __name__ == "__main__":
        ctx = multiprocessing.get_context(sys.argv[1])
        ready = ctx.Event()
        p = ctx.Process(target=victim, args=(ready, sys.argv[2] == "thread"))
        p.start()
        assert ready.wait(60)
        p.terminate()
        p.join()
        print("exitcode", p.exitcode)
""")


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("thread", ["main", "thread"])
def test_terminated_child_writes_then_dies_of_sigterm(tmp_path, method, thread):
    prog = write_program(tmp_path, TERMINATED)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog, method, thread], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "exitcode -15\n"  # as without fastprof: died of SIGTERM
    assert "merged 1 child process (" in r.stderr and "lost" not in r.stderr, r.stderr
    assert calls_by_name(load_profile(str(out)).stats, {"f_before_term"}) == {"f_before_term": 7}


STUCK = textwrap.dedent("""\
    import collections, functools, itertools, multiprocessing, os, subprocess, sys

    def f_before(): pass

    def stuck():
        for _ in range(4):
            f_before()
        lock = multiprocessing.get_context("spawn").Lock()
        lock.acquire()
        # SIGTERM from outside while a C call computes, then a wait that
        # never ends, entered from C: the signal's Python handler gets no
        # moment to run before the wait begins (a Pool worker meets this
        # when terminate() comes just as it takes its queue's lock, which
        # the terminating parent holds)
        subprocess.Popen(["sh", "-c", "sleep 0.1; kill -TERM %d" % os.getpid()])
        n = 60_000_000
        collections.deque(itertools.chain(
            iter(functools.partial(sum, range(n)), n * (n - 1) // 2),
            iter(lock.acquire, None)), 0)

    if __name__ == "__main__":
        p = multiprocessing.get_context(sys.argv[1]).Process(target=stuck)
        p.start()
        p.join(150)  # (a loaded machine: the child boots, sums, takes the signal, writes)
        if p.exitcode is None:
            p.kill()
            p.join()
        print("exitcode", p.exitcode)
""")


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_sigterm_just_before_an_endless_wait_still_ends_the_child(tmp_path, method):
    # without fastprof the signal's default action kills at once; under it
    # the watcher wakes the main thread so that the handler runs
    prog = write_program(tmp_path, STUCK)
    assert run([prog, method], tmp_path).stdout == "exitcode -15\n"
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog, method], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "exitcode -15\n", r.stderr
    assert "merged 1 child process (" in r.stderr, r.stderr
    assert calls_by_name(load_profile(str(out)).stats, {"f_before"}) == {"f_before": 4}


MID_IMPORT = textwrap.dedent("""\
    import importlib.util, os, signal, subprocess, sys, time

    def f_before(): pass
    def f_after(): pass

    if sys.argv[1:] == ["child"]:
        for _ in range(4):
            f_before()
        # SIGTERM while dataclasses is half imported (what a Pool worker
        # starting up may meet): the profile's write imports it, and
        # fails; it is written once the import is done
        spec = importlib.util.find_spec("dataclasses")
        module = importlib.util.module_from_spec(spec)
        sys.modules["dataclasses"] = module
        spec._initializing = True
        os.kill(os.getpid(), signal.SIGTERM)
        print("after the signal", flush=True)
        spec.loader.exec_module(module)
        spec._initializing = False
        for _ in range(2):
            f_after()  # the profile ended at the signal
        time.sleep(30)
        print("not ended", flush=True)
    else:
        r = subprocess.run([sys.executable, __file__, "child"])
        print("status", r.returncode)
""")


def test_sigterm_in_the_middle_of_an_import_writes_once_it_is_done(tmp_path):
    prog = write_program(tmp_path, MID_IMPORT)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "after the signal\nstatus -15\n", r.stderr
    assert "merged 1 child process (" in r.stderr and "lost" not in r.stderr, r.stderr
    got = calls_by_name(load_profile(str(out)).stats, {"f_before", "f_after"})
    assert got == {"f_before": 4}


OWN_HANDLERS = textwrap.dedent("""\
    import multiprocessing, os, signal, subprocess, sys, time

    def f_child(): pass

    def on_term(signum, frame):
        print("own handler", flush=True)
        os._exit(5)  # leaves through os._exit: the profile is written then

    def forked(ready):
        print("inherited own handler", signal.getsignal(signal.SIGTERM) is on_term, flush=True)
        for _ in range(3):
            f_child()
        ready.set()
        time.sleep(60)

    def spawned(ready):
        signal.signal(signal.SIGTERM, on_term)
        for _ in range(4):
            f_child()
        ready.set()
        time.sleep(60)

    if __name__ == "__main__":
        signal.signal(signal.SIGTERM, on_term)
        for method, target in (("fork", forked), ("spawn", spawned)):
            ctx = multiprocessing.get_context(method)
            ready = ctx.Event()
            p = ctx.Process(target=target, args=(ready,))
            p.start()
            assert ready.wait(60)
            p.terminate()
            p.join()
            print(method, "exitcode", p.exitcode, flush=True)
""")


def test_the_programs_own_sigterm_handler_is_kept(tmp_path):
    # a handler the program set (in the parent before a fork, in a spawned
    # child) is left in place; it ends the child by os._exit, whose profile
    # is written then
    prog = write_program(tmp_path, OWN_HANDLERS)
    plain = run([prog], tmp_path)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog], tmp_path)
    assert r.returncode == plain.returncode == 0, r.stderr
    assert r.stdout == plain.stdout == ("inherited own handler True\nown handler\nfork exitcode 5\n"
                                        "own handler\nspawn exitcode 5\n"), r.stdout
    assert "merged 2 child processes (" in r.stderr and "lost" not in r.stderr, r.stderr
    assert calls_by_name(load_profile(str(out)).stats, {"f_child"}) == {"f_child": 7}


KILLED_WHILE_WRITING = textwrap.dedent("""\
    import multiprocessing, os, signal, sys

    def f_doomed(): pass
    def f_ok(): pass

    def doomed():
        # SIGKILL in the middle of the profile's write: the bytes are out,
        # the file not yet in place
        from fastprof.data import profile_file
        write = profile_file._write

        def write_then_die(f, data):
            write(f, data)
            f.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        profile_file._write = write_then_die
        for _ in range(5):
            f_doomed()

    def ok():
        for _ in range(2):
            f_ok()

    if __name__ == "__main__":
        for target in (doomed, ok):
            p = multiprocessing.get_context("spawn").Process(target=target)
            p.start()
            p.join()
            print(target.__name__, p.exitcode, p.pid, flush=True)
""")


def test_child_killed_while_writing_leaves_no_file_and_is_named(tmp_path):
    prog = write_program(tmp_path, KILLED_WHILE_WRITING)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog], tmp_path)
    assert r.returncode == 0, r.stderr
    codes = {line.split()[0]: (int(line.split()[1]), int(line.split()[2]))
             for line in r.stdout.splitlines()}
    assert codes["doomed"][0] == -9 and codes["ok"][0] == 0, r.stdout
    doomed_pid = codes["doomed"][1]
    assert "merged 1 child process, 1 lost (" in r.stderr, r.stderr
    lost = [line for line in r.stderr.splitlines() if "left no profile" in line]
    assert len(lost) == 1 and "child process %d (a multiprocessing spawn child" % doomed_pid in lost[0], \
        r.stderr
    got = calls_by_name(load_profile(str(out)).stats, {"f_doomed", "f_ok"})
    assert got == {"f_ok": 2}
    kept = sorted(p.name for p in (tmp_path / "out.prof.processes").iterdir())
    assert "%d.prof" % doomed_pid not in kept and len(kept) == 2, kept  # the parent's, ok's


SIGTERM_DURING_WRITE = textwrap.dedent("""\
    import multiprocessing, os, signal, sys, threading, time

    def f_child(): pass

    def child(with_thread):
        if with_thread:  # the signal goes to that thread while the main one writes
            threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        from fastprof.data import profile_file
        write = profile_file._write

        def write_with_sigterm(f, data):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            write(f, data)
        profile_file._write = write_with_sigterm
        for _ in range(6):
            f_child()

    if __name__ == "__main__":
        p = multiprocessing.get_context("spawn").Process(target=child, args=(sys.argv[1] == "thread",))
        p.start()
        p.join()
        print("exitcode", p.exitcode)
""")


@pytest.mark.parametrize("thread", ["main", "thread"])
def test_sigterm_during_the_write_waits_for_its_end(tmp_path, thread):
    prog = write_program(tmp_path, SIGTERM_DURING_WRITE)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog, thread], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "exitcode -15\n"  # the profile written, then the death
    assert "merged 1 child process (" in r.stderr, r.stderr
    assert calls_by_name(load_profile(str(out)).stats, {"f_child"}) == {"f_child": 6}


def test_without_the_option_children_are_not_counted(tmp_path):
    prog = write_program(tmp_path)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "-o", str(out), prog], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "merged" not in r.stderr
    got = calls_by_name(load_profile(str(out)).stats, dict(CHILD_CALLS, **PARENT_CALLS))
    assert got == PARENT_CALLS
    assert not (out.parent / (out.name + ".processes")).exists()


def test_printed_table_includes_children(tmp_path):
    prog = write_program(tmp_path)
    r = run(["-m", "fastprof", "--subprocesses", prog], tmp_path)
    assert r.returncode == 0, r.stderr
    for name, n in dict(CHILD_CALLS, **PARENT_CALLS).items():
        rows = [line for line in r.stdout.splitlines() if line.endswith("(%s)" % name)]
        assert len(rows) == 1 and rows[0].split()[0] == str(n), (name, rows)


def test_usage_error_with_signal(tmp_path):
    prog = write_program(tmp_path)
    r = run(["-m", "fastprof", "--subprocesses", "--signal", "USR1", "-o",
             str(tmp_path / "o.prof"), prog], tmp_path)
    assert r.returncode == 2
    assert "--subprocesses and --signal" in r.stderr


SCOPED_PROGRAM = textwrap.dedent("""\
    import multiprocessing, sys

    def square_sum(n):
        total = 0
        for i in range(n):
            total += i * i
        return total

    def outside():
        return sorted([3, 1, 2])

    def task(n):
        outside()
        return square_sum(n)

    if __name__ == "__main__":
        method = sys.argv[1]
        with multiprocessing.get_context(method).Pool(2) as pool:
            print(sum(pool.map(task, [10, 20, 30])))
            pool.close()
            pool.join()
""")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_lines_and_only_reach_the_children(tmp_path, method):
    # the children profile with the parent's --lines/--only (the script's
    # stem names its functions in a spawned child, whose module is
    # __mp_main__); a pattern only children matched is not reported
    prog = write_program(tmp_path, SCOPED_PROGRAM)
    out = tmp_path / "scoped.prof"
    r = run(["-m", "fastprof", "--subprocesses", "--lines", "prog:square_sum", "--only", "prog:task",
             "--only", "prog:square_sum", "-o", str(out), prog, method], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "no function that ran matches" not in r.stderr, r.stderr
    data = load_profile(str(out))
    assert data.only == ["prog:task", "prog:square_sum"]
    names = {k[2] for k in data.stats if k[0] != "~" and k[2] != "<gc>"}
    assert names == {"task", "square_sum"}, names  # outside() and multiprocessing are out of scope
    assert calls_by_name(data.stats, {"task", "square_sum"}) == {"task": 3, "square_sum": 3}
    (key,) = data.lines
    first = key[1]
    hits = {n: h for n, (h, _t) in data.lines[key].items()}
    # the loop body ran 10 + 20 + 30 times over the children
    assert hits == {first + 1: 3, first + 2: 63, first + 3: 60, first + 4: 3}


def test_a_pattern_no_process_matched_is_reported(tmp_path):
    prog = write_program(tmp_path, SCOPED_PROGRAM)
    r = run(["-m", "fastprof", "--subprocesses", "--lines", "prog:nothing", "-o",
             str(tmp_path / "x.prof"), prog, "spawn"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("--lines prog:nothing: no function that ran matches it") == 1, r.stderr
