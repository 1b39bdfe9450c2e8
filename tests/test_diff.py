"""``fastprof diff`` judges noise: times that moved within ``--threshold``
percent or under ``--min-time`` are unchanged; changed call counts (exact)
always count; rows come most significant first.

Exact checks use hand-made profiles; the end-to-end checks use two real
runs of one program (``python -m fastprof -o``), unchanged and changed.
"""
import os
import re
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402
from fastprof import cli  # noqa: E402
from fastprof.data.profile_file import ProfileData, write_profile  # noqa: E402
from fastprof.tools import diff


def call(capsys, *args):
    rc = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def rows_of(out):
    """The function names of the table rows, in order."""
    lines = out.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("base ") and i > 1)
    except StopIteration:
        return []
    names = []
    for ln in lines[start + 1:]:
        if not ln.strip():
            break
        names.append(re.search(r"(\S+)  \S+:\d+", ln).group(1) if ":" in ln else ln.split()[-1])
    return names


def unchanged_count(out):
    m = re.search(r"; (\d+) unchanged", out)
    return int(m.group(1)) if m else None


F = "/p.py"


def prof(tmp_path, name, rows):
    """rows: {funcname: (calls, tottime)} -> a written profile's path."""
    stats = {(F, i + 1, fn): (nc, nc, tt, tt, {}) for i, (fn, (nc, tt)) in enumerate(sorted(rows.items()))}
    path = str(tmp_path / name)
    write_profile(path, ProfileData(stats))
    return path


BASE = {"big": (10, 1.0), "mid": (5, 0.2), "tiny": (100, 0.001), "helper": (3, 0.0005)}


def test_noise_within_threshold_and_floor_is_unchanged(tmp_path, capsys):
    base = prof(tmp_path, "a.prof", BASE)
    # big +5% (< 10%), mid -8%, tiny +300% but 3 ms < 1% of 1.2 s: all noise
    new = prof(tmp_path, "b.prof", {"big": (10, 1.05), "mid": (5, 0.184), "tiny": (100, 0.004),
                                    "helper": (3, 0.0005)})
    rc, out, _ = call(capsys, "diff", base, new)
    assert rc == 0 and "No change beyond noise" in out and rows_of(out) == []
    # no threshold and no floor: every difference is a change again
    rc, out, _ = call(capsys, "diff", base, new, "--threshold", "0", "--min-time", "0")
    assert rows_of(out) == ["big", "mid", "tiny"] and unchanged_count(out) == 1
    # a floor given as a time, and a threshold: big (+50 ms) beyond 40 ms, 4%
    rc, out, _ = call(capsys, "diff", base, new, "--threshold", "4", "--min-time", "40ms")
    assert rows_of(out) == ["big"] and unchanged_count(out) == 3


def test_changed_calls_always_count_and_come_first(tmp_path, capsys):
    base = prof(tmp_path, "a.prof", BASE)
    # big 30% slower, same calls; mid called twice as often (+0.2 s);
    # helper one more call (tiny time): exact, so a change, but last
    new = prof(tmp_path, "b.prof", {"big": (10, 1.3), "mid": (10, 0.4), "tiny": (100, 0.001),
                                    "helper": (4, 0.0006)})
    rc, out, _ = call(capsys, "diff", base, new)
    assert rows_of(out) == ["mid", "big", "helper"]
    assert unchanged_count(out) == 1
    assert "most significant first" in out and "within \u00b110% or under 17.0 ms" in out
    rc, out, _ = call(capsys, "diff", base, new, "-s", "calls")
    assert rows_of(out)[:2] == ["mid", "helper"]


@pytest.mark.parametrize("args,msg", [(["--threshold", "x"], "not a percentage"),
                                      (["--threshold", "-3"], "not a percentage"),
                                      (["--min-time", "fast"], "not a time")])
def test_bad_noise_options_are_usage_errors(tmp_path, capsys, args, msg):
    base = prof(tmp_path, "a.prof", BASE)
    try:
        rc = cli.main(["diff", base, base] + args)
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2 and msg in capsys.readouterr().err


def test_parse_min_time():
    assert diff.parse_min_time("2ms") == ("s", 0.002)
    assert diff.parse_min_time("150us") == ("s", pytest.approx(150e-6))
    assert diff.parse_min_time("0.5") == ("s", 0.5)
    assert diff.parse_min_time("1%") == ("%", 1.0)
    noise = diff.make_noise(2.0, 4.0, 10, "1%")
    assert noise.threshold == 0.1 and noise.floor == pytest.approx(0.04)


