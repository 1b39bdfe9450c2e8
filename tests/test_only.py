"""Scoped profiling (``Profile(only=...)``, ``--only``): an "app" module
calling a "library" module; with only the app in scope, the app's functions
have cProfile's call counts, the C functions they call directly are there,
nothing of the library is, and the library's time is in its callers' own
time."""
import cProfile
import pstats

import only_app
import pytest

from fastprof import Profile
from helpers import USING_CPROFILE, check_scoped_like_cprofile, run_python

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="fastprof-only feature")


def in_app(key):
    return key[0].endswith("only_app.py")


def cprofile_stats(func):
    prof = cProfile.Profile()
    prof.runcall(func)
    return pstats.Stats(prof).stats


def scoped_stats(func, only):
    prof = Profile(only=only)
    prof.runcall(func)
    prof.create_stats()
    return prof, prof.stats


def test_only_app_functions_with_cprofiles_counts():
    full = cprofile_stats(only_app.main)
    prof, scoped = scoped_stats(only_app.main, ["only_app"])
    assert len({k for k in full if in_app(k)}) >= 5
    # Python rows: exactly the app's functions, with cProfile's counts; C
    # rows: the C functions the app calls directly, as often as it does
    check_scoped_like_cprofile(full, scoped, in_app)
    # callers are rows too: in-scope functions (or C functions they called,
    # sum() resuming a generator)
    for key, (_cc, _nc, _tt, _ct, callers) in scoped.items():
        assert set(callers) <= set(scoped), key
    assert prof.unmatched_only_patterns() == []


def test_library_time_is_in_the_callers_own_time():
    full = cprofile_stats(only_app.main)
    _prof, scoped = scoped_stats(only_app.main, ["only_app"])
    slow = [k for k in full if in_app(k) and k[2] == "slow"][0]
    assert full[slow][2] < 0.01          # cProfile: busy() is the library's
    assert scoped[slow][2] >= 0.029      # scoped: busy(0.03) is slow's own time
    assert scoped[slow][2] == pytest.approx(scoped[slow][3], rel=0.01)


def test_function_pattern_and_nested_code():
    _prof, scoped = scoped_stats(only_app.main, ["only_app:work"])
    assert {k[2] for k in scoped if k[0] != "~"} <= {"work", "<listcomp>"}
    assert any(k[2] == "work" for k in scoped)


def test_profiler_runs_unscoped_after_a_scoped_one():
    """A later profiler on the same tool id sees every function again
    (the scoped one disabled PY_START of the library's code for its id)."""
    scoped_stats(only_app.main, ["only_app"])
    full = cprofile_stats(only_app.main)
    prof = Profile()
    prof.runcall(only_app.main)
    prof.create_stats()
    assert {k for k in prof.stats if k[0] != "~" and "only_" in k[0]} == {
        k for k in full if "only_" in k[0]}


def test_unmatched_only_pattern_and_bad_argument():
    prof, scoped = scoped_stats(only_app.main, ["only_app", "only_ap:nothing"])
    assert prof.unmatched_only_patterns() == ["only_ap:nothing"]
    with pytest.raises(TypeError, match="list of patterns"):
        Profile(only="only_app")
    with pytest.raises(ValueError, match="bad function pattern"):
        Profile(only=["only_app:"])


def test_print_stats_says_what_is_left_out(capsys):
    prof = Profile(only=["only_app"])
    prof.runcall(only_app.square, 3)
    prof.print_stats()
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("Only only_app: calls into other Python code")


def test_cli_only(tmp_path):
    import os
    prog = tmp_path / "only_prog.py"
    prog.write_text("import only_app\n\ndef run():\n    return only_app.work(3)\n\nrun()\n")
    env_dir = os.path.dirname(os.path.abspath(__file__))
    from helpers import subprocess_env
    env = subprocess_env()
    env["PYTHONPATH"] = env_dir + os.pathsep + env["PYTHONPATH"]
    out = tmp_path / "o.prof"
    r = run_python(["-m", "fastprof", "--only", "only_prog", "--only", "nomatch_mod",
                    "-o", str(out), str(prog)], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines() == [
        "python -m fastprof: --only nomatch_mod: no function that ran matches it"]
    stats = pstats.Stats(str(out)).stats
    assert {k[2] for k in stats if k[0] != "~"} == {"<module>", "run"}
    r = run_python(["-m", "fastprof", "--only", "bad:", str(prog)], env=env)
    assert r.returncode == 2 and "--only: bad function pattern" in r.stderr


@pytest.mark.parametrize("kw", ["lines", "only"])
def test_fast_mode_refuses_lines_and_only(kw):
    # the frame evaluator neither scopes its events nor records lines: a
    # clear error, not a silently unscoped profile
    with pytest.raises(ValueError, match="fast=True cannot be combined with %s=" % kw):
        Profile(fast=True, **{kw: ["app"]})
