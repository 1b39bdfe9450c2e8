"""pytest --fastprof-counts=DIR: the performance gate on exact call counts.

The counts are checked against cProfile on the same interpreter; each source
of run-to-run variation (docs/gate.md) has a test whose program varied
before the fix: its raw per-test profile (--fastprof-per-test) differs
between two runs, while the gate's counts do not.
"""

import cProfile
import json
import os
import pstats
import sys
import textwrap

import pytest

from helpers import USING_CPROFILE, run_python, subprocess_env

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="fastprof's pytest mode")

PLUGIN = ["-p", "fastprof.modes.pytest_plugin"]
VERSION = "py%d.%d" % sys.version_info[:2]


def run_pytest(tmp_path, *args, env=None):
    # only the plugins a test names (-p): the venv's others (anyio's, timeout's,
    # xdist's) cost a third of a second per run, and these runs are many;
    # tests/test_count_gate_real.py runs the gate with every installed plugin
    # PYTHONHASHSEED=0 unless a test sets it: the gate re-runs pytest with it
    # otherwise (a second interpreter per run); test_hash_randomisation sets it
    base = {"PYTEST_ADDOPTS": "", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONHASHSEED": "0"}
    base.update(env or {})
    env = subprocess_env(**base)
    return run_python(["-m", "pytest", "-p", "no:cacheprovider"] + PLUGIN + list(args),
                      cwd=str(tmp_path), env=env, timeout=300)


def make(tmp_path, text, name="test_work.py"):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / name).write_text(textwrap.dedent(text))


def gate(tmp_path, *args, env=None, base="counts"):
    return run_pytest(tmp_path, "--fastprof-counts", str(tmp_path / base), *args, env=env)


def tables(tmp_path, base="counts", module="test_work.py"):
    from fastprof.tools.counts import read_tables
    return read_tables(str(tmp_path / base / VERSION / (module + ".counts")))


