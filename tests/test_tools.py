"""The ``fastprof`` command: view, diff, merge, convert, run; errors and --help.

Profiles are real: a workload written to a temp dir, run under cProfile
and (when the C module is built) under fastprof with call paths.
"""

import importlib.util
import marshal
import os
import pstats
import re
import subprocess
import sys
import textwrap
import time

import pytest

from fastprof import cli
from fastprof.data.profile_file import CallPaths, ProfileData, load_profile, write_profile

try:
    from helpers import subprocess_env
except ImportError:  # pragma: no cover - helpers.py is another engineer's; be independent
    def subprocess_env(**extra):
        env = dict(os.environ)
        here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
        env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env.update(extra)
        return env

WORKLOAD = textwrap.dedent('''\
    import sys

    def crunch(n):
        """Pure Python loop: all its time is its own (tottime)."""
        x = 0
        for i in range(n):
            x += i * i
        return x

    def helper(k):
        return k + 1

    def steady():
        return crunch(20000)

    def recurse(k):
        if k == 0:
            return crunch(100)
        return recurse(k - 1)

    def main(slow=20000, helpers=5):
        steady()
        crunch(slow)
        for i in range(helpers):
            helper(i)
        recurse(4)
        return sorted([3, 1, 2])

    if __name__ == "__main__":
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
''')

_counter = [0]


