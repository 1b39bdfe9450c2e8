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
    return run_python(["-m", "pytest", "-p", "no:cacheprovider"] + PLUGIN + list(args),
                      cwd=str(tmp_path), env=gate_env(**base), timeout=300)


def gate_env(**extra):
    """The environment of a pytest run here: without this suite's own
    pytest-xdist worker's variables (the runs here are no workers)."""
    env = subprocess_env(**extra)
    for name in [n for n in env if n.startswith("PYTEST_XDIST_")]:
        del env[name]
    return env


def make(tmp_path, text, name="test_work.py"):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / name).write_text(textwrap.dedent(text))


def gate(tmp_path, *args, env=None, base="counts", runs=1):
    # one recording run unless a test learns (--fastprof-counts-runs, default 3)
    learn = [] if runs is None else ["--fastprof-counts-runs=%d" % runs]
    return run_pytest(tmp_path, "--fastprof-counts", str(tmp_path / base), *learn, *args, env=env)


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


# -- it will not cry wolf: seeded, warmed, stripped, learned --------------------------

RANDOM = """\
    import random

    def pick():
        return random.randrange(600)

    def test_b():
        for _ in range(300):
            pick()
"""
GETRANDBITS = "<method 'getrandbits' of '_random.Random' objects>"


def _draws_vary_until_seeded(tmp_path, text):
    """*text*'s test_b draws as often as its generator's state says (3 raw
    runs differ); under the gate, recorded then rerun twice: quiet."""
    make(tmp_path, text)
    assert len({raw_calls(tmp_path, [], GETRANDBITS) for _ in range(3)}) > 1
    assert gate(tmp_path).returncode == 0
    for _ in range(2):
        assert_quiet(gate(tmp_path))


def test_unseeded_random_is_seeded_per_test(tmp_path):
    # before: randrange draws again when a draw is out of range, as often as
    # the generator's state says
    _draws_vary_until_seeded(tmp_path, RANDOM)
    assert_quiet(gate(tmp_path, "-p", "xdist", "-n", "2") if _has_xdist() else gate(tmp_path))
    # the seed is the node id's: another test gets other draws
    from fastprof.modes.count_steady import seed_of
    assert seed_of("test_work.py::test_b") == seed_of("test_work.py::test_b")
    assert seed_of("test_work.py::test_b") != seed_of("test_work.py::test_c")
    # without the seed, the counts follow the generator again, and the report says why
    (tmp_path / "counts").rename(tmp_path / "seeded")
    assert gate(tmp_path, "--fastprof-counts-no-seed").returncode == 0
    outs = [gate(tmp_path, "--fastprof-counts-no-seed") for _ in range(3)]
    flagged = [r for r in outs if r.returncode == 1]
    assert flagged, [r.stdout for r in outs]
    assert "likely cause: random numbers" in flagged[0].stdout, flagged[0].stdout


MODULE_RANDOM = """\
    import random

    _rng = random.Random()
    _randrange = random.Random().randrange     # more-itertools' is_prime keeps one so

    def pick():
        return _rng.randrange(600) + _randrange(600)

    def test_b():
        for _ in range(300):
            pick()
"""


def test_a_modules_own_generators_are_seeded_per_test(tmp_path):
    # before: seeded from the OS at import, each run draws again as often
    # as its state says
    _draws_vary_until_seeded(tmp_path, MODULE_RANDOM)
    # found where a module keeps them; not random's own nor a SystemRandom
    import random
    import types

    from fastprof.modes.count_steady import _scan_modules
    mod = types.ModuleType("holder")
    mod.a, mod.b = random.Random(), random.Random().random
    mod.c, mod.d = random.SystemRandom(), random._inst
    sys.modules["holder"] = mod
    try:
        found = _scan_modules(random)
    finally:
        del sys.modules["holder"]
    assert any(r is mod.a for r in found) and any(r is mod.b.__self__ for r in found)
    assert not any(r is mod.c or r is random._inst for r in found)


def _has_xdist():
    try:
        import xdist  # noqa: F401
    except ImportError:
        return False
    return True


TEMPFILES = """\
    import os
    import tempfile

    def scratch():
        fd, name = tempfile.mkstemp()
        os.close(fd)
        os.unlink(name)

    def test_a():
        scratch()

    def test_b():
        scratch()
"""