# -- real runs ------------------------------------------------------------------

PROGRAM = textwrap.dedent('''\
    import sys

    def parse(line):
        return [int(x) for x in line.split(",")]

    def score(values):
        total = 0
        for v in values:
            total += v * v % 7
        return total

    def small(x):
        return x + 1

    def report(rows):
        return sum(small(r) for r in rows)

    def main(work, calls):
        lines = [",".join(str(i + j) for j in range(20)) for i in range(2000)]
        rows = [score(parse(line)) for line in lines]
        for _ in range(work):
            score(range(20000))
        for i in range(calls):
            small(i)
        return report(rows)

    main(int(sys.argv[1]), int(sys.argv[2]))
''')


def run_profile(tmp_path, name, work, calls, *options):
    script = tmp_path / "prog.py"
    if not script.exists():
        script.write_text(PROGRAM)
    out = str(tmp_path / name)
    proc = helpers.run_python(["-m", "fastprof", "-o", out] + list(options)
                              + [str(script), str(work), str(calls)])
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.skipif(helpers.USING_CPROFILE, reason="runs python -m fastprof")
def test_two_runs_of_the_same_program_are_unchanged(tmp_path, capsys):
    # CPU time: a loaded shared machine moves wall times by 40% between runs
    a = run_profile(tmp_path, "a.prof", 20, 1000, "--clock", "cpu")
    b = run_profile(tmp_path, "b.prof", 20, 1000, "--clock", "cpu")
    changes = diff.diff_stats(*diff_stats_args(a, b))
    assert len(changes) >= 10
    # the exact signal: no function's calls changed (<gc> included)
    assert not any(diff.calls_changed(c) for c in changes)
    # so only times can flag a function: the ones that moved beyond noise
    rc, out, _ = call(capsys, "diff", a, b, "-n", "0")
    changed = len(rows_of(out))
    noise = diff.make_noise(sum(c.base[2] for c in changes), sum(c.new[2] for c in changes))
    assert changed == sum(diff.beyond_noise(c, "tottime", noise) for c in changes)
    assert unchanged_count(out) == len(changes) - changed or "No change beyond noise" in out
    # How many real times move beyond the noise rule is the machine's doing
    # (none on an idle one; beside CI's ASan lane per-function CPU times move
    # 20-35%, and a preemption can double a 1 ms function): the rule itself is
    # judged on times no machine moves, a clock that only the program's events
    # advance, here running the second time 5% slower.
    a = fake_clock_profile(tmp_path, "fake_a.prof", 1e-6)
    b = fake_clock_profile(tmp_path, "fake_b.prof", 1.05e-6)
    changes = diff.diff_stats(*diff_stats_args(a, b))
    assert len(changes) >= 10 and not any(diff.calls_changed(c) for c in changes)
    bt, nt = sum(c.base[2] for c in changes), sum(c.new[2] for c in changes)
    assert nt == pytest.approx(1.05 * bt, rel=1e-6)
    # every function 5% slower, within the default 10%: unchanged, all of them
    rc, out, _ = call(capsys, "diff", a, b, "-n", "0")
    assert rc == 0 and "No change beyond noise" in out and rows_of(out) == [], out
    # beyond a 4% threshold: a change, for each function above the 1% floor
    rc, out, _ = call(capsys, "diff", a, b, "-n", "0", "--threshold", "4")
    noise = diff.make_noise(bt, nt, threshold=4)
    above = [c for c in changes if abs(c.new[2] - c.base[2]) > noise.floor]
    assert len(above) >= 2 and all(diff.beyond_noise(c, "tottime", noise) for c in above)
    assert len(rows_of(out)) == len(above), out
    assert unchanged_count(out) == len(changes) - len(above), out


# runs PROGRAM under a clock that only its events move (each reading TICK
# seconds after the last): its times depend on what it ran, not on the machine
FAKE_CLOCK_RUN = textwrap.dedent('''\
    import sys
    from fastprof import Profile
    tick, out, script = float(sys.argv[1]), sys.argv[2], sys.argv[3]
    with open(script) as f:
        code = compile(f.read(), script, "exec")
    sys.argv = sys.argv[3:]
    now = [0.0]

    def clock():
        now[0] += tick
        return now[0]

    prof = Profile(timer=clock)
    prof.enable()
    exec(code, {"__name__": "__main__"})
    prof.disable()
    prof.dump_stats(out)
''')


