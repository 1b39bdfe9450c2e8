"""fastprof.exports: format choice, callgrind, speedscope, collapsed stacks, call trees.

Inputs are real profiles (cProfile, and fastprof with call paths when the C
module is built) of a small workload written to a temp file, plus a
synthetic profile whose numbers are exact.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import helpers
from fastprof.data.calltree import build_tree, tree_from_callers
from fastprof.data.profile_file import CallPaths, ProfileData, load_profile
from fastprof.exports import FORMATS, export, format_for_path, render

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "speedscope",
                      "file-format-schema.json")

WORKLOAD = textwrap.dedent('''\
    def leaf(n):
        s = 0
        for i in range(n):
            s += i
        return s

    def helper(n):
        return leaf(n) + leaf(n // 2)

    def recurse(k):
        if k == 0:
            return leaf(500)
        return recurse(k - 1)

    def main():
        for _ in range(30):
            helper(3000)
        recurse(6)
        return sorted([3, 1, 2])
''')


def _module(tmp_path, name):
    path = tmp_path / (name + ".py")
    path.write_text(WORKLOAD)
    spec = importlib.util.spec_from_file_location(name, str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cprofile_data(tmp_path):
    import cProfile
    mod = _module(tmp_path, "work_cp")
    prof = cProfile.Profile()
    prof.runcall(mod.main)
    out = str(tmp_path / "cp.prof")
    prof.dump_stats(out)
    return load_profile(out)


def fastprof_data(tmp_path):
    try:
        import fastprof
        prof = fastprof.Profile(callpaths=True)
    except Exception as exc:  # C module not built
        pytest.skip("fastprof C module not available: %s" % exc)
    mod = _module(tmp_path, "work_fp")
    prof.runcall(mod.main)
    out = str(tmp_path / "fp.prof")
    prof.dump_stats(out)
    data = load_profile(out)
    assert data.callpaths is not None
    return data


F = "/nonexistent/app.py"
MAIN, ALPHA, BETA, LEAF = (F, 1, "main"), (F, 10, "alpha"), (F, 20, "beta"), (F, 30, "leaf")
SORTED = ("~", 0, "<built-in method builtins.sorted>")


def synthetic_stats():
    return {
        MAIN: (1, 1, 0.1, 1.0, {}),
        ALPHA: (1, 1, 0.1, 0.6, {MAIN: (1, 1, 0.1, 0.6)}),
        BETA: (1, 1, 0.1, 0.3, {MAIN: (1, 1, 0.1, 0.3)}),
        LEAF: (3, 3, 0.7, 0.7, {ALPHA: (2, 2, 0.5, 0.5), BETA: (1, 1, 0.2, 0.2)}),
    }


def synthetic_data():
    cp = CallPaths([MAIN, ALPHA, BETA, LEAF], [
        (-1, 0, 1, 0.1, 1.0),
        (0, 1, 1, 0.1, 0.6),
        (1, 3, 2, 0.5, 0.5),
        (0, 2, 1, 0.1, 0.3),
        (3, 3, 1, 0.2, 0.2),
    ])
    return ProfileData(synthetic_stats(), callpaths=cp, clock="monotonic")


@pytest.fixture(params=["cprofile", "fastprof", "synthetic"])
def any_data(request, tmp_path):
    if request.param == "cprofile":
        return cprofile_data(tmp_path)
    if request.param == "fastprof":
        return fastprof_data(tmp_path)
    return synthetic_data()


# ---------------------------------------------------------------- choosing a format

@pytest.mark.parametrize("name, fmt", [
    ("out.prof", "pstats"), ("x/y/out.pstats", "pstats"), ("OUT.PROF", "pstats"),
    ("run.callgrind", "callgrind"), ("callgrind.out", "callgrind"), ("callgrind.out.1234", "callgrind"),
    ("/tmp/callgrind.out.app", "callgrind"),
    ("p.speedscope.json", "speedscope"),
    ("p.collapsed", "collapsed"), ("p.folded", "collapsed"),
    ("report.html", "html"),
])
def test_format_for_path(name, fmt):
    assert format_for_path(name) == fmt


@pytest.mark.parametrize("name", ["out.json", "out.txt", "out", "prof", "x.callgrind.txt", "speedscope.json"])
def test_format_for_path_unknown(name):
    with pytest.raises(ValueError) as info:
        format_for_path(name)
    msg = str(info.value)
    for ext in (".prof", ".pstats", ".callgrind", "callgrind.out", ".speedscope.json",
                ".collapsed", ".folded", ".html"):
        assert ext in msg


def test_export_by_name_and_by_fmt(tmp_path):
    data = synthetic_data()
    for name, fmt in [("a.prof", "pstats"), ("a.callgrind", "callgrind"), ("a.speedscope.json", "speedscope"),
                      ("a.collapsed", "collapsed"), ("a.html", "html")]:
        assert export(data, str(tmp_path / name)) == fmt
    assert load_profile(str(tmp_path / "a.prof")).callpaths == data.callpaths
    assert (tmp_path / "a.callgrind").read_text().startswith("# callgrind format\n")
    assert json.loads((tmp_path / "a.speedscope.json").read_text())["exporter"] == "fastprof"
    assert (tmp_path / "a.html").read_text().startswith("<!DOCTYPE html>")
    # an explicit format wins over the name
    assert export(data, str(tmp_path / "weird.txt"), "collapsed") == "collapsed"
    assert (tmp_path / "weird.txt").read_text() == (tmp_path / "a.collapsed").read_text()
    with pytest.raises(ValueError, match="known formats"):
        export(data, str(tmp_path / "x.prof"), "svg")
    with pytest.raises(ValueError):
        export(data, str(tmp_path / "x.txt"))
    assert sorted(os.listdir(str(tmp_path))) == sorted(
        ["a.prof", "a.callgrind", "a.speedscope.json", "a.collapsed", "a.html", "weird.txt"])


def test_export_failure_keeps_old_file(tmp_path, monkeypatch):
    out = tmp_path / "keep.collapsed"
    out.write_text("old contents\n")
    import fastprof.exports.collapsed as collapsed

    def boom(data, f, **options):
        f.write("half a file")
        raise RuntimeError("boom")
    monkeypatch.setattr(collapsed, "write_collapsed", boom)
    with pytest.raises(RuntimeError):
        export(synthetic_data(), str(out))
    assert out.read_text() == "old contents\n"
    assert os.listdir(str(tmp_path)) == ["keep.collapsed"]  # no temp file left


def test_pstats_export_round_trips(any_data, tmp_path):
    out = str(tmp_path / "copy.prof")
    export(any_data, out)
    back = load_profile(out)
    assert back.stats == any_data.stats
    assert back.callpaths == any_data.callpaths
    import pstats
    assert pstats.Stats(out).total_calls == sum(v[1] for v in any_data.stats.values())


# ---------------------------------------------------------------- callgrind

def parse_callgrind(text):
    """A strict reader of what we write: returns (summary, totals, {fn: self}, [(caller, callee, calls, cost)]).

    Checks name compression: an id is defined once with its name, every
    later use refers to a defined id, fn/cfn share one id space, fl/cfl another.
    """
    files, fns = {}, {}

    def ref(table, value):
        m = re.match(r"^\((\d+)\)(?: (.+))?$", value)
        assert m, "not a compressed name: %r" % value
        i, name = int(m.group(1)), m.group(2)
        if name is not None:
            assert i not in table, "id %d defined twice" % i
            table[i] = name
        assert i in table, "id %d used before its definition" % i
        return table[i]

    lines = text.splitlines()
    assert lines[0] == "# callgrind format"
    header = {}
    self_cost, calls = {}, []
    cur_file = cur_fn = None
    pending_call = None
    totals = None
    for line in lines[1:]:
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if sep and key in ("fl", "fn", "cfl", "cfn", "calls"):
            if key == "fl":
                cur_file = ref(files, value)
            elif key == "fn":
                cur_fn = (cur_file, ref(fns, value))
                self_cost.setdefault(cur_fn, 0)
            elif key == "cfl":
                callee_file = ref(files, value)
            elif key == "cfn":
                callee = (callee_file, ref(fns, value))
            else:
                count, _target = value.split()
                pending_call = (cur_fn, callee, int(count))
            continue
        m = re.match(r"^(\w+): (.*)$", line)
        if m:
            header[m.group(1)] = m.group(2)
            if m.group(1) == "totals":
                totals = int(m.group(2))
            continue
        pos, cost = line.split()
        if pending_call is not None:
            calls.append(pending_call + (int(cost),))
            pending_call = None
        else:
            self_cost[cur_fn] += int(cost)
    assert header["events"] == "ns" and header["positions"] == "line"
    return int(header["summary"]), totals, self_cost, calls


def test_callgrind_matches_stats(any_data):
    text = render(any_data, "callgrind")
    summary, totals, self_cost, calls = parse_callgrind(text)
    ns = lambda s: int(round(s * 1e9))  # noqa: E731
    assert summary == totals == sum(ns(v[2]) for v in any_data.stats.values())

    def key_of(file_fn):
        filename, name = file_fn
        for k in any_data.stats:
            kfile = "<built-in>" if k[0] == "~" else k[0]
            if kfile == filename and name in (k[2], "%s:%s" % (k[2], k[1])):
                return k
        raise AssertionError("no function %r" % (file_fn,))

    assert len(self_cost) == len(any_data.stats)
    for fn, cost in self_cost.items():
        assert cost == ns(any_data.stats[key_of(fn)][2])
    expected = {(c, k) for k, v in any_data.stats.items() for c in v[4] if c != k}
    assert {(key_of(a), key_of(b)) for a, b, _n, _c in calls} == expected
    for a, b, n, cost in calls:
        edge = any_data.stats[key_of(b)][4][key_of(a)]
        assert n == edge[0] and cost == ns(edge[3])


def test_callgrind_inclusive_costs_do_not_double_count_recursion(tmp_path):
    data = cprofile_data(tmp_path)
    _s, _t, self_cost, calls = parse_callgrind(render(data, "callgrind"))
    rec = [k for k in data.stats if k[2] == "recurse"][0]
    # inclusive = self + callees' call costs == pstats cumtime (the self-call is left out)
    out_calls = [c for c in calls if c[0][1] == "recurse"]
    assert all(c[1][1] != "recurse" for c in out_calls)
    inclusive = self_cost[(rec[0], "recurse")] + sum(c[3] for c in out_calls)
    assert abs(inclusive - data.stats[rec][3] * 1e9) <= 3


def test_callgrind_names_same_function_names_apart():
    k1, k2 = ("/a.py", 3, "<lambda>"), ("/a.py", 9, "<lambda>")
    data = ProfileData({k1: (1, 1, 1e-3, 1e-3, {}), k2: (2, 2, 2e-3, 2e-3, {k1: (2, 2, 2e-3, 2e-3)})})
    _s, _t, self_cost, calls = parse_callgrind(render(data, "callgrind"))
    assert self_cost == {("/a.py", "<lambda>:3"): 1000000, ("/a.py", "<lambda>:9"): 2000000}
    assert calls == [(("/a.py", "<lambda>:3"), ("/a.py", "<lambda>:9"), 2, 2000000)]


def test_callgrind_annotate_reads_it(any_data, tmp_path):
    exe = shutil.which("callgrind_annotate")
    if not exe:
        helpers.tool_missing("callgrind_annotate not installed (apt-get install valgrind)")
    out = tmp_path / "callgrind.out.test"
    assert export(any_data, str(out), title="test run") == "callgrind"
    total = sum(int(round(v[2] * 1e9)) for v in any_data.stats.values())
    # a perl script: not under the sanitizer preload of an ASan test run
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTHONMALLOC")}
    for extra in ([], ["--inclusive=yes"], ["--tree=both"]):
        res = subprocess.run([exe] + extra + [str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, cwd=str(tmp_path), env=env)
        assert res.returncode == 0, res.stderr
        assert res.stderr == ""
        assert "Profile data file '%s' (creator: fastprof)" % out in res.stdout
        assert re.search(r"^\s*%s \(100\.0%%\)\s+PROGRAM TOTALS" % "{:,}".format(total), res.stdout, re.M)
    # the most expensive function by self time is listed by name
    top = max(any_data.stats, key=lambda k: any_data.stats[k][2])
    assert ":" + top[2] in res.stdout


# ---------------------------------------------------------------- speedscope

def _schema_validator():
    try:
        import jsonschema
    except ImportError:
        helpers.tool_missing("jsonschema is not installed (requirements-test.txt)")
    with open(SCHEMA) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _frame_durations(doc):
    """[(frame name, depth, duration)] from the evented profile; checks nesting."""
    prof = doc["profiles"][0]
    frames = doc["shared"]["frames"]
    stack, out, last = [], [], prof["startValue"]
    for ev in prof["events"]:
        assert ev["at"] >= last, "events out of order"
        last = ev["at"]
        if ev["type"] == "O":
            stack.append((ev["frame"], ev["at"]))
        else:
            frame, start = stack.pop()
            assert frame == ev["frame"], "close does not match the open frame"
            out.append((frames[frame]["name"], len(stack), ev["at"] - start))
    assert not stack
    assert last == prof["endValue"]
    return out


def test_speedscope_validates_against_schema(any_data):
    validator = _schema_validator()
    doc = json.loads(render(any_data, "speedscope"))
    errors = sorted(validator.iter_errors(doc), key=str)
    assert not errors, errors[0]
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    prof = doc["profiles"][0]
    assert prof["type"] == "evented" and prof["unit"] == "nanoseconds"
    total_ns = sum(int(round(v[2] * 1e9)) for v in any_data.stats.values())
    durations = _frame_durations(doc)
    # the roots add up to (about) all the time profiled
    roots = sum(d for _n, depth, d in durations if depth == 0)
    if any_data.callpaths is not None:  # exact: only per-node rounding to ns
        assert abs(roots - total_ns) <= len(any_data.callpaths.nodes)
    else:  # estimated trees prune paths below 0.01% of the total
        assert abs(roots - total_ns) <= max(0.01 * total_ns, 1000)


def test_speedscope_layout_follows_call_paths():
    _schema_validator().validate(json.loads(render(synthetic_data(), "speedscope")))
    doc = json.loads(render(synthetic_data(), "speedscope"))
    assert sorted(_frame_durations(doc)) == sorted([
        ("main", 0, 1000000000), ("alpha", 1, 600000000), ("leaf", 2, 500000000),
        ("beta", 1, 300000000), ("leaf", 2, 200000000)])
    frames = doc["shared"]["frames"]
    assert {"name": "leaf", "file": F, "line": 30} in frames
    assert "estimated" not in doc["profiles"][0]["name"]
    est = json.loads(render(ProfileData(synthetic_stats()), "speedscope"))
    assert "estimated" in est["profiles"][0]["name"]
    # without call paths the tree is estimated from the edges: here it is the same tree
    assert sorted(_frame_durations(est)) == sorted(_frame_durations(doc))


# ---------------------------------------------------------------- collapsed stacks

LINE_RE = re.compile(r"^(\S.*) (\d+)$")  # flamegraph.pl: stack, space, integer count


def _collapsed(data):
    out = {}
    for line in render(data, "collapsed").splitlines():
        m = LINE_RE.match(line)
        assert m, "bad collapsed line %r" % line
        assert m.group(1) not in out, "duplicate stack %r" % m.group(1)
        out[m.group(1)] = int(m.group(2))
        assert out[m.group(1)] > 0
    return out


def test_collapsed_exact_paths():
    lines = _collapsed(synthetic_data())
    m, a, b, leaf = ("main (%s:1)" % F, "alpha (%s:10)" % F, "beta (%s:20)" % F, "leaf (%s:30)" % F)
    assert lines == {
        m: 100000,
        m + ";" + a: 100000,
        m + ";" + a + ";" + leaf: 500000,
        m + ";" + b: 100000,
        m + ";" + b + ";" + leaf: 200000,
    }


def test_collapsed_weights_add_up(any_data):
    lines = _collapsed(any_data)
    total_us = sum(v[2] for v in any_data.stats.values()) * 1e6
    if any_data.callpaths is not None:
        assert abs(sum(lines.values()) - total_us) <= 1  # rounding is carried, not lost
    else:  # estimated trees prune paths below 0.01% of the total
        assert abs(sum(lines.values()) - total_us) <= 0.01 * total_us + 1


def test_collapsed_fastprof_has_real_paths(tmp_path):
    data = fastprof_data(tmp_path)
    stacks = _collapsed(data)
    names = [[re.sub(r" \(.*\)$", "", f) for f in s.split(";")] for s in stacks]
    assert any(n[-3:] == ["main", "helper", "leaf"] for n in names)
    # direct recursion folds into one node: recurse -> leaf, never recurse -> recurse
    assert any(n[-3:] == ["main", "recurse", "leaf"] for n in names)
    assert not any("recurse" in n and n.count("recurse") > 1 for n in names)


def test_collapsed_frames_keep_separators_out():
    key = ("/x.py", 1, "odd;name with spaces")
    lines = _collapsed(ProfileData({key: (1, 1, 0.001, 0.001, {})}))
    assert lines == {"odd,name with spaces (/x.py:1)": 1000}


def test_collapsed_rounding_is_carried():
    # 1000 paths of 0.4 us each: rounding each would give 0; carried they sum to 400
    keys = [("/m.py", i, "f%d" % i) for i in range(1, 1001)]
    root = ("/m.py", 5000, "root")
    stats = {root: (1, 1, 0.0, 4e-4, {})}
    for k in keys:
        stats[k] = (1, 1, 4e-7, 4e-7, {root: (1, 1, 4e-7, 4e-7)})
    cp = CallPaths([root] + keys, [(-1, 0, 1, 0.0, 4e-4)] + [(0, i + 1, 1, 4e-7, 4e-7) for i in range(1000)])
    lines = _collapsed(ProfileData(stats, callpaths=cp))
    assert sum(lines.values()) == 400


# ---------------------------------------------------------------- call trees

def _paths(tree):
    out = {}
    for n in range(len(tree)):
        path = tuple(tree.functions[f][2] for f in tree.path(n))
        out[path] = (tree.calls[n], tree.self_time[n], tree.totals()[n])
    return out


def test_estimated_tree_splits_time_by_edges():
    tree = tree_from_callers(synthetic_stats())
    assert not tree.exact
    paths = _paths(tree)
    assert set(paths) == {("main",), ("main", "alpha"), ("main", "alpha", "leaf"),
                          ("main", "beta"), ("main", "beta", "leaf")}
    calls, self_t, total = paths[("main", "alpha", "leaf")]
    assert calls == pytest.approx(2) and self_t == pytest.approx(0.5) and total == pytest.approx(0.5)
    calls, self_t, total = paths[("main", "beta", "leaf")]
    assert calls == pytest.approx(1) and self_t == pytest.approx(0.2)
    assert tree.total_time() == pytest.approx(1.0)


def test_exact_tree_is_the_trailer():
    tree = build_tree(synthetic_data())
    assert tree.exact
    assert tree.parent == [-1, 0, 1, 0, 3]
    assert tree.totals() == pytest.approx([1.0, 0.6, 0.5, 0.3, 0.2])


def test_estimated_tree_of_real_cprofile(tmp_path):
    data = cprofile_data(tmp_path)
    tree = build_tree(data)
    assert not tree.exact
    paths = _paths(tree)
    helper_leaf = [p for p in paths if p[-3:] == ("main", "helper", "leaf")]
    recurse_leaf = [p for p in paths if p[-3:] == ("main", "recurse", "leaf")]
    assert len(helper_leaf) == 1 and len(recurse_leaf) == 1
    leaf = [k for k in data.stats if k[2] == "leaf"][0]
    helper = [k for k in data.stats if k[2] == "helper"][0]
    # leaf's time under helper is the helper->leaf edge's time
    assert paths[helper_leaf[0]][2] == pytest.approx(data.stats[leaf][4][helper][3], rel=1e-6)
    # no path repeats a function (cycles are cut)
    assert all(len(set(p)) == len(p) for p in paths)


def test_estimated_tree_survives_cycles_and_dense_graphs():
    a, b = ("/c.py", 1, "a"), ("/c.py", 2, "b")
    cyc = {a: (1, 2, 0.5, 1.0, {b: (1, 1, 0.2, 0.4)}), b: (1, 2, 0.5, 0.8, {a: (2, 1, 0.5, 0.8)})}
    tree = tree_from_callers(cyc)  # no root: starts at the widest function
    assert len(tree) >= 1 and len(tree) <= 4
    # a complete graph of 30 functions has astronomically many paths: the cap holds
    keys = [("/d.py", i, "f%d" % i) for i in range(30)]
    dense = {}
    for k in keys:
        dense[k] = (1, 30, 0.01, 1.0, {c: (1, 1, 0.01 / 30, 1.0 / 30) for c in keys if c != k})
    dense[("/d.py", 99, "top")] = (1, 1, 0.0, 1.0, {})
    for k in keys:
        dense[k][4][("/d.py", 99, "top")] = (1, 1, 0.01, 1.0)
    tree = tree_from_callers(dense, max_nodes=5000)
    assert 0 < len(tree) <= 5000


def test_formats_listed():
    assert set(FORMATS) == {"pstats", "callgrind", "speedscope", "collapsed", "html", "pprof", "gecko"}


# ---------------------------------------------------------------- estimated trees of real programs

REAL_SCRIPT = textwrap.dedent('''\
    def spin(n):
        s = 0
        for i in range(n):
            s += i
        return s

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def is_even(n):
        return True if n == 0 else is_odd(n - 1)

    def is_odd(n):
        return False if n == 0 else is_even(n - 1)

    def nested(k):
        # a cycle through exec: exec -> <module> -> nested -> exec
        if k:
            exec("nested(%d)" % (k - 1))
        spin(3000)

    def main():
        import helper_mod          # imported at run time: exec gets a caller
        helper_mod.work()
        fib(16)
        for _ in range(40):
            is_even(80)
        nested(3)
        spin(30000)

    main()
''')

HELPER_MODULE = textwrap.dedent('''\
    TABLE = [i * i for i in range(30000)]   # the module's own run takes time

    def work():
        return sum(TABLE[::3])
''')


def _real_profile(tmp_path, profiler):
    """A profile written by ``python -m cProfile -o`` (or fastprof's) of REAL_SCRIPT."""
    (tmp_path / "script.py").write_text(REAL_SCRIPT)
    (tmp_path / "helper_mod.py").write_text(HELPER_MODULE)
    out = tmp_path / ("%s.prof" % profiler)
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", profiler, "-o", str(out), "script.py"],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    data = load_profile(str(out))
    assert data.callpaths is None
    return data


@pytest.fixture(params=["cProfile", "fastprof"])
def real_profile(request, tmp_path):
    if request.param == "fastprof":
        pytest.importorskip("fastprof._fastprof")
    return _real_profile(tmp_path, request.param)


def _by_name(data, name):
    return [k for k in data.stats if k[2] == name and k[0] != "~"][0]


def test_estimated_tree_holds_the_whole_profile(real_profile):
    data = real_profile
    total = sum(v[2] for v in data.stats.values())
    exec_key = [k for k in data.stats if k[2] == "<built-in method builtins.exec>"][0]
    assert data.stats[exec_key][4], "exec has callers: the case that used to give an empty tree"
    tree = tree_from_callers(data.stats, max_nodes=10 ** 6, min_fraction=0.0)
    totals = tree.totals()
    # the roots add up to the profile's total, each function's own time is in it once
    assert tree.total_time() == pytest.approx(total, rel=1e-9)
    own = {}
    for n in range(len(tree)):
        key = tree.functions[tree.func[n]]
        own[key] = own.get(key, 0.0) + tree.self_time[n]
    for key, v in data.stats.items():
        assert own.get(key, 0.0) == pytest.approx(v[2], rel=1e-9, abs=1e-12), key
    # the widest root is the program, not the profiler's disable(): exec,
    # or the <string> module of the cycle exec -> <module> -> nested -> exec
    # (where the estimate enters the cycle depends on the times)
    top = max(tree.roots, key=lambda r: totals[r])
    assert tree.functions[tree.func[top]] in (exec_key, ("<string>", 1, "<module>"))
    # and it holds the whole program: exec's cumtime (the other roots are
    # what ran outside it, the profiler's own disable(); a fraction of the
    # total would depend on how long that took on a loaded machine)
    assert totals[top] == pytest.approx(data.stats[exec_key][3], rel=0.01)
    for n in range(len(tree)):
        assert sum(totals[c] for c in tree.children[n]) <= totals[n] - tree.self_time[n] + 1e-12
        path = tree.path(n)
        assert len(set(path)) == len(path), "a path repeats a function: a cycle was not cut"


def test_estimated_tree_places_recursion_under_its_caller(real_profile):
    data = real_profile
    tree = tree_from_callers(data.stats, max_nodes=10 ** 6, min_fraction=0.0)
    totals = tree.totals()
    paths = {}
    for n in range(len(tree)):
        names = tuple(tree.functions[f][2] for f in tree.path(n))
        paths.setdefault(names[-2:], []).append(totals[n])
    fib, even = _by_name(data, "fib"), _by_name(data, "is_even")
    # direct recursion: one fib under main, with fib's whole cumulative time
    assert paths[("main", "fib")] == [pytest.approx(data.stats[fib][3], rel=1e-6)]
    # mutual recursion: is_even -> is_odd once, the pair's time under main
    assert paths[("main", "is_even")] == [pytest.approx(data.stats[even][3], rel=0.05)]
    assert ("is_even", "is_odd") in paths and ("is_odd", "is_even") not in paths
    # the run-time import's module code is in the tree
    assert any(k[-1] == "<module>" and len(k) == 2 for k in paths)


def test_collapsed_of_a_cprofile_file_is_not_empty(tmp_path, capsys):
    from fastprof import cli
    data = _real_profile(tmp_path, "cProfile")
    out = tmp_path / "x.collapsed"
    assert cli.main(["convert", str(tmp_path / "cProfile.prof"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "estimated" in err and "folded" in err
    lines = out.read_text().splitlines()
    assert len(lines) > 10
    weights = sum(int(ln.rsplit(" ", 1)[1]) for ln in lines)
    total_us = sum(v[2] for v in data.stats.values()) * 1e6
    assert abs(weights - total_us) <= 1
    assert any(";main (" in ln and ";fib (" in ln for ln in lines)


# ---------------------------------------------------------------- --min-percent

def test_prune_folds_small_paths_into_their_parent():
    from fastprof.data.calltree import prune
    tree = build_tree(synthetic_data())
    cut = prune(tree, 0.25)  # leaf under beta is 20% of the total: folded into beta
    paths = _paths(cut)
    assert ("main", "beta", "leaf") not in paths and ("main", "alpha", "leaf") in paths
    beta = [n for n in range(len(cut)) if cut.functions[cut.func[n]][2] == "beta"][0]
    assert cut.folded[beta] == pytest.approx(0.2) and cut.folded_count[beta] == 1
    assert cut.totals()[beta] == pytest.approx(0.3)  # the parent keeps its width
    assert cut.total_time() == pytest.approx(tree.total_time())


def test_collapsed_and_speedscope_say_and_fold(tmp_path):
    data = synthetic_data()
    lines = {}
    for line in render(data, "collapsed", min_percent=25).splitlines():
        stack, w = line.rsplit(" ", 1)
        lines[stack] = int(w)
    m, b = "main (%s:1)" % F, "beta (%s:20)" % F
    assert lines[m + ";" + b] == 300000 and not any(s.endswith("leaf (%s:30)" % F) and b in s for s in lines)
    assert sum(lines.values()) == 1000000
    doc = json.loads(render(data, "speedscope", min_percent=25))
    assert "below 25% folded" in doc["name"]
    assert len(_frame_durations(doc)) == 4  # main, alpha, alpha's leaf, beta
    doc = json.loads(render(data, "speedscope", min_percent=0))
    assert "folded" not in doc["name"]


def test_min_percent_default_and_checks(tmp_path):
    from fastprof.exports import DEFAULT_MIN_PERCENT, check_min_percent, folding_note
    assert check_min_percent(None) == DEFAULT_MIN_PERCENT > 0
    with pytest.raises(ValueError):
        check_min_percent(101)
    assert "0.01%" in folding_note("html", None) and folding_note("callgrind", None) == ""
    assert folding_note("collapsed", 0) == ""
    # 20,000 paths of 0.005% each: the default folds them into the root
    keys = [("/m.py", i, "f%d" % i) for i in range(1, 20001)]
    root = ("/m.py", 9000, "root")
    stats = {root: (1, 1, 0.0, 1.0, {})}
    for k in keys:
        stats[k] = (1, 1, 5e-5, 5e-5, {root: (1, 1, 5e-5, 5e-5)})
    cp = CallPaths([root] + keys, [(-1, 0, 1, 0.0, 1.0)] + [(0, i + 1, 1, 5e-5, 5e-5) for i in range(20000)])
    data = ProfileData(stats, callpaths=cp)
    out = tmp_path / "x.collapsed"
    export(data, str(out))
    assert out.read_text() == "root (/m.py:9000) 1000000\n"
    export(data, str(out), min_percent=0)
    assert len(out.read_text().splitlines()) == 20000