def raw_calls(tmp_path, args, name, env=None, test="test_b"):
    """Calls of functions named *name* in *test*'s raw profile (--fastprof-per-test)."""
    d = tmp_path / "raw"
    r = run_pytest(tmp_path, "--fastprof-per-test", str(d), *args, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    [f] = [p for p in d.iterdir() if p.name.endswith(test + ".prof")]
    stats = pstats.Stats(str(f)).stats
    for p in d.iterdir():
        p.unlink()
    return sum(v[1] for k, v in stats.items() if k[2] == name)


def raw_edge(tmp_path, caller, callee, test="test_b"):
    """Calls from *caller* to *callee* (function names) in *test*'s raw profile."""
    d = tmp_path / "raw"
    r = run_pytest(tmp_path, "--fastprof-per-test", str(d))
    assert r.returncode == 0, r.stdout + r.stderr
    [f] = [p for p in d.iterdir() if p.name.endswith(test + ".prof")]
    stats = pstats.Stats(str(f)).stats
    for p in d.iterdir():
        p.unlink()
    return sum(e[0] for k, v in stats.items() if k[2] == callee
               for c, e in v[4].items() if c[2] == caller)


def assert_quiet(r):
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no call count changed" in r.stdout, r.stdout
    assert "changed their call counts" not in r.stdout


# -- what is recorded ---------------------------------------------------------------

WORK = """\
    import pytest

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def helper(x):
        return len(str(x))

    @pytest.fixture
    def data():
        helper(1)
        out = []
        for i in range(3):
            out.append(helper(i))
        yield out
        helper(2)

    def test_a(data):
        assert fib(12) == 144

    def test_b():
        for i in range(5):
            helper(i)

    @pytest.mark.parametrize("n", [1, 2])
    def test_c(n):
        helper(n)
"""


def cprofile_calls(func, *args):
    prof = cProfile.Profile()
    prof.runcall(func, *args)
    return {(k[2], c[2] if c else None): (v[1] if c is None else v[4][c][0])
            for k, v in pstats.Stats(prof).stats.items() for c in [None] + list(v[4])}


def _fib(n):
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def test_records_functions_and_edges_as_cprofile_counts(tmp_path):
    make(tmp_path, WORK)
    r = gate(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 tests had no baseline for Python %d.%d: recorded" % sys.version_info[:2] in r.stdout
    t = tables(tmp_path)
    assert sorted(t) == ["test_a", "test_b", "test_c[1]", "test_c[2]"]
    oracle = cprofile_calls(_fib, 12)
    a = t["test_a"]
    assert a["test_work.py:fib"] == oracle[("_fib", None)]
    assert a["test_work.py:fib -> test_work.py:fib"] == oracle[("_fib", "_fib")]
    assert a["test_work.py:test_a -> test_work.py:fib"] == 1
    # the fixture's setup and teardown: 1 + 3 + 1 calls of helper, 5 of str
    assert a["test_work.py:data -> test_work.py:helper"] == 5
    assert a["test_work.py:helper -> ~:<built-in method builtins.len>"] == 5
    assert t["test_b"] == {
        "test_work.py:test_b": 1, "test_work.py:helper": 5,
        "test_work.py:test_b -> test_work.py:helper": 5,
        "test_work.py:helper -> ~:<built-in method builtins.len>": 5,
        "~:<built-in method builtins.len>": 5}
    # pytest's own code is not counted, no absolute path, no address
    text = (tmp_path / "counts" / VERSION / "test_work.py.counts").read_text()
    assert "_pytest" not in text and "pluggy" not in text and str(tmp_path) not in text
    assert " at 0x" not in text
    for section in text.split("\n[")[1:]:
        entries = [line.split(" ", 1)[1] for line in section.splitlines()[1:] if line]
        assert entries == sorted(entries) and len(entries) == len(set(entries))


def test_unchanged_code_passes_and_a_change_fails_naming_functions_and_edges(tmp_path):
    make(tmp_path, WORK)
    assert gate(tmp_path).returncode == 0
    for _ in range(2):
        assert_quiet(gate(tmp_path))
    before = (tmp_path / "counts" / VERSION / "test_work.py.counts").read_text()
    make(tmp_path, WORK.replace("        for i in range(5):\n            helper(i)",
                                "        for i in range(5):\n            helper(i)\n            helper(i)"))
    r = gate(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout.split("fastprof call counts", 1)[1]
    assert "1 test changed their call counts (of 4 compared)" in out
    assert "test_work.py::test_b: 4 counts changed" in out
    block = out.split("test_work.py::test_b: 4 counts changed\n", 1)[1].splitlines()[:4]
    assert block[0].split() == ["5", "->", "10", "(+5)", "test_work.py:helper"]
    assert any(line.endswith("test_work.py:test_b -> test_work.py:helper") for line in block)
    assert "test_a" not in out and "test_c" not in out   # only the test that changed
    # a failing comparison leaves the baseline; --fastprof-counts-update rewrites it
    assert (tmp_path / "counts" / VERSION / "test_work.py.counts").read_text() == before
    r = gate(tmp_path, "--fastprof-counts-update")
    assert r.returncode == 0 and "4 baselines rewritten" in r.stdout, r.stdout
    assert_quiet(gate(tmp_path))
    assert tables(tmp_path)["test_b"]["test_work.py:helper"] == 10


def test_tolerance(tmp_path):
    make(tmp_path, "def h():\n    pass\n\ndef test_a():\n    for i in range(20):\n        h()\n")
    assert gate(tmp_path).returncode == 0
    make(tmp_path, "def h():\n    pass\n\ndef test_a():\n    for i in range(21):\n        h()\n")
    assert gate(tmp_path).returncode == 1
    assert gate(tmp_path, "--fastprof-counts-tolerance=5").returncode == 0
    assert gate(tmp_path, "--fastprof-counts-tolerance=4").returncode == 1
    r = gate(tmp_path, "--fastprof-counts-tolerance=lots")
    assert r.returncode == 4 and "not a percentage" in r.stderr


def test_k_x_keep_the_tests_not_run_and_failures_are_not_recorded(tmp_path):
    make(tmp_path, WORK)
    assert gate(tmp_path).returncode == 0
    path = tmp_path / "counts" / VERSION / "test_work.py.counts"
    path.write_text(path.read_text().replace("[test_a]", "[test_gone]"))
    before = tables(tmp_path)
    r = gate(tmp_path, "-k", "test_b")
    assert_quiet(r)
    assert "1 test compared" in r.stdout
    assert tables(tmp_path) == before             # untouched
    r = gate(tmp_path, "-x")
    assert r.returncode == 0 and "1 test had no baseline" in r.stdout   # test_a, renamed above
    assert tables(tmp_path)["test_gone"] == before["test_gone"]
    make(tmp_path, WORK + "\n    def test_fails():\n        helper(1)\n        assert 0\n")
    r = gate(tmp_path)
    assert r.returncode == 1 and "1 test failed or skipped: not compared nor recorded" in r.stdout
    assert "test_fails" not in tables(tmp_path)


def test_a_marked_test_is_left_alone(tmp_path):
    make(tmp_path, WORK.replace("    def test_b():", "    @pytest.mark.fastprof_counts_skip\n    def test_b():"))
    r = gate(tmp_path, "-W", "error::pytest.PytestUnknownMarkWarning")
    assert r.returncode == 0 and "1 test marked fastprof_counts_skip: not counted" in r.stdout, r.stdout
    assert sorted(tables(tmp_path)) == ["test_a", "test_c[1]", "test_c[2]"]
    r = run_pytest(tmp_path, "--strict-markers")     # known without the gate too
    assert r.returncode == 0, r.stdout


def test_another_python_versions_baseline_is_never_compared(tmp_path):
    make(tmp_path, WORK)
    other = tmp_path / "counts" / "py3.1" / "test_work.py.counts"
    other.parent.mkdir(parents=True)
    other.write_text("[test_b]\n99 test_work.py:helper\n")
    r = gate(tmp_path)
    assert r.returncode == 0 and "4 tests had no baseline for Python" in r.stdout, r.stdout
    assert other.read_text() == "[test_b]\n99 test_work.py:helper\n"


def test_reports_markdown_and_json(tmp_path):
    make(tmp_path, WORK)
    assert gate(tmp_path).returncode == 0
    make(tmp_path, WORK.replace("assert fib(12) == 144", "assert fib(13) == 233"))
    r = gate(tmp_path, "--fastprof-counts-report", str(tmp_path / "summary.md"))
    assert r.returncode == 1
    md = (tmp_path / "summary.md").read_text()
    assert "**1 test changed their call counts** (4 compared)" in md
    assert "### `test_work.py::test_a`" in md
    assert "| 465 | 753 | +288 | `test_work.py:fib` |" in md
    r = gate(tmp_path, "--fastprof-counts-report", str(tmp_path / "r.json"))
    obj = json.loads((tmp_path / "r.json").read_text())
    assert obj["failed"] and obj["changed"]["test_work.py::test_a"][0] == {
        "entry": "test_work.py:fib", "old": 465, "new": 753}


def test_line_hits_with_fastprof_lines(tmp_path):
    make(tmp_path, "def h(n):\n    for i in range(n):\n        pass\n\n"
                   "def test_a():\n    h(3)\n")
    assert gate(tmp_path, "--fastprof-lines", "test_work:h").returncode == 0
    t = tables(tmp_path)["test_a"]
    assert t["test_work.py:h line 2"] == 4 and t["test_work.py:h line 3"] == 3
    make(tmp_path, "def h(n):\n    for i in range(n):\n        pass\n\n"
                   "def test_a():\n    h(4)\n")
    r = gate(tmp_path, "--fastprof-lines", "test_work:h")
    assert r.returncode == 1 and "3 -> 4 (+1)          test_work.py:h line 3" in r.stdout


def test_usage_errors(tmp_path):
    make(tmp_path, WORK)
    r = run_pytest(tmp_path, "--fastprof-counts-update")
    assert r.returncode == 4 and "--fastprof-counts-update needs --fastprof-counts DIR" in r.stderr
    r = gate(tmp_path, "--fastprof=x.prof")
    assert r.returncode == 4 and "cannot be combined" in r.stderr
    (tmp_path / "counts" / VERSION).mkdir(parents=True)
    (tmp_path / "counts" / VERSION / "test_work.py.counts").write_text("[t]\nnot a count\n")
    r = gate(tmp_path)
    assert r.returncode == 1
    assert "not a count line" in r.stdout and "delete it to record it anew" in r.stdout


# -- sources of variation: each program varied before the fix ------------------------

def test_hash_randomisation(tmp_path):
    # which str a set yields first depends on the hash seed: the loop stops
    # after a different number of calls
    make(tmp_path, """\
        def check(word):
            return word.startswith("w1")

        def test_b():
            for word in {"w%d" % i for i in range(40)}:
                if check(word):
                    break
        """)
    seeds = {raw_calls(tmp_path, [], "check", env={"PYTHONHASHSEED": str(s)}) for s in range(1, 8)}
    assert len(seeds) > 1, seeds                      # before: the count follows the seed
    assert gate(tmp_path, env={"PYTHONHASHSEED": "1"}).returncode == 0
    for s in range(2, 6):
        assert_quiet(gate(tmp_path, env={"PYTHONHASHSEED": str(s)}))
    r = gate(tmp_path, env={"PYTHONHASHSEED": "random"})
    assert_quiet(r)
    assert "hash randomisation is on" not in r.stdout


CYCLES = """\
    KEEP = []

    def on_del():
        pass

    class Node:
        def __init__(self):
            self.me = self
        def __del__(self):
            on_del()

    def test_a():
        KEEP.extend([[i] for i in range(ALLOC)])  # kept: 3.13+ count live objects

    def test_b():
        for i in range(3000):
            Node()
"""


def test_garbage_collections_and_finalizers(tmp_path):
    # when a collection runs (and calls __del__) depends on the allocations
    # since the last one: here, on what test_a allocated before
    counts = set()
    for alloc in (0, 350, 700, 1000):
        make(tmp_path, CYCLES.replace("ALLOC", str(alloc)))
        counts.add(raw_calls(tmp_path, [], "on_del"))
    assert len(counts) > 1, counts                     # before: varied
    make(tmp_path, CYCLES.replace("ALLOC", "0"))
    assert gate(tmp_path).returncode == 0
    assert "test_work.py:on_del" not in tables(tmp_path)["test_b"]
    for alloc in (350, 700, 1000):
        make(tmp_path, CYCLES.replace("ALLOC", str(alloc)))
        assert_quiet(gate(tmp_path))
    assert_quiet(gate(tmp_path, "-k", "test_b"))


def test_imports_and_module_bodies(tmp_path):
    (tmp_path / "lazy_mod.py").write_text("def setup_table():\n    return [1]\n\nTABLE = setup_table()\n")
    make(tmp_path, """\
        def use():
            import lazy_mod
            return lazy_mod.TABLE

        def test_a():
            use()

        def test_b():
            use()
        """)
    # before: the module body runs in whichever test imports it first
    assert raw_calls(tmp_path, [], "setup_table") == 0
    assert raw_calls(tmp_path, ["-k", "test_b"], "setup_table") == 1
    assert gate(tmp_path).returncode == 0
    assert_quiet(gate(tmp_path, "-k", "test_b"))
    assert tables(tmp_path)["test_b"] == {"test_work.py:test_b": 1, "test_work.py:use": 1,
                                          "test_work.py:test_b -> test_work.py:use": 1}


THREADS = """\
    import queue
    import threading
    import time

    def produce(q):
        time.sleep(WORKER)
        q.put(1)

    def test_b():
        q = queue.Queue()
        t = threading.Thread(target=produce, args=(q,))
        t.start()
        time.sleep(MAIN)
        assert q.get(timeout=10) == 1
        t.join()
"""


def _threads(tmp_path, worker, main):
    make(tmp_path, THREADS.replace("WORKER", worker).replace("MAIN", main))


def test_thread_scheduling(tmp_path):
    # whether q.get() finds the item or waits for it is timing: queue's and
    # threading's insides (Condition.wait...) run or not
    _threads(tmp_path, "0", "0.2")
    early = raw_edge(tmp_path, "get", "wait")
    _threads(tmp_path, "0.2", "0")
    late = raw_edge(tmp_path, "get", "wait")
    assert early == 0 and late >= 1, (early, late)      # before: varied
    _threads(tmp_path, "0", "0.2")
    assert gate(tmp_path).returncode == 0
    t = tables(tmp_path)["test_b"]
    assert t["test_work.py:produce"] == 1
    assert t["test_work.py:produce -> queue.py:Queue.put"] == 1
    assert t["test_work.py:test_b -> queue.py:Queue.get"] == 1
    # threading's and queue's functions where the test calls them, none of their insides
    inside = {k for k in t if k.startswith(("threading.py:", "queue.py:")) and " -> " not in k}
    assert inside == {"threading.py:Thread.__init__", "threading.py:Thread.start",
                      "threading.py:Thread.join", "queue.py:Queue.__init__",
                      "queue.py:Queue.put", "queue.py:Queue.get"}, sorted(inside)
    _threads(tmp_path, "0.2", "0")
    assert_quiet(gate(tmp_path))


CACHES = """\
    import functools
    import re

    @functools.lru_cache(maxsize=None)
    def cached(n):
        return n * 2

    def test_a():
        cached(1)
        re.compile("(ab)+c")

    def test_b():
        cached(1)
        re.compile("(ab)+c")
"""


def test_lru_cache_and_re_cache_warm_up(tmp_path):
    make(tmp_path, CACHES)
    # before: test_b hits the caches test_a filled; alone it misses
    assert raw_calls(tmp_path, [], "cached") == 0
    assert raw_calls(tmp_path, ["-k", "test_b"], "cached") == 1
    assert gate(tmp_path).returncode == 0
    assert tables(tmp_path)["test_b"]["test_work.py:cached"] == 1
    assert_quiet(gate(tmp_path, "-k", "test_b"))
    assert_quiet(gate(tmp_path, "-k", "test_b", "--fastprof-counts-keep-caches"))
    r = gate(tmp_path, "--fastprof-counts-keep-caches")
    assert r.returncode == 1 and "gone: was 1" in r.stdout   # the warm cache, without the reset


SHARED = """\
    import pytest

    def connect():
        return object()

    @pytest.fixture(scope="module")
    def db():
        yield connect()
        connect()

    def test_a(db):
        pass

    def test_b(db):
        pass
"""


def test_wider_scoped_fixtures(tmp_path):
    make(tmp_path, SHARED)
    # before: the module fixture's setup runs in the first test that needs it
    assert raw_calls(tmp_path, [], "connect") == 1
    assert raw_calls(tmp_path, ["-k", "test_b"], "connect") == 2
    assert gate(tmp_path).returncode == 0
    assert_quiet(gate(tmp_path, "-k", "test_b"))
    assert tables(tmp_path)["test_b"] == {"test_work.py:test_b": 1}


def test_pytests_own_code(tmp_path):
    make(tmp_path, """\
        def test_a(tmp_path):
            pass

        def test_b(tmp_path):
            pass
        """)
    # before: pytest makes its session's temporary directory in the first
    # test that asks for tmp_path (its own code, its own caches)
    assert raw_calls(tmp_path, [], "make_numbered_dir_with_cleanup") == 0
    assert raw_calls(tmp_path, ["-k", "test_b"], "make_numbered_dir_with_cleanup") == 1
    assert gate(tmp_path).returncode == 0
    assert_quiet(gate(tmp_path, "-k", "test_b"))
    assert tables(tmp_path)["test_b"] == {"test_work.py:test_b": 1}


def test_first_call_specialisation_changes_no_count():
    # the adaptive interpreter (3.11+) specialises a function after a few
    # calls: the profiler still sees every call (nothing to normalise)
    from fastprof import Profile

    def work():
        return sum(len(str(i)) for i in range(50))

    def counted():
        p = Profile()
        p.enable()
        work()
        p.disable()
        return {k[2]: v[1] for k, v in pstats.Stats(p).stats.items() if "disable" not in k[2]}

    first = counted()
    for _ in range(2000):
        work()
    assert counted() == first
    assert first["<built-in method builtins.len>"] == 50


def test_xdist_workers_hand_their_counts_over(tmp_path):
    pytest.importorskip("xdist")
    make(tmp_path, WORK + CACHES.replace("test_a", "test_d").replace("test_b", "test_e"))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = gate(tmp_path, env={"TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stdout + r.stderr
    serial = tables(tmp_path)
    for _ in range(2):
        r = gate(tmp_path, "-p", "xdist", "-n", "2", env={"TMPDIR": str(tmp)})
        assert_quiet(r)
        assert "6 tests compared" in r.stdout
    assert not list(tmp.glob("fastprof-counts-*"))      # the hand-over directory is gone
    (tmp_path / "counts").rename(tmp_path / "serial")
    r = gate(tmp_path, "-p", "xdist", "-n", "2", env={"TMPDIR": str(tmp)})
    assert r.returncode == 0 and "6 tests had no baseline" in r.stdout
    assert tables(tmp_path) == serial
    make(tmp_path, WORK.replace("helper(n)", "helper(n)\n        helper(n)"))
    r = gate(tmp_path, "-p", "xdist", "-n", "2", env={"TMPDIR": str(tmp)})
    assert r.returncode == 1 and "2 tests changed their call counts" in r.stdout
    assert "test_work.py::test_c[1]: " in r.stdout and "test_work.py::test_c[2]: " in r.stdout


def test_the_plugin_imports_no_gate_without_its_option(tmp_path):
    make(tmp_path, """\
        import sys

        def test_nothing_imported():
            assert "fastprof.modes.pytest_plugin" in sys.modules
            heavy = [m for m in ("fastprof._fastprof", "fastprof.recording.profiler", "fastprof.tools.counts",
                                 "fastprof.modes.count_gate") if m in sys.modules]
            assert heavy == []
        """)
    r = run_pytest(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.environ.get("FASTPROF_COUNTS_REEXEC") is None