def fake_clock_profile(tmp_path, name, tick, work=20, calls=1000):
    script = tmp_path / "prog.py"
    if not script.exists():
        script.write_text(PROGRAM)
    out = str(tmp_path / name)
    proc = helpers.run_python(["-c", FAKE_CLOCK_RUN, repr(tick), out, str(script), str(work),
                               str(calls)])
    assert proc.returncode == 0, proc.stderr
    return out


def diff_stats_args(a, b):
    from fastprof.data.profile_file import load_profile
    return load_profile(a).stats, load_profile(b).stats


@pytest.mark.skipif(helpers.USING_CPROFILE, reason="runs python -m fastprof")
def test_a_real_change_is_reported_first(tmp_path, capsys):
    # raw times: diff's ranking is checked, and with the profiler's cost taken
    # out small()'s calls are left with next to no time of their own (the
    # calibrated cost per event is about all a call of an empty function costs)
    raw = "--no-compensate"
    base = run_profile(tmp_path, "a.prof", 5, 1000, raw)
    more_work = run_profile(tmp_path, "b.prof", 60, 1000, raw)   # score(): 12x the calls and time
    rc, out, _ = call(capsys, "diff", base, more_work)
    assert rows_of(out)[0] == "score", out
    more_calls = run_profile(tmp_path, "c.prof", 5, 200000, raw)  # small(): 200x the calls
    rc, out, _ = call(capsys, "diff", base, more_calls)
    assert rows_of(out)[0] == "small", out
    rc, out, _ = call(capsys, "diff", base, more_calls, "-s", "calls")
    assert rows_of(out)[0] == "small", out


@pytest.mark.parametrize("args,msg", [(["--threshold", "-3"], "'-3' is not a percentage >= 0"),
                                      (["--min-time", "fast"], "'fast' is not a time"),
                                      (["-s", "speed"], "unknown metric 'speed'")])
def test_diff_options_and_the_api_say_the_same(tmp_path, capsys, args, msg):
    # one check per argument (diff.parse_threshold, parse_min_time,
    # check_metric): the command line reports the API's own message
    base = prof(tmp_path, "a.prof", BASE)
    try:
        rc = cli.main(["diff", base, base] + args)
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2 and msg in capsys.readouterr().err
    with pytest.raises(ValueError, match=re.escape(msg)):
        if args[0] == "-s":
            diff.ranked([], metric=args[1])
        elif args[0] == "--threshold":
            diff.make_noise(1.0, 1.0, threshold=args[1])
        else:
            diff.make_noise(1.0, 1.0, min_time=args[1])


# -- line stats ----------------------------------------------------------------

def line_section(out):
    """{function text: [(line, base hits, new hits, time change text, source)]}
    of the diff's line section."""
    lines = out.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("Lines:")), None)
    if start is None:
        return None
    found, current = {}, None
    for ln in lines[start + 1:]:
        cells = ln.split()
        if not cells or cells[0] == "line" or "shown" in ln:
            continue
        if not cells[0].isdigit():
            current = found.setdefault(ln.strip(), [])
            continue
        # line, base hits, new hits, change, base time, new time, change, rel, source
        m = re.match(r"\s*(\d+)\s+(\S+)\s+(\S+)\s+\S+\s+(\S+ ?\S*s)\s+(\S+ ?\S*s)\s+(\S+ ?\S*s|0)"
                     r"\s+\S+\s*(.*)$", ln)
        current.append((int(m.group(1)), m.group(2), m.group(3), m.group(6), m.group(7)))
    return found


def lines_prof(tmp_path, name, tables, stats_keys=()):
    """tables: {funcname: {lineno: (hits, seconds)}} -> a written profile."""
    keys = {fn: (F, 10 * (i + 1), fn) for i, fn in enumerate(sorted(set(tables) | set(stats_keys)))}
    stats = {k: (1, 1, 0.01, 0.01, {}) for k in keys.values()}
    path = str(tmp_path / name)
    write_profile(path, ProfileData(stats, lines={keys[fn]: t for fn, t in tables.items()}))
    return path