def test_tempfile_first_use_with_k(tmp_path):
    make(tmp_path, TEMPFILES)
    # before: the first temporary file of the process finds the temporary
    # directory and makes the name generator's random.Random, in test_a, or
    # in test_b when it runs alone
    r = run_python(["-c", textwrap.dedent("""\
        import cProfile, pstats, sys
        sys.path.insert(0, ".")
        from test_work import scratch
        for _ in range(2):
            p = cProfile.Profile()
            p.runcall(scratch)
            print(sum(v[1] for k, v in pstats.Stats(p).stats.items()
                      if k[2] == "_get_default_tempdir"))
        """)], cwd=str(tmp_path))
    assert r.stdout.split() == ["1", "0"], r.stdout + r.stderr
    assert gate(tmp_path).returncode == 0
    for _ in range(2):
        assert_quiet(gate(tmp_path, "-k", "test_b"))
    assert_quiet(gate(tmp_path))
    def scratch_rows(test):
        # (before 3.12 a name's random draws take a number of getrandbits
        # that depends on the generator's state: seeded per test, so the
        # same in every run of a test, not across tests)
        return {e: c for e, c in tables(tmp_path)[test].items() if test not in e and "getrandbits" not in e}
    assert scratch_rows("test_a") == scratch_rows("test_b") != {}


ARGV = """\
    import sys

    def look(arg):
        return len(arg)

    def test_b():
        for arg in sys.argv:
            look(arg)
"""


