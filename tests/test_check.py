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