def test_line_changes_beyond_noise_biggest_time_change_first(tmp_path, capsys):
    base = lines_prof(tmp_path, "a.prof", {
        "f": {11: (1, 0.001), 12: (10, 0.5), 13: (10, 0.2), 14: (1, 0.3)},
        "g": {21: (5, 0.1)},
        "only_base": {31: (1, 0.2)}})
    new = lines_prof(tmp_path, "b.prof", {
        "f": {11: (1, 0.001), 12: (10, 0.52), 13: (10, 0.05), 14: (1, 0.6), 15: (2, 0.0001)},
        "g": {21: (5, 0.1)},
        "only_new": {31: (1, 0.9)}}, stats_keys=["only_base"])
    rc, out, _ = call(capsys, "diff", base, new)
    assert rc == 0
    section = line_section(out)
    # g unchanged, only_base / only_new in one profile only: not listed
    assert list(section) == ["f  /p.py:10"], out
    # 14: +300 ms; 13: -150 ms; 15: hits 0 -> 2 (exact, tiny time);
    # 12: +20 ms is 4%, within the 10% threshold; 11 unchanged
    assert [(r[0], r[1], r[2]) for r in section["f  /p.py:10"]] == [
        (14, "1", "1"), (13, "10", "10"), (15, "0", "2")]
    assert "4 functions with line stats in both" not in out
    assert "(1 of 2 functions with line stats in both profiles)" in out
    rc, out, _ = call(capsys, "diff", base, new, "-n", "2")
    assert [r[0] for r in line_section(out)["f  /p.py:10"]] == [14, 13]
    assert "2 of 3 changed lines shown (-n 0 shows all)" in out
    # the API: the same answer
    from fastprof.data.profile_file import load_profile
    a, b = load_profile(base), load_profile(new)
    changes = diff.diff_stats(a.stats, b.stats)
    both, found = diff.line_changes(changes, a.lines, b.lines, diff.make_noise(1.0, 1.0))
    assert both == 2 and [(c.key[2], [lc.lineno for lc in rows]) for c, rows in found] == [
        ("f", [14, 13, 15])]
    assert found[0][1][0].time_delta == pytest.approx(0.3)


def test_no_line_section_without_line_stats_in_both(tmp_path, capsys):
    plain = prof(tmp_path, "plain.prof", BASE)
    rc, out, _ = call(capsys, "diff", plain, plain)
    assert line_section(out) is None and "Lines:" not in out
    with_lines = lines_prof(tmp_path, "l.prof", {"big": {2: (1, 0.5)}}, stats_keys=BASE)
    rc, out, _ = call(capsys, "diff", plain, with_lines)
    assert rc == 0 and "Lines:" not in out
    rc, out, _ = call(capsys, "diff", with_lines, with_lines)
    assert "Lines: no line changed (same hits, times within" in out
    assert "in the 1 function with line stats in both profiles." in out


LINES_PROGRAM = '''\
import time


def helper(k):
    return sum(range(k))


def hot(n):
    total = 0
    for i in range(n):
        total += helper(i)
    time.sleep(%s)
    return total


def cold():
    return 1


hot(40)
cold()
%s
'''


@pytest.mark.skipif(helpers.USING_CPROFILE, reason="runs python -m fastprof")
def test_line_changes_of_two_real_runs(tmp_path, capsys):
    # the same program, its hot line edited between the runs (sleep 10 ms
    # -> 120 ms), and a function added at the end (line stats only in the new run)
    script = tmp_path / "lines_prog.py"
    outs = []
    for name, sleep, extra in (("a.prof", "0.01", ""),
                               ("b.prof", "0.12", "\n\ndef extra():\n    return 2\n\n\nextra()")):
        script.write_text(LINES_PROGRAM % (sleep, extra))
        out = str(tmp_path / name)
        proc = helpers.run_python(["-m", "fastprof", "--lines", "lines_prog", "-o", out, str(script)])
        assert proc.returncode == 0, proc.stderr
        outs.append(out)
    rc, out, _ = call(capsys, "diff", *outs)
    assert rc == 0
    section = line_section(out)
    # hot's sleep line first, same hit, about +110 ms, with its (new) source;
    # extra() is new (in the table), not among the line changes
    assert "extra" not in " ".join(section), out
    hot = [rows for fn, rows in section.items() if fn.startswith("hot ")]
    assert hot, out
    lineno, base_hits, new_hits, change, source = hot[0][0]
    assert (lineno, base_hits, new_hits, source) == (12, "1", "1", "time.sleep(0.12)"), out
    assert change.startswith("+") and change.endswith(" ms") and float(change[1:-3]) > 80, out
    assert re.search(r"extra\s+\S+:\d+\s+\[new\]", out), out
