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
    assert "merged 3 child processes" in r.stderr
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
def test_pool_workers_terminated_lose_only_their_own(tmp_path, method):
    # Pool.terminate() kills the workers (SIGTERM) as without fastprof:
    # their profiles are lost, the run and the parent's profile are not
    prog = write_program(tmp_path, POOL)
    out = tmp_path / "out.prof"
    r = run(["-m", "fastprof", "--subprocesses", "-o", str(out), prog, method, "terminate"], tmp_path)
    assert r.returncode == 0, r.stderr
    stats = load_profile(str(out)).stats
    # the parent's own calls are there
    assert [k for k in stats if k[2] == "map" and k[0].endswith("pool.py")], sorted(stats)[:20]
    assert calls_by_name(stats, {"f_task"}).get("f_task", 0) <= 10


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
