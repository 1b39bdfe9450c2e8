"""fastprof check BASE NEW: exact call counts of two profiles, exit 0 / 1 / 2.

The oracle is cProfile on the same interpreter: a cProfile file and a
fastprof file of the same program have the same counts."""

import cProfile
import json
import os
import shutil

import pytest

from helpers import USING_CPROFILE, run_python

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="the fastprof command")

PROG = """\
import sys

def helper(x):
    return x + 1

class Box:
    def get(self, i):
        return helper(i)

def main(n):
    b = Box()
    return sum(b.get(i) for i in range(n)) + len(str(n))

main(int(sys.argv[1]))
"""


def profile(tmp_path, name, n, tool="fastprof", prog="prog.py"):
    out = tmp_path / name
    r = run_python(["-m", tool, "-o", str(out), prog, str(n)], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    return str(out)


def check(*args):
    return run_python(["-m", "fastprof.cli", "check"] + [str(a) for a in args])


@pytest.fixture
def prog(tmp_path):
    (tmp_path / "prog.py").write_text(PROG)
    return tmp_path


def test_same_program_passes_and_matches_cprofile(prog):
    a = profile(prog, "a.prof", 50)
    b = profile(prog, "b.prof", 50)
    c = profile(prog, "c.prof", 50, tool="cProfile")
    for base, new in ((a, b), (c, a), (a, c)):
        r = check(base, new)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "no call count changed" in r.stdout


def test_a_change_is_listed_biggest_first(prog):
    a = profile(prog, "a.prof", 50)
    b = profile(prog, "b.prof", 60)
    r = check(a, b)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("fastprof check: %s -> %s: " % (a, b))
    body = [line.split(None, 4) for line in lines[1:]]
    # helper, Box.get and their edges: 50 -> 60; the genexpr is resumed once more per item
    entries = {parts[-1]: parts[:4] for parts in body}
    assert entries["prog.py:helper"] == ["50", "->", "60", "(+10)"]
    assert entries["prog.py:Box.get -> prog.py:helper"] == ["50", "->", "60", "(+10)"]
    assert entries["prog.py:main.<locals>.<genexpr> -> prog.py:Box.get"] == ["50", "->", "60", "(+10)"]
    deltas = [int(p[3].strip("()+")) for p in body]
    assert deltas == sorted(deltas, reverse=True)
    assert "prog.py:main" not in entries          # called once in both
    # the same change seen by cProfile on both sides
    c1 = profile(prog, "c1.prof", 50, tool="cProfile")
    c2 = profile(prog, "c2.prof", 60, tool="cProfile")
    rc = check(c1, c2)
    assert rc.returncode == 1
    assert sorted(line.split()[:4] for line in rc.stdout.splitlines()[1:]) == sorted(p[:4] for p in body)
    assert "prog.py:get -> prog.py:helper" in rc.stdout    # no qualified names in cProfile files


def test_installs_in_two_places_compare(prog, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(str(prog / "prog.py"), str(other / "prog.py"))
    a = profile(prog, "a.prof", 50)
    b = profile(other, "b.prof", 50)
    r = check(a, b)
    assert r.returncode == 0, r.stdout


def test_tolerance(prog):
    a = profile(prog, "a.prof", 50)
    b = profile(prog, "b.prof", 52)   # +4%
    assert check(a, b).returncode == 1
    r = check(a, b, "--tolerance", "3")          # helper 50 -> 52: 2 > 1.5
    assert r.returncode == 1 and "prog.py:helper" in r.stdout
    r = check(a, b, "--tolerance", "4")          # 2 <= 2 (and the genexpr's 51 -> 53)
    assert r.returncode == 0 and "beyond the tolerance" in r.stdout, r.stdout
    r = check(a, b, "--tolerance", "4", "--c-tolerance", "0")   # no C count changed
    assert r.returncode == 0
    assert check(a, b, "--tolerance", "many").returncode == 2


def test_markdown_and_json(prog):
    a = profile(prog, "a.prof", 50)
    b = profile(prog, "b.prof", 60)
    r = check(a, b, "--format", "markdown")
    assert r.returncode == 1
    assert "**" in r.stdout and "| 50 | 60 | +10 | `prog.py:helper` |" in r.stdout
    r = check(a, b, "--format", "json", "--time")
    assert r.returncode == 1
    obj = json.loads(r.stdout)
    assert {"entry": "prog.py:helper", "old": 50, "new": 60} in obj["changed"]
    assert "noise" in obj and isinstance(obj["times"], list)


def test_time_uses_diffs_noise_rule(tmp_path):
    # the same counts, timed with two fake clocks: only --time fails
    from fastprof import Profile

    def work(n):
        return sum(range(n))

    def run(path, tick):
        t = [0.0]

        def clock():
            t[0] += tick
            return t[0]
        p = Profile(timer=clock)
        p.enable()
        work(10)
        p.disable()
        p.dump_stats(str(path))

    run(tmp_path / "a.prof", 1.0)
    run(tmp_path / "b.prof", 1.05)
    run(tmp_path / "c.prof", 2.0)
    a, b, c = (tmp_path / n for n in ("a.prof", "b.prof", "c.prof"))
    assert check(a, c).returncode == 0
    assert check(a, b, "--time").returncode == 0       # 5% < the 10% threshold
    r = check(a, c, "--time")
    assert r.returncode == 1 and "own time moved beyond noise" in r.stdout
    assert check(a, c, "--time", "--threshold", "150").returncode == 0


def _memory_profile(path, size):
    """A profile of build(), which makes 100 bytearrays of *size* bytes, with memory."""
    from fastprof import Profile

    def build():
        return [bytearray(size) for _ in range(100)]

    p = Profile(memory=True, builtins=False)
    p.enable()
    build()
    p.disable()
    p.dump_stats(str(path))
    return str(path)


def test_memory_fails_on_a_function_that_allocates_more(tmp_path):
    a = _memory_profile(tmp_path / "a.prof", 1000)
    b = _memory_profile(tmp_path / "b.prof", 1000)
    big = _memory_profile(tmp_path / "big.prof", 2000)
    r = check(a, b, "--memory")
    assert r.returncode == 0, r.stdout
    assert "no function allocates more than 10% and 1.0 KiB above its base" in r.stdout
    assert check(a, big).returncode == 0  # the counts alone did not change
    r = check(a, big, "--memory")
    assert r.returncode == 1, r.stdout
    assert "1 function allocates more than 10% and 1.0 KiB above its base:" in r.stdout
    assert "(+97.7 KiB)" in r.stdout and "build" in r.stdout
    assert check(big, a, "--memory").returncode == 0  # allocating less passes
    assert check(a, big, "--memory", "--memory-tolerance", "150").returncode == 0
    assert check(a, big, "--memory", "--memory-min", "200000").returncode == 0
    out = json.loads(check(a, big, "--memory", "--format", "json").stdout)
    (grown,) = out["memory"]
    assert grown["new"] - grown["old"] == 100 * 1000 and out["failed"] is True
    md = check(a, big, "--memory", "--format", "markdown").stdout
    assert "**1 function allocates more than 10% and 1.0 KiB above its base**" in md


def test_memory_needs_memory_in_both_files(tmp_path, prog):
    a = _memory_profile(tmp_path / "a.prof", 1000)
    plain = profile(prog, "plain.prof", 5)
    r = check(a, plain, "--memory")
    assert r.returncode == 2 and "plain.prof has no memory stats" in r.stderr, r.stderr
    r = check(a, a, "--memory-min", "5")
    assert r.returncode == 2 and "--memory-tolerance and --memory-min need --memory" in r.stderr


def test_bad_input_is_status_2(tmp_path, prog):
    a = profile(prog, "a.prof", 5)
    (tmp_path / "junk.prof").write_bytes(b"not a profile")
    for args in ((a, tmp_path / "missing.prof"), (a, tmp_path / "junk.prof"), (a,)):
        r = check(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
    r = check(a, tmp_path / "missing.prof")
    assert r.stderr.count("\n") == 1 and "missing.prof" in r.stderr


def test_gc_and_profiler_rows_are_left_out(tmp_path):
    from fastprof.data.profile_file import ProfileData
    from fastprof.tools.counts import counts_of_profile
    p = cProfile.Profile()
    p.enable()
    os.getcwd()
    p.disable()
    p.create_stats()
    stats = dict(p.stats)
    stats[("~", 0, "<gc>")] = (1, 1, 0.0, 0.0, {})
    table = counts_of_profile(ProfileData(stats))
    assert table == {"~:<built-in method posix.getcwd>": 1}


# -- a cProfile file against a fastprof file: keys several code objects share --

SHARED = """\
import sys
from collections import namedtuple
from dataclasses import dataclass


@dataclass
class Point:
    x: int
    y: int


@dataclass
class Size:
    w: int
    h: int


@dataclass
class Color:
    r: int
    g: int
    b: int


Pair = namedtuple("Pair", "a b")
Triple = namedtuple("Triple", "a b c")


class Box:
    def __init__(self):
        self._v = 0

    @property
    def value(self):
        return self._v

    @value.setter
    def value(self, v):
        self._v = v


def scale(v):
    return v * 2


def step(i):
    return Point(scale(i), i)


def main(n):
    box = Box()
    for i in range(n):
        p = step(i)
        Size(p.x, 2)
        box.value = box.value + 1
    for i in range(n * 10):
        Color(i, i, i)
        Pair(i, i)
    for i in range(3):
        Triple(1, 2, 3)
    return box.value


main(int(sys.argv[1]))
"""
# the real change: step() calls scale() twice
SHARED_CHANGED = SHARED.replace("return Point(scale(i), i)", "return Point(scale(i), scale(i))")


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The profiles of SHARED (cProfile's, fastprof's) and of SHARED_CHANGED
    (fastprof's), recorded once by this interpreter."""
    d = tmp_path_factory.mktemp("shared")
    (d / "prog.py").write_text(SHARED)
    files = {"c": profile(d, "c.prof", 100, tool="cProfile"), "f": profile(d, "f.prof", 100)}
    (d / "prog.py").write_text(SHARED_CHANGED)
    files["f2"] = profile(d, "f2.prof", 100)
    files["c2"] = profile(d, "c2.prof", 100, tool="cProfile")
    return files


def test_the_fastprof_file_keeps_each_code_object_of_a_shared_key(shared):
    # what the comparison needs: cProfile holds one of the three __init__
    # (<string>:2, one per dataclass), fastprof sums them and keeps each one's row
    from fastprof.data.profile_file import load_profile
    c, f = load_profile(shared["c"]), load_profile(shared["f"])
    assert c.pstats_only and not f.pstats_only
    init = next(k for k in f.shared_keys if k[0] == "<string>" and k[2] == "__init__")
    parts = f.shared_keys[init]
    assert sorted(row[1] for _q, row in parts) == [100, 100, 1000]
    assert f.stats[init][1] == 1200 and c.stats[init][1] in (100, 1000)
    assert [row[:2] for _q, row in parts if row[1] == c.stats[init][1] and
            set(row[4]) == set(c.stats[init][4])] != []
    lam = next(k for k in f.shared_keys if k[2] == "<lambda>")   # the namedtuples' __new__
    assert sorted(row[1] for _q, row in f.shared_keys[lam]) == [3, 1000]

    def counts(row):
        return row[:2], {caller: edge[:2] for caller, edge in row[4].items()}
    # cProfile's row of each shared key is one code object's: calls and callers
    for key, parts in f.shared_keys.items():
        assert counts(c.stats[key]) in [counts(row) for _q, row in parts], key


@pytest.mark.parametrize("order", ["cprofile_first", "fastprof_first"])
def test_check_between_cprofile_and_fastprof_files_sees_no_change(shared, order):
    base, new = (shared["c"], shared["f"]) if order == "cprofile_first" else (shared["f"], shared["c"])
    r = check(base, new)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no call count changed" in r.stdout
    # and says how the keys cProfile could not tell apart were compared
    assert "is a cProfile file" in r.stdout and "<string>:2(__init__) of 3" in r.stdout, r.stdout
    obj = json.loads(check(base, new, "--format", "json").stdout)
    assert not obj["failed"]
    kept = {k["function"]: k for k in obj["cprofile_kept"]}
    assert kept["<string>:2(__init__)"]["code_objects"] == 3
    assert all(k["exact"] for k in kept.values())
    assert "is a cProfile file" in check(base, new, "--format", "markdown").stdout


@pytest.mark.parametrize("order", ["cprofile_first", "fastprof_first"])
def test_diff_between_cprofile_and_fastprof_files_sees_no_change(shared, order):
    base, new = (shared["c"], shared["f"]) if order == "cprofile_first" else (shared["f"], shared["c"])
    # calls only: the two profilers' times differ (their own costs)
    r = run_python(["-m", "fastprof.cli", "diff", base, new, "-s", "calls", "-n", "0",
                    "--threshold", "1e9", "--min-time", "1000"])
    assert r.returncode == 0, r.stderr
    assert "No change beyond noise" in r.stdout, r.stdout
    assert "[new]" not in r.stdout and "[gone]" not in r.stdout
    assert "is a cProfile file" in r.stdout


def test_a_property_getter_and_setter_pair_by_name_file_and_line(shared):
    from fastprof.data.profile_file import load_profile
    from fastprof.tools import diff
    c, f = load_profile(shared["c"]), load_profile(shared["f"])
    for a, b in ((c, f), (f, c)):
        changes = diff.diff_stats(a.stats, b.stats, a.qualnames, b.qualnames, a.paths, b.paths)
        values = [(ch.base_key, ch.new_key) for ch in changes if ch.key[2] == "value"]
        assert len(values) == 2 and all(x == y for x, y in values), values


def test_a_real_change_against_a_cprofile_baseline_is_reported(shared):
    more, fewer = ["100", "->", "200", "(+100)"], ["200", "->", "100", "(-100)"]
    for base, new, want in ((shared["c"], shared["f2"], more), (shared["f2"], shared["c"], fewer),
                            (shared["c2"], shared["f"], fewer)):
        r = check(base, new)
        assert r.returncode == 1, r.stdout
        entries = {line.split(None, 4)[-1]: line.split()[:4] for line in r.stdout.splitlines()[1:]
                   if not line.startswith("note:")}
        assert entries == {"prog.py:scale": want, "prog.py:step -> prog.py:scale": want}, r.stdout
        r = run_python(["-m", "fastprof.cli", "diff", base, new, "-s", "calls", "-n", "0",
                        "--threshold", "1e9", "--min-time", "1000"])
        assert r.returncode == 0, r.stderr
        rows = [line for line in r.stdout.splitlines() if " -> " in line]
        assert len(rows) == 1 and "scale  prog.py:" in rows[0], r.stdout


def _shared_key_files(tmp_path, cprofile_row):
    """A fastprof file whose key K sums two code objects (A called by f 10
    times, B by g 5 times) and a cProfile file holding *cprofile_row* for K."""
    from fastprof.data.profile_file import ProfileData, write_profile
    k, f, g = ("<string>", 2, "__init__"), ("/m.py", 1, "f"), ("/m.py", 5, "g")
    a = (10, 10, 1.0, 1.0, {f: (10, 10, 1.0, 1.0)})
    b = (5, 5, 0.5, 0.5, {g: (5, 5, 0.5, 0.5)})
    top = {f: (1, 1, 0.0, 1.0, {}), g: (1, 1, 0.0, 0.5, {})}
    summed = dict(top)
    summed[k] = (15, 15, 1.5, 1.5, {f: a[4][f], g: b[4][g]})
    write_profile(str(tmp_path / "f.prof"), ProfileData(summed, clock="tsc",
                                                          shared_keys={k: [("A", a), ("B", b)]}))
    kept = dict(top)
    kept[k] = cprofile_row
    write_profile(str(tmp_path / "c.prof"), ProfileData(kept))
    return str(tmp_path / "c.prof"), str(tmp_path / "f.prof")


def test_the_code_object_cprofile_holds_is_the_one_compared(tmp_path):
    g = ("/m.py", 5, "g")
    _shared_key_files(tmp_path, (5, 5, 0.5, 0.5, {g: (5, 5, 0.5, 0.5)}))   # B's row
    r = run_python(["-m", "fastprof.cli", "check", "c.prof", "f.prof"], cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout
    assert "f.prof sums them; 1 such key compared" in r.stdout and "closest" not in r.stdout
    # the same function changed: none matches; the closest (by its callers) is compared, and said
    _shared_key_files(tmp_path, (7, 7, 0.5, 0.5, {g: (7, 7, 0.5, 0.5)}))
    r = run_python(["-m", "fastprof.cli", "check", "c.prof", "f.prof"], cwd=str(tmp_path))
    assert r.returncode == 1
    assert "7 -> 5 (-2)" in r.stdout and "m.py:g -> <string>:__init__" in r.stdout, r.stdout
    assert "none of its 2 code objects in f.prof has the calls and callers c.prof holds; " \
           "compared with the closest (B)" in r.stdout, r.stdout


def test_a_file_that_sums_too_is_compared_as_it_is(tmp_path):
    # a pstats table of fastprof's sums (pstats.Stats(profile).dump_stats): no trailer, the sum
    f, g = ("/m.py", 1, "f"), ("/m.py", 5, "g")
    c, fp = _shared_key_files(tmp_path, (15, 15, 1.5, 1.5, {f: (10, 10, 1.0, 1.0), g: (5, 5, 0.5, 0.5)}))
    r = check(c, fp)
    assert r.returncode == 0 and "cProfile" not in r.stdout, r.stdout


def test_two_fastprof_files_compare_their_sums(shared, tmp_path):
    from fastprof.data.profile_file import load_profile
    from fastprof.tools import check as check_mod
    f = load_profile(shared["f"])
    assert check_mod.check(f, f).cprofile is None
    c, fp = _shared_key_files(tmp_path, (5, 5, 0.5, 0.5, {}))
    other = load_profile(fp)
    other.shared_keys = {}
    assert check_mod.check(load_profile(fp), other).changes == []


GARBAGE = """\
class Node:
    def __init__(self, other):
        self.other = other


def main():
    return [Node([i]) for i in range(100000)]


main()
"""


def test_garbage_collections_are_compared_as_cprofile_counts_them(tmp_path):
    # fastprof's <gc> row: cProfile has none (a collection's time is its
    # interrupted function's), so against a cProfile file it is folded back
    from fastprof.data.profile_file import load_profile
    (tmp_path / "prog.py").write_text(GARBAGE)
    c, f = profile(tmp_path, "c.prof", 0, tool="cProfile"), profile(tmp_path, "f.prof", 0)
    assert load_profile(f).stats[("~", 0, "<gc>")][1] > 0
    for base, new in ((c, f), (f, c)):
        r = run_python(["-m", "fastprof.cli", "diff", base, new, "-s", "calls", "-n", "0",
                        "--threshold", "1e9", "--min-time", "1000"])
        assert "No change beyond noise" in r.stdout and "[new]" not in r.stdout, r.stdout
        assert "garbage collections of" in r.stdout, r.stdout
        r = check(base, new, "--time", "--threshold", "1e9")
        assert r.returncode == 0 and "garbage collections of" in r.stdout, r.stdout
        assert "garbage collections of" not in check(base, new).stdout   # (counts leave <gc> out)


def test_the_collectors_own_time_goes_back_to_the_function_it_interrupted():
    from fastprof.data.profile_file import ProfileData
    from fastprof.tools.diff import as_cprofile_keeps
    f, gc = ("/m.py", 1, "f"), ("~", 0, "<gc>")
    fastprof_file = ProfileData({f: (1, 1, 1.0, 2.0, {}), gc: (2, 2, 0.5, 0.5, {f: (2, 2, 0.5, 0.5)})})
    cprofile_file = ProfileData({f: (1, 1, 1.5, 2.0, {})}, pstats_only=True)
    base, new, terms = as_cprofile_keeps(cprofile_file, fastprof_file)
    assert new.stats == {f: (1, 1, 1.5, 2.0, {})} and base is cprofile_file
    assert (terms.side, terms.collections, terms.kept) == ("new", 2, [])
    assert fastprof_file.stats[gc]   # (a copy was changed)