def _module(tmp_path):
    _counter[0] += 1
    path = tmp_path / "workload.py"
    if not path.exists():
        path.write_text(WORKLOAD)
    spec = importlib.util.spec_from_file_location("workload_%d" % _counter[0], str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_profile(tmp_path, name, impl="cprofile", slow=20000, helpers=5, cpu=False):
    """Run the workload once under *impl*; return the .prof path. *cpu*:
    timed by the thread's CPU clock, which a busy machine's preemptions
    leave out (a 0.1 s pause in a 5 ms crunch on a loaded CI machine)."""
    mod = _module(tmp_path)
    if impl == "cprofile":
        import cProfile
        prof = cProfile.Profile(time.thread_time) if cpu else cProfile.Profile()
    else:
        try:
            import fastprof
            prof = fastprof.Profile(callpaths=True, clock="cpu" if cpu else "wall")
        except Exception as exc:
            pytest.skip("fastprof C module not available: %s" % exc)
    prof.runcall(mod.main, slow, helpers)
    out = str(tmp_path / name)
    prof.dump_stats(out)
    return out


@pytest.fixture(params=["cprofile", "fastprof"])
def impl(request):
    return request.param


def run_cli(*args, cwd=None, encoding="utf-8"):
    """`python -m fastprof.cli ARGS` in a child: (returncode, stdout, stderr)."""
    res = subprocess.run([sys.executable, "-m", "fastprof.cli"] + [str(a) for a in args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                         env=subprocess_env(PYTHONIOENCODING=encoding), cwd=cwd)
    return res.returncode, res.stdout, res.stderr


def call(capsys, *args):
    """cli.main in-process: (returncode, stdout, stderr)."""
    rc = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


_UNITS = {"ns": 1e-9, "\u00b5s": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
TIME_RE = r"-?\d+(?:\.\d+)? (?:ns|\u00b5s|us|ms|s)"


def parse_time(text):
    if text.strip() in ("0 s", "0"):
        return 0.0
    value, unit = text.split()
    return float(value) * _UNITS[unit]


def table_rows(out):
    """The function table of `fastprof view`: header line + rows, as lists of cells."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("tottime"))
    rows = []
    for ln in lines[start + 1:]:
        if not ln.strip():
            break
        rows.append(ln)
    return lines[start], rows


def cells(row):
    """tottime, %, cumtime, %, calls, tot/call, cum/call, function."""
    m = re.match(r"^\s*(%s)\s+(\S+)\s+(%s)\s+(\S+)\s+(\S+)\s+(%s)\s+(%s)\s+(.*)$" % ((TIME_RE,) * 4), row)
    assert m, "not a table row: %r" % row
    return list(m.groups())


# ---------------------------------------------------------------- view

def test_view_table(tmp_path, capsys, impl):
    prof = make_profile(tmp_path, "w.prof", impl)
    rc, out, err = call(capsys, "view", prof, "-n", "0")
    assert rc == 0 and err == ""
    stats = load_profile(prof).stats
    total = sum(v[2] for v in stats.values())
    first = out.splitlines()[0]
    assert first.startswith(prof + ": total profiled time ")
    shown_total = parse_time(re.search(r"total profiled time (%s)" % TIME_RE, first).group(1))
    assert shown_total == pytest.approx(total, rel=0.01)
    assert "%d functions" % len(stats) in first
    header, rows = table_rows(out)
    assert len(rows) == len(stats)
    # right-aligned columns: every row ends each numeric column where its header does
    ends = [m.end() for m in re.finditer(r"\S+", header)][:7]
    for row in rows:
        for end in ends:
            assert row[end - 1] != " " and (end == len(row) or row[end] == " "), (header, row)
    parsed = [cells(r) for r in rows]
    # sorted by tottime, the percents add up to 100
    tts = [parse_time(c[0]) for c in parsed]
    assert tts == sorted(tts, reverse=True)
    assert sum(float(c[1].rstrip("%").lstrip("<")) for c in parsed) == pytest.approx(100, abs=0.5)
    # numbers agree with pstats
    by_name = {c[7].split()[0]: c for c in parsed}
    crunch = [k for k in stats if k[2] == "crunch"][0]
    assert by_name["crunch"][4] == str(stats[crunch][1])
    assert parse_time(by_name["crunch"][0]) == pytest.approx(stats[crunch][2], rel=0.01)
    rec = [k for k in stats if k[2] == "recurse"][0]
    assert by_name["recurse"][4] == "%d/%d" % (stats[rec][1], stats[rec][0])  # 5/1 as pstats
    crunch_row = [r for r in rows if re.search(r"\scrunch  ", r)][0]
    assert crunch_row.endswith("workload.py:3")  # name, then file:line


def test_view_sort_limit_filter(tmp_path, capsys):
    prof = make_profile(tmp_path, "w.prof")
    rc, out, _ = call(capsys, "view", prof, "-s", "cumulative", "-n", "4")
    assert rc == 0
    _h, rows = table_rows(out)
    cts = [parse_time(cells(r)[2]) for r in rows]
    assert len(rows) == 4 and cts == sorted(cts, reverse=True)
    assert "4 of %d functions shown (sorted by cumtime" % len(load_profile(prof).stats) in out
    rc, out, _ = call(capsys, "view", prof, "-s", "calls")
    calls = [int(cells(r)[4].split("/")[0].replace(",", "")) for r in table_rows(out)[1]]
    assert calls == sorted(calls, reverse=True)
    rc, out, _ = call(capsys, "view", prof, "-s", "name", "-n", "0")
    names = [cells(r)[7].split()[0] for r in table_rows(out)[1]]
    assert names == sorted(names)
    rc, out, _ = call(capsys, "view", prof, "--filter", "^(crunch|helper)$")
    names = sorted(cells(r)[7].split()[0] for r in table_rows(out)[1])
    assert names == ["crunch", "helper"]
    rc, out, _ = call(capsys, "view", prof, "--filter", r"workload\.py:\d+\(rec")
    assert [cells(r)[7].split()[0] for r in table_rows(out)[1]] == ["recurse"]


def test_view_callers_and_callees(tmp_path, capsys):
    prof = make_profile(tmp_path, "w.prof")
    rc, out, _ = call(capsys, "view", prof, "--callers", "^crunch$")
    assert rc == 0
    assert out.splitlines()[2].startswith("crunch  ")
    callers = re.findall(r"^\s+[\d,/]+\s+%s\s+%s\s+\S+\s+(\w+)  " % (TIME_RE, TIME_RE), out, re.M)
    assert sorted(callers) == ["main", "recurse", "steady"]
    rc, out, _ = call(capsys, "view", prof, "--callees", "^main$")
    callees = re.findall(r"^\s+[\d,/]+\s+%s\s+%s\s+\S+\s+(\S+)" % (TIME_RE, TIME_RE), out, re.M)
    assert set(callees) == {"steady", "crunch", "helper", "recurse", "<built-in"}
    # the helper edge shows 5 calls
    assert re.search(r"^\s+5\s+%s\s+%s\s+\S+\s+helper  " % (TIME_RE, TIME_RE), out, re.M)
    rc, out, err = call(capsys, "view", prof, "--callers", "no_such_function")
    assert rc == 1 and out == ""
    assert err.startswith("fastprof view: no function matches /no_such_function/")
    assert len(err.strip().splitlines()) == 1


def test_view_tree(tmp_path, capsys, impl):
    prof = make_profile(tmp_path, "w.prof", impl)
    rc, out, _ = call(capsys, "view", prof, "--tree", "--min-percent", "0")
    assert rc == 0
    assert ("estimated from the caller graph" in out) == (impl == "cprofile")
    lines = out.splitlines()
    main = [ln for ln in lines if re.search(r"\smain \(", ln)][0]
    indent = len(main.split("main (")[0]) - len(main.split("main (")[0].rstrip())
    steady = [ln for ln in lines if re.search(r"\ssteady \(", ln)][0]
    assert len(steady.split("steady (")[0]) - len(steady.split("steady (")[0].rstrip()) == indent + 2
    assert "  call path" in out


@pytest.mark.parametrize("value", ["150", "-1"])
def test_min_percent_has_one_check_and_one_message(tmp_path, capsys, value):
    # fastprof view / convert, python -m fastprof and the API (view.tree_lines,
    # exports) all run arguments.check_percent: the same words, with the
    # option's or the keyword's name
    from fastprof import exports
    from fastprof.modes import run_command
    from fastprof.tools import view
    prof = make_profile(tmp_path, "w.prof")
    said = "must be between 0 and 100, not %s" % value
    for args in (["view", prof, "--tree"], ["convert", prof, "-o", tmp_path / "x.html"]):
        rc, out, err = call(capsys, *(args + ["--min-percent", value]))
        assert rc == 2 and out == ""
        assert err.strip() == "fastprof %s: error: --min-percent %s" % (args[0], said)
    assert not (tmp_path / "x.html").exists()
    assert run_command.main(["--min-percent", value, str(tmp_path / "w.prof")]) == 2
    assert capsys.readouterr().err.strip() == "python -m fastprof: error: --min-percent " + said
    data = load_profile(prof)
    with pytest.raises(ValueError, match="^min_percent " + said):
        view.tree_lines(data, min_percent=float(value))
    with pytest.raises(ValueError, match="^min_percent " + said):
        exports.export(data, tmp_path / "y.html", min_percent=float(value))
    with pytest.raises(ValueError, match="^min_percent " + said):
        exports.render(data, "collapsed", min_percent=float(value))


def test_view_tree_limit(tmp_path, capsys):
    prof = make_profile(tmp_path, "w.prof")
    rc, out, _ = call(capsys, "view", prof, "--tree", "--min-percent", "0", "-n", "3")
    assert rc == 0
    body = out.split("call path\n")[1]
    assert len([ln for ln in body.splitlines() if re.match(r"^\s*%s" % TIME_RE, ln)]) == 3
    assert re.search(r"3 of \d+ lines shown", out)


def test_view_on_an_ascii_terminal(tmp_path):
    prof = make_profile(tmp_path, "w.prof")
    rc, out, err = run_cli("view", prof, encoding="ascii")
    assert rc == 0 and err == ""
    assert "\u00b5" not in out and re.search(r"\d us ", out)


def test_view_errors(tmp_path, capsys):
    prof = make_profile(tmp_path, "w.prof")
    rc, out, err = call(capsys, "view", prof, "-s", "bogus")
    assert rc == 2 and "unknown sort 'bogus'" in err
    rc, out, err = call(capsys, "view", prof, "--thread", "1")
    assert rc == 2 and err.count("\n") == 1 and "no thread '1'" in err
    rc, out, err = call(capsys, "view", prof, "--filter", "(")
    assert rc == 2 and "bad regular expression" in err


def test_view_threads(tmp_path, capsys):
    k1, k2 = ("/t.py", 1, "worker"), ("/t.py", 9, "main")
    t1 = {k1: (1, 1, 0.5, 0.5, {})}
    t2 = {k2: (1, 1, 0.25, 0.25, {})}
    data = ProfileData({k1: t1[k1], k2: t2[k2]},
                       threads=[{"id": 0, "ident": 11, "name": "MainThread", "stats": t2},
                                {"id": 1, "ident": 12, "name": "worker-1", "stats": t1}])
    path = str(tmp_path / "t.prof")
    write_profile(path, data)
    rc, out, _ = call(capsys, "view", path)
    assert "2 threads recorded" in out and "1=worker-1" in out
    rc, out, _ = call(capsys, "view", path, "--thread", "worker-1")
    assert rc == 0 and "thread worker-1 (id 1)" in out
    assert [cells(r)[7].split()[0] for r in table_rows(out)[1]] == ["worker"]
    rc, out, _ = call(capsys, "view", path, "--thread", "0")
    assert [cells(r)[7].split()[0] for r in table_rows(out)[1]] == ["main"]


# ---------------------------------------------------------------- diff

def test_diff_of_a_profile_with_itself(tmp_path, capsys, impl):
    prof = make_profile(tmp_path, "w.prof", impl)
    rc, out, err = call(capsys, "diff", prof, prof)
    assert rc == 0 and err == ""
    assert "No change" in out
    copy = str(tmp_path / "copy.prof")
    with open(prof, "rb") as a, open(copy, "wb") as b:
        b.write(a.read())
    rc, out, _ = call(capsys, "diff", prof, copy, "-s", "calls")
    assert "No change" in out


def _diff_rows(out):
    lines = out.splitlines()
    # the table header, not the "base FILE total ..." line at the top
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("base ") and i > 1)
    rows = []
    for ln in lines[start + 1:]:
        if not ln.strip():
            break
        rows.append(ln)
    return rows


def test_diff_ranks_the_slowed_function_first(tmp_path, capsys, impl):
    base = make_profile(tmp_path, "base.prof", impl, slow=20000, cpu=True)
    new = make_profile(tmp_path, "new.prof", impl, slow=600000, cpu=True)
    rc, out, _ = call(capsys, "diff", base, new)
    assert rc == 0 and "No change" not in out
    rows = _diff_rows(out)
    # crunch is the one that got slower: first, with a big positive change
    assert re.search(r"\scrunch  .*workload\.py:3$", rows[0]), out
    m = re.match(r"^\s*(%s)\s+(%s)\s+\+(%s)\s+\+(\d+)%%\s+(\S+) -> (\S+)\s" % (TIME_RE, TIME_RE, TIME_RE), rows[0])
    assert m, rows[0]
    b, n, delta = parse_time(m.group(1)), parse_time(m.group(2)), parse_time(m.group(3))
    assert n > 5 * b and delta == pytest.approx(n - b, rel=0.02, abs=2e-6)
    assert int(m.group(4)) > 400
    assert m.group(5) == m.group(6)  # same number of calls
    # the totals line says the whole run got slower
    assert re.search(r"change: total \+%s \(\+\d+%%\)" % TIME_RE, out)
    # and reversed, crunch got faster
    rc, out, _ = call(capsys, "diff", new, base)
    assert re.search(r"\s-%s\s+-\d+(\.\d)?%%\s.*crunch  " % TIME_RE, _diff_rows(out)[0])


def test_diff_by_calls(tmp_path, capsys):
    base = make_profile(tmp_path, "base.prof", helpers=5)
    new = make_profile(tmp_path, "new.prof", helpers=500)
    # no noise allowance: every timed row counts as changed, whatever the
    # machine's speed, so "-n 1" leaves some out
    rc, out, _ = call(capsys, "diff", base, new, "-s", "calls", "-n", "1",
                      "--threshold", "0", "--min-time", "0")
    rows = _diff_rows(out)
    assert len(rows) == 1
    assert re.match(r"^\s*5\s+500\s+\+495\s+\+9900%\s+5 -> 500\s+helper  ", rows[0]), rows[0]
    assert "1 of " in out and "-n 0 shows all" in out


def test_diff_new_gone_and_moved_functions(tmp_path, capsys):
    a, b = ("/p.py", 1, "kept"), ("/p.py", 5, "old_only")
    base = ProfileData({a: (1, 1, 0.1, 0.1, {}), b: (1, 1, 0.2, 0.2, {}),
                        ("/p.py", 20, "moved"): (2, 2, 0.3, 0.3, {})})
    new = ProfileData({a: (1, 1, 0.1, 0.1, {}), ("/p.py", 9, "new_only"): (1, 1, 0.05, 0.05, {}),
                       ("/p.py", 24, "moved"): (2, 2, 0.31, 0.31, {})})
    pb, pn = str(tmp_path / "b.prof"), str(tmp_path / "n.prof")
    write_profile(pb, base)
    write_profile(pn, new)
    rc, out, _ = call(capsys, "diff", pb, pn)
    rows = _diff_rows(out)
    assert "old_only" in rows[0] and "[gone]" in rows[0] and "-100%" in rows[0]
    assert "new_only" in rows[1] and "[new]" in rows[1] and " new " in rows[1]
    # a first line that moved is no change by itself (its time is within noise)
    assert not [r for r in rows if "moved" in r]
    assert "kept" not in out.split("change:")[1]  # unchanged rows are not listed
    # shown (any time change counts), its row says where it was
    rc, out, _ = call(capsys, "diff", pb, pn, "--threshold", "0", "--min-time", "0")
    moved = [r for r in _diff_rows(out) if "moved" in r]
    assert len(moved) == 1 and "[moved from line 20]" in moved[0] and "p.py:24" in moved[0]


# ---------------------------------------------------------------- merge

def test_merge_n_copies_gives_n_times(tmp_path, capsys, impl):
    prof = make_profile(tmp_path, "w.prof", impl)
    out = str(tmp_path / "all.prof")
    rc, _o, err = call(capsys, "merge", prof, prof, prof, "-o", out)
    assert rc == 0 and "merged 3 profiles into" in err
    one, three = load_profile(prof), load_profile(out)
    assert set(three.stats) == set(one.stats)
    for key, (cc, nc, tt, ct, callers) in one.stats.items():
        cc3, nc3, tt3, ct3, callers3 = three.stats[key]
        assert (cc3, nc3) == (3 * cc, 3 * nc)
        assert tt3 == pytest.approx(3 * tt) and ct3 == pytest.approx(3 * ct)
        assert set(callers3) == set(callers)
        for c, edge in callers.items():
            assert callers3[c][:2] == (3 * edge[0], 3 * edge[1])
            assert callers3[c][2:] == pytest.approx((3 * edge[2], 3 * edge[3]))
    # pstats reads the sum like any cProfile file
    assert pstats.Stats(out).total_calls == 3 * pstats.Stats(prof).total_calls
    if impl == "fastprof":
        # call paths are merged path by path: same tree, three times the numbers
        assert three.callpaths is not None
        assert three.callpaths.functions == one.callpaths.functions
        assert [n[:2] for n in three.callpaths.nodes] == [n[:2] for n in one.callpaths.nodes]
        for n1, n3 in zip(one.callpaths.nodes, three.callpaths.nodes):
            assert n3[2] == 3 * n1[2] and n3[3] == pytest.approx(3 * n1[3]) and n3[4] == pytest.approx(3 * n1[4])
        assert three.clock == one.clock
    else:
        assert three.callpaths is None


def test_merge_of_one_profile_says_profile(tmp_path, capsys):
    prof = make_profile(tmp_path, "w.prof")
    rc, _o, err = call(capsys, "merge", prof, "-o", tmp_path / "one.prof")
    assert rc == 0 and "merged 1 profile into " in err, err


def test_merge_call_path_trees(tmp_path, capsys):
    f = "/m.py"
    main, a, b = (f, 1, "main"), (f, 2, "a"), (f, 3, "b")
    p1 = ProfileData({main: (1, 1, 0.1, 0.3, {}), a: (1, 1, 0.2, 0.2, {main: (1, 1, 0.2, 0.2)})},
                     callpaths=CallPaths([main, a], [(-1, 0, 1, 0.1, 0.3), (0, 1, 1, 0.2, 0.2)]))
    p2 = ProfileData({main: (1, 1, 0.1, 0.5, {}), b: (2, 2, 0.4, 0.4, {main: (2, 2, 0.4, 0.4)})},
                     callpaths=CallPaths([b, main], [(-1, 1, 1, 0.1, 0.5), (0, 0, 2, 0.4, 0.4)]))
    paths = []
    for i, p in enumerate((p1, p2)):
        paths.append(str(tmp_path / ("p%d.prof" % i)))
        write_profile(paths[-1], p)
    out = str(tmp_path / "m.prof")
    rc, _o, err = call(capsys, "merge", paths[0], paths[1], "-o", out)
    assert rc == 0
    m = load_profile(out)
    cp = m.callpaths
    nodes = {tuple(cp.functions[x][2] for x in _path(cp, i)): n for i, n in enumerate(cp.nodes)}
    assert set(nodes) == {("main",), ("main", "a"), ("main", "b")}
    assert nodes[("main",)][2:] == (2, pytest.approx(0.2), pytest.approx(0.8))
    assert nodes[("main", "b")][2:] == (2, pytest.approx(0.4), pytest.approx(0.4))
    assert m.stats[main][:4] == (2, 2, pytest.approx(0.2), pytest.approx(0.8))
    # one input without call paths: the sum has none, and says so
    plain = str(tmp_path / "plain.prof")
    write_profile(plain, ProfileData(p1.stats))
    rc, _o, err = call(capsys, "merge", paths[0], plain, "-o", str(tmp_path / "mixed.prof"))
    assert rc == 0 and "not every input has call paths" in err
    assert load_profile(str(tmp_path / "mixed.prof")).callpaths is None


def _path(cp, i):
    out = []
    while i >= 0:
        out.append(cp.nodes[i][1])
        i = cp.nodes[i][0]
    return out[::-1]


def test_merge_to_other_formats_and_clock_warning(tmp_path, capsys):
    k = ("/c.py", 1, "f")
    a = str(tmp_path / "a.prof")
    b = str(tmp_path / "b.prof")
    write_profile(a, ProfileData({k: (1, 1, 0.1, 0.1, {})}, clock="cpu"))
    write_profile(b, ProfileData({k: (1, 1, 0.1, 0.1, {})}, clock="tsc"))
    rc, _o, err = call(capsys, "merge", a, b, "-o", str(tmp_path / "ab.collapsed"))
    assert rc == 0 and "different clocks" in err
    assert (tmp_path / "ab.collapsed").read_text() == "f (/c.py:1) 200000\n"
    # an unknown extension means pstats (as cProfile's -o)
    rc, _o, _e = call(capsys, "merge", a, b, "-o", str(tmp_path / "ab.out"))
    assert rc == 0 and load_profile(str(tmp_path / "ab.out")).stats[k][1] == 2


# ---------------------------------------------------------------- convert

def test_convert_every_format(tmp_path, capsys, impl):
    prof = make_profile(tmp_path, "w.prof", impl)
    for name, marker in [("w.callgrind", "# callgrind format"), ("w.speedscope.json", '{"$schema"'),
                         ("w.collapsed", "/workload.py:21) "), ("w.html", "<!DOCTYPE html>"),
                         ("copy.pstats", None)]:
        out = tmp_path / name
        rc, _o, err = call(capsys, "convert", prof, "-o", out)
        assert rc == 0, err
        if marker:
            assert marker in out.read_text(encoding="utf-8")
        assert ("estimated from the caller graph" in err) == (
            impl == "cprofile" and name.endswith((".speedscope.json", ".collapsed", ".html")))
    assert load_profile(str(tmp_path / "copy.pstats")).stats == load_profile(prof).stats
    rc, _o, err = call(capsys, "convert", prof, "--to", "collapsed", "-o", tmp_path / "w.txt")
    assert rc == 0 and (tmp_path / "w.txt").read_text() == (tmp_path / "w.collapsed").read_text()
    rc, out, err = call(capsys, "convert", prof, "--to", "callgrind", "-o", "-")
    assert rc == 0 and out == (tmp_path / "w.callgrind").read_text()


def test_convert_refuses_bad_outputs(tmp_path, capsys):
    prof = make_profile(tmp_path, "w.prof")
    before = open(prof, "rb").read()
    os.symlink(prof, str(tmp_path / "link.prof"))
    for target in (prof, str(tmp_path / "link.prof"), os.path.join(str(tmp_path), ".", "w.prof")):
        rc, _o, err = call(capsys, "convert", prof, "-o", target)
        assert rc == 2 and "refusing to overwrite the input file" in err
    rc, _o, err = call(capsys, "merge", prof, prof, "-o", prof)
    assert rc == 2 and "refusing to overwrite the input file" in err
    assert open(prof, "rb").read() == before
    # a name no format claims is pstats, as python -m cProfile -o writes it
    rc, _o, err = call(capsys, "convert", prof, "-o", tmp_path / "out.txt")
    assert rc == 0 and load_profile(str(tmp_path / "out.txt")).stats == load_profile(prof).stats
    rc, _o, err = call(capsys, "convert", prof, "--to", "svg", "-o", tmp_path / "out.svg")
    assert rc == 2 and "unknown format 'svg'" in err
    rc, _o, err = call(capsys, "convert", prof, "-o", tmp_path / "no" / "such" / "dir.html")
    assert rc == 2 and "does not exist" in err
    rc, _o, err = call(capsys, "convert", prof, "-o", "-")
    assert rc == 2 and "needs --to" in err


# ---------------------------------------------------------------- bad input, help, run

def _bad_inputs(tmp_path):
    good = make_profile(tmp_path, "good.prof")
    raw = open(good, "rb").read()
    files = {
        "missing": str(tmp_path / "missing.prof"),
        "directory": str(tmp_path),
        "empty": tmp_path / "empty.prof",
        "text": tmp_path / "text.prof",
        "truncated": tmp_path / "truncated.prof",
        "not-a-dict": tmp_path / "list.prof",
        "bad-trailer": tmp_path / "trailer.prof",
    }
    files["empty"].write_bytes(b"")
    files["text"].write_text("this is not a profile\n")
    files["truncated"].write_bytes(raw[: len(raw) // 2])
    files["not-a-dict"].write_bytes(marshal.dumps([1, 2, 3]))
    files["bad-trailer"].write_bytes(raw + b"\x00garbage")
    return good, {k: str(v) for k, v in files.items()}


@pytest.mark.parametrize("command", ["view", "diff-base", "diff-new", "merge", "convert"])
def test_bad_input_is_one_line_exit_2(tmp_path, command):
    good, bad = _bad_inputs(tmp_path)
    for kind, path in bad.items():
        args = {
            "view": ["view", path],
            "diff-base": ["diff", path, good],
            "diff-new": ["diff", good, path],
            "merge": ["merge", good, path, "-o", str(tmp_path / "m.prof")],
            "convert": ["convert", path, "-o", str(tmp_path / "c.html")],
        }[command]
        rc, out, err = run_cli(*args)
        assert rc == 2, (kind, out, err)
        assert "Traceback" not in err and err.count("\n") == 1, (kind, err)
        assert err.startswith("fastprof %s: error: " % args[0]) and path in err, (kind, err)
        assert out == ""
    assert not os.path.exists(str(tmp_path / "m.prof")) and not os.path.exists(str(tmp_path / "c.html"))


@pytest.mark.parametrize("command", ["view", "diff", "merge", "convert"])
def test_every_command_has_help(command):
    rc, out, err = run_cli(command, "--help")
    assert rc == 0 and err == ""
    assert out.startswith("usage: fastprof %s" % command)


def test_top_level_help_lists_commands():
    rc, out, _ = run_cli("--help")
    assert rc == 0
    for command in ("view", "diff", "merge", "convert", "run"):
        assert re.search(r"^\s+%s\s+\S" % command, out, re.M), command
    rc, _out, err = run_cli()
    assert rc == 2 and "usage: fastprof" in err
    rc, _out, err = run_cli("frobnicate")
    assert rc == 2 and "invalid choice" in err


def test_run_delegates_to_the_profiler_cli(tmp_path):
    try:
        import fastprof  # noqa: F401
        from fastprof.modes import run_command as _rc  # noqa: F401
    except Exception as exc:
        pytest.skip("fastprof's run CLI is not available: %s" % exc)
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    out = tmp_path / "run.prof"
    rc, stdout, err = run_cli("run", "-o", out, script, "30000", cwd=str(tmp_path))
    assert rc == 0, err
    stats = load_profile(str(out)).stats
    assert any(k[2] == "crunch" and v[1] == 3 for k, v in stats.items())
    rc, stdout, err = run_cli("run", "--help")
    assert rc == 0 and "script.py" in stdout
    rc, stdout, err = run_cli("run", str(tmp_path / "missing.py"))
    assert rc == 2 and "Traceback" not in err