def test_the_gates_own_options_change_no_count(tmp_path):
    make(tmp_path, ARGV)
    # recorded without a report (as on a developer's machine), compared with
    # one and a tolerance (as in the CI job): the test reads sys.argv
    assert gate(tmp_path).returncode == 0
    looks = tables(tmp_path)["test_b"]["test_work.py:look"]
    assert_quiet(gate(tmp_path, "--fastprof-counts-report", str(tmp_path / "r.md")))
    assert_quiet(gate(tmp_path, "--fastprof-counts-report=%s" % (tmp_path / "r.json"),
                      "--fastprof-counts-tolerance", "0", "--fastprof-counts-runs", "1"))
    assert_quiet(gate(tmp_path, env={"PYTHONHASHSEED": "random"}))   # re-executed: same environment
    # what a test sees of the command line is the rest of it
    r = run_pytest(tmp_path, "--fastprof-counts-runs=1", "--fastprof-counts=%s" % (tmp_path / "c2"),
                   "--fastprof-counts-report", str(tmp_path / "r.md"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert tables(tmp_path, base="c2")["test_b"]["test_work.py:look"] == looks


UNJOINED = """\
    import threading

    go = threading.Event()
    done = threading.Event()

    def tick():
        return 1

    def serve():
        go.wait()
        for _ in range(50):
            tick()
        done.set()

    def test_a():
        threading.Thread(target=serve, daemon=True).start()   # never joined

    def test_b():
        go.set()
        done.wait(10)
        tick()
"""


def test_a_thread_left_running_is_not_counted_in_later_tests(tmp_path):
    make(tmp_path, UNJOINED)
    # before: test_a's thread does its work while test_b runs, and is
    # counted there (not when test_b runs alone)
    assert raw_calls(tmp_path, [], "tick") == 51
    assert gate(tmp_path).returncode == 0
    assert tables(tmp_path)["test_b"]["test_work.py:tick"] == 1
    assert tables(tmp_path)["test_a"]["#threads"] == 1          # "# threads left running: 1"
    text = (tmp_path / "counts" / VERSION / "test_work.py.counts").read_text()
    assert "# threads left running: 1" in text
    assert_quiet(gate(tmp_path, "-k", "test_b"))   # before: 51 ticks, then 1 alone
    assert_quiet(gate(tmp_path))
    # a change in the test that leaves a thread running names it
    make(tmp_path, UNJOINED.replace("never joined", "never joined\n        tick()"))
    r = gate(tmp_path, "-k", "test_a")
    assert r.returncode == 1
    assert "likely cause: an unjoined thread: the test leaves 1 thread running" in r.stdout, r.stdout
    assert "fix: join the thread in the test or its fixture's teardown, or mark it " \
           "@pytest.mark.fastprof_counts_skip" in r.stdout


POLLING = """\
    import os
    import queue

    def polls():
        with open("polls.txt") as f:
            return int(f.read())

    def test_b():
        q = queue.Queue()
        for _ in range(polls()):      # a poll loop: how often it finds nothing is timing
            try:
                q.get(timeout=0.001)
            except queue.Empty:
                pass
"""


def _polls(tmp_path, *counts):
    """Each run of the test polls the next of *counts* times."""
    (tmp_path / "polls.txt").write_text(str(counts[0]))
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""\
        import os
        COUNTS = %r

        def pytest_sessionfinish(session):
            n = int(open("polls.txt").read())
            later = COUNTS[COUNTS.index(n) + 1:] if n in COUNTS else []
            if later and not os.environ.get("PYTEST_XDIST_WORKER"):
                open("polls.txt", "w").write(str(later[0]))
        """ % (list(counts),)))


def test_polling_queue_get_is_learned_and_named(tmp_path):
    make(tmp_path, POLLING)
    _polls(tmp_path, 10, 10, 10)
    assert gate(tmp_path).returncode == 0
    _polls(tmp_path, 13)
    r = gate(tmp_path)
    assert r.returncode == 1                     # before: a wait count that moved is an alarm
    # learned over three runs (the recording run and two more), 10, 12 and 11
    # polls: the counts that varied are kept as ranges
    (tmp_path / "counts").rename(tmp_path / "exact")
    _polls(tmp_path, 10, 12, 11)
    r = gate(tmp_path, runs=3)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "learned over 3 runs" in r.stdout and "1 of 1 test varied" in r.stdout, r.stdout
    assert "(polling: it waits with a timeout" in r.stdout
    t = tables(tmp_path)["test_b"]
    assert t["test_work.py:test_b -> queue.py:Queue.get"] == (10, 12)
    assert t["#runs"] == 3
    text = (tmp_path / "counts" / VERSION / "test_work.py.counts").read_text()
    assert "10..12 test_work.py:test_b -> queue.py:Queue.get\n" in text and "# runs: 3\n" in text
    for polls in (13, 9, 20):                    # inside the learned range, widened
        _polls(tmp_path, polls)
        r = gate(tmp_path, runs=3)
        assert_quiet(r)
        assert "2 counts in 1 test were learned as noisy" in r.stdout, r.stdout
    _polls(tmp_path, 40)                          # far beyond: an alarm, with its cause
    r = gate(tmp_path, runs=3)
    assert r.returncode == 1, r.stdout
    assert "40 (learned 10..12)" in r.stdout
    assert "likely cause: polling: it waits with a timeout" in r.stdout
    assert "fix: wait without a timeout (Queue.get(), Event.wait(), Thread.join()), or mark it " \
           "@pytest.mark.fastprof_counts_tolerance(" in r.stdout


def test_learning_accumulates_over_later_runs_and_passes_run_in_other_orders(tmp_path):
    make(tmp_path, POLLING + """\

    def test_c():
        with open("order.txt", "a") as f:
            f.write("c")

    def test_d():
        with open("order.txt", "a") as f:
            f.write("d")
    """)
    _polls(tmp_path, 10, 12, 11)
    r = gate(tmp_path, runs=3)
    assert r.returncode == 0, r.stdout + r.stderr
    # the recording run, then reversed, then shuffled
    runs = (tmp_path / "order.txt").read_text()
    assert runs[:2] == "cd" and runs[2:4] == "dc" and sorted(runs[4:]) == ["c", "d"], runs
    # pytest.main() in a program cannot run its command again: the next two
    # runs learn (no alarm meanwhile)
    (tmp_path / "counts").rename(tmp_path / "passes")
    _polls(tmp_path, 10, 12, 11, 30)
    r = run_python(["-c", "import sys, pytest; sys.exit(pytest.main(['-p', 'no:cacheprovider', "
                    "'-p', 'fastprof.modes.pytest_plugin', '--fastprof-counts=counts']))"],
                   cwd=str(tmp_path), env=gate_env(PYTEST_ADDOPTS="", PYTHONHASHSEED="0",
                                                   PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the next runs learn instead of comparing them" in r.stdout, r.stdout
    assert tables(tmp_path)["test_b"]["#runs"] == 1
    for _ in range(2):
        r = gate(tmp_path, runs=3)
        assert r.returncode == 0 and "changed their call counts" not in r.stdout, r.stdout
    assert tables(tmp_path)["test_b"]["test_work.py:test_b -> queue.py:Queue.get"] == (10, 12)
    r = gate(tmp_path, runs=3)                    # complete: 30 polls is compared, and beyond
    assert r.returncode == 1 and "30 (learned 10..12)" in r.stdout, r.stdout


def test_per_test_tolerance_marker(tmp_path):
    make(tmp_path, POLLING.replace("    def test_b():", "    @pytest.mark.fastprof_counts_tolerance(50)\n"
                                                     "    def test_b():").replace("import os", "import pytest"))
    _polls(tmp_path, 10)
    assert gate(tmp_path, "-W", "error::pytest.PytestUnknownMarkWarning").returncode == 0
    _polls(tmp_path, 14)
    assert_quiet(gate(tmp_path))
    _polls(tmp_path, 16)
    assert gate(tmp_path).returncode == 1


def test_baseline_ranges_merge_compare_and_round_trip():
    from fastprof.tools import counts
    a = {"f": 3, "f -> g": 10, "h": 1}
    learned = counts.merge(counts.merge(dict(a, **{"#runs": 1}), {"f": 3, "f -> g": 12}),
                           {"f": 3, "f -> g": 11, "h": 1})
    assert learned == {"f": 3, "f -> g": (10, 12), "h": (0, 1), "#runs": 3}
    text = counts.format_tables({"t": learned}, "3.12")
    assert "# runs: 3\n3 f\n10..12 f -> g\n0..1 h\n" in text
    assert counts.parse_tables(text) == {"t": learned}
    assert counts.compare(learned, {"f": 3, "f -> g": 7}) == []        # 10..12 widened by 3
    assert counts.compare(learned, {"f": 3, "f -> g": 15}) == []
    [c] = counts.compare(learned, {"f": 3, "f -> g": 16})
    assert (c.old, c.new, c.learned) == (12, 16, (10, 12))
    assert counts.compare({"x": (100, 101), "#runs": 3}, {"x": 126}) == []  # or 25% of the top
    assert counts.compare({"x": (100, 101), "#runs": 3}, {"x": 127})
    assert counts.compare(learned, {"f": 4, "f -> g": 11}) == []          # a noisy test: one more
    [c] = counts.compare(learned, {"f": 5, "f -> g": 11})
    assert (c.old, c.new, c.learned) == (3, 5, None)
    # in a noisy test, a scheduling row is not work: up to twice its highest count
    lock = "f -> ~:<method 'acquire' of '_thread.lock' objects>"
    assert counts.scheduling_kind(lock) == "lock"
    assert counts.scheduling_kind("f -> queue.py:Queue.get") == "wait"
    assert counts.scheduling_kind("f -> ~:<method 'recv' of '_socket.socket' objects>") == "io"
    assert counts.scheduling_kind("f -> g") is None
    assert counts.compare(dict(learned, **{lock: 100}), {"f": 3, "f -> g": 11, lock: 190}) == []
    assert counts.compare(dict(learned, **{lock: 100}), {"f": 3, "f -> g": 11, lock: 201})
    assert counts.compare({lock: 100}, {lock: 101})                   # a steady test: exact
    # a test that starts a thread or a pool: its waits follow the machine's
    # speed even when they did not vary while learned (more-itertools'
    # callback_iter polls Queue.get(timeout=...) until a future is done);
    # its work stays exact
    get, done = "f -> queue.py:Queue.get", "concurrent/futures/_base.py:Future.done"
    pooled = {"f -> concurrent/futures/thread.py:ThreadPoolExecutor.submit": 1, get: 6, done: 7,
              "f -> g": 3}
    assert counts.starts_concurrency(pooled)
    assert counts.compare(pooled, dict(pooled, **{get: 7, done: 8})) == []
    assert counts.compare(pooled, dict(pooled, **{get: 13}))
    assert counts.compare(pooled, dict(pooled, **{"f -> g": 4}))
    threaded = {"t -> threading.py:Thread.start": 1, get: 6}
    assert counts.compare(threaded, dict(threaded, **{get: 7})) == []
    assert not counts.starts_concurrency({get: 6, "f -> g": 3})
    assert counts.compare({get: 6}, {get: 7})                         # no thread: exact
    # a test that leaves a thread running: its last steps land before or after its end
    assert counts.compare({"#threads": 1, "x": 4008}, {"x": 4009}) == []
    assert counts.compare({"#threads": 1, "x": 4008}, {"x": 8016})
    assert counts.compare({"x": 4008}, {"x": 4009})
    # a count that doubled while learned is work done until another thread
    # stopped it: the machine's speed, not compared
    assert counts.compare({"w": (623, 1245)}, {"w": 2923}) == []
    assert counts.compare({"w": (623, 1245)}, {}) == []
    new_wait = "f -> ~:<built-in method time.sleep>"                   # a timing path, once or twice
    assert counts.compare(learned, {"f": 3, "f -> g": 11, new_wait: 2}) == []
    assert counts.compare(learned, {"f": 3, "f -> g": 11, new_wait: 3})
    with pytest.raises(counts.BaselineError):
        counts.parse_tables("[t]\n1..x f\n")


def test_causes_are_named():
    from fastprof.tools.count_causes import diagnose, tolerance_needed
    from fastprof.tools.counts import Change
    recv = Change("f -> ~:<method 'recv_into' of '_socket.socket' objects>", 4, 6)
    cause, fix = diagnose([recv], {"f": 1}, {"f": 1})
    assert cause.startswith("I/O chunking") and fix == "mark it @pytest.mark.fastprof_counts_tolerance(50)"
    lock = Change("~:<method '__exit__' of '_thread.lock' objects>", 111054, 103187)
    assert diagnose([lock], {}, {})[0].startswith("lock contention")
    assert diagnose([Change("f -> g", 1, 2)], {"f -> g": 1}, {}) is None    # a real change
    # ... also in a test some of whose other counts vary
    assert diagnose([Change("f -> g", 1, 2)], {"f -> g": 1, "h": (3, 5)}, {}) is None
    assert diagnose([Change("h", 5, 9, (3, 5))], {"f -> g": 1, "h": (3, 5)}, {})[0].startswith(
        "its counts varied while its baseline was learned")
    assert diagnose([Change("f -> g", 1, 2)], {"#threads": 1}, {})[0].startswith("an unjoined thread")
    assert tolerance_needed([Change("a", 100, 103)]) == 5
    assert tolerance_needed([Change("a", 0, 3)]) == 100


GENERATED = """\
    import itertools

    numbers = itertools.count()

    def make():
        ns = {}
        exec(compile("def f():\\n    return 1\\n", "<gen-%d>" % next(numbers), "exec"), ns)
        return ns["f"]

    def test_a():
        make()()

    def test_b():
        make()()
"""


def test_exec_names_are_numbered_alike(tmp_path):
    # code compiled at run time under a numbered file name (boltons'
    # FunctionBuilder): the number counts what the process compiled before
    make(tmp_path, GENERATED)
    assert gate(tmp_path).returncode == 0
    assert tables(tmp_path)["test_b"]["test_work.py:test_b -> <gen-N>:f"] == 1
    assert_quiet(gate(tmp_path, "-k", "test_b"))
    from fastprof.tools.counts import steady_name
    assert steady_name("<boltons.funcutils.FunctionBuilder-10>:f") == "<boltons.funcutils.FunctionBuilder-N>:f"
    assert steady_name("<frozen posixpath>:join") == "<frozen posixpath>:join"
    assert steady_name("pkg/mod2.py:f") == "pkg/mod2.py:f"


ENDING = """\
    import threading
    import time

    def finish():
        pass

    def work():
        time.sleep(0.05)
        finish()

    def test_b():
        threading.Thread(target=work).start()   # not joined: it ends just after the test
"""


def test_a_thread_ending_as_the_test_ends_is_counted_in_it(tmp_path):
    # the gate gives the threads a test started a moment to end, still
    # counted: whether finish() ran before the test's end was the machine's call
    make(tmp_path, ENDING)
    assert gate(tmp_path).returncode == 0
    t = tables(tmp_path)["test_b"]
    assert t["test_work.py:finish"] == 1
    assert "#threads" not in t
    assert_quiet(gate(tmp_path))


SERVING = """\
    import threading
    import time

    def finish():
        pass

    def serve(request):
        request.wait()
        t0 = time.thread_time()
        while time.thread_time() - t0 < 0.4:   # CPU work: longer than the gate's grace
            pass
        finish()

    def test_b():
        request = threading.Event()
        threading.Thread(target=serve, args=(request,)).start()
        request.set()   # its reply is worked out after the test returns
"""


def test_a_thread_still_working_as_the_test_ends_is_counted_in_it(tmp_path):
    # past the grace, a thread that still has work to run (runnable, not
    # blocked) is waited for: on a loaded machine a server thread woken by a
    # test's last request can need a while to get a core
    make(tmp_path, SERVING)
    assert gate(tmp_path).returncode == 0
    t = tables(tmp_path)["test_b"]
    assert t.get("test_work.py:finish") == 1, sorted(t)
    assert "#threads" not in t
