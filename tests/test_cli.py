"""``python -m fastprof``: cProfile's command line, checked against
``python -m cProfile`` run on the same programs (the oracle), from outside,
in subprocesses."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from fastprof.data.profile_file import load_profile
from fastprof.modes import run_command

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import cli_env as env  # noqa: E402


def run(tool, *args, cwd, **kw):
    """Run ``python -m <tool> args`` in *cwd*."""
    return subprocess.run([sys.executable, "-m", tool] + list(args), cwd=str(cwd), env=env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120, **kw)


def fp(*args, cwd):
    return run("fastprof", *args, cwd=cwd)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


# What the profiled program sees, written where PROBE_OUT says.
PROBE = """\
import json, os, sys
g = globals()
try:
    spec = __spec__  # cProfile < 3.12 sets none: this is then builtins' own
except NameError:
    spec = None
info = {
    "argv": sys.argv,
    "name": __name__,
    "file": g.get("__file__"),
    "package": g.get("__package__"),
    "cached": g.get("__cached__"),
    "spec": None if spec is None else [spec.name, spec.origin],
    "has_spec_key": "__spec__" in g,
    "dunders": sorted(k for k in g if k.startswith("__") and k != "__builtins__"),
    "path0": sys.path[0],
    "main_is_us": sys.modules["__main__"].__dict__ is g,
    "cwd": os.getcwd(),
}
with open(os.environ["PROBE_OUT"], "w") as f:
    json.dump(info, f)
"""

WORK = """\
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def gen(n):
    for i in range(n):
        yield i

def main():
    fib(12)
    list(gen(5))
    return sorted([3, 1, 2])
"""


def probe(tool, args, cwd, tmp_path):
    out = tmp_path / ("probe-%s.json" % tool)
    e = env()
    e["PROBE_OUT"] = str(out)
    r = subprocess.run([sys.executable, "-m", tool] + list(args), cwd=str(cwd), env=e,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


@pytest.fixture
def project(tmp_path):
    """A directory with a script in a subdirectory, a package and a module."""
    root = tmp_path / "proj"
    write(root / "sub" / "probe.py", PROBE)
    write(root / "pkg" / "__init__.py", "")
    write(root / "pkg" / "__main__.py", PROBE)
    write(root / "pkg" / "mod.py", PROBE)
    write(root / "work.py", WORK + "main()\n")
    return root


# -- what the program sees -----------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["-o", "out.prof", "sub/probe.py", "a", "-s", "--x"],
    ["-o", "out.prof", "-m", "pkg.mod", "a", "-o", "b"],
    ["-o", "out.prof", "-m", "pkg", "z"],
])
def test_program_sees_what_it_sees_under_cprofile(project, tmp_path, args):
    expected = probe("cProfile", args, project, tmp_path)
    got = probe("fastprof", args, project, tmp_path)
    # on purpose, on every version: the program's namespace is
    # sys.modules['__main__'] (cProfile: scripts from 3.14 on), and a
    # script's __spec__ is None (cProfile 3.12-3.13 sets a spec, with which
    # multiprocessing's spawn cannot rerun the script in its workers)
    expected["main_is_us"] = True
    if "-m" not in args and (3, 12) <= sys.version_info < (3, 14):
        assert expected["spec"] == ["__main__", "sub/probe.py"]
        expected["spec"] = None
    assert got == expected
    assert got["name"] == "__main__"
    assert got["argv"][1:] == args[args.index(got["argv"][0]) + 1:]


def test_script_argv_path_and_file(project, tmp_path):
    got = probe("fastprof", ["sub/probe.py", "x", "--flag"], project, tmp_path)
    assert got["argv"] == ["sub/probe.py", "x", "--flag"]
    assert got["path0"] == "sub"
    assert got["file"] == "sub/probe.py"
    if sys.version_info >= (3, 12):  # before, no __spec__ key (as cProfile)
        assert got["spec"] is None and got["has_spec_key"]
    assert got["main_is_us"]


def test_module_forms(project, tmp_path):
    got = probe("fastprof", ["-mpkg.mod", "1"], project, tmp_path)  # -mNAME, as python
    assert got["argv"] == ["pkg.mod", "1"] and got["name"] == "__main__"
    assert got["file"] == str(project / "pkg" / "mod.py")
    got = probe("fastprof", ["--no-threads", "-m", "pkg", "2"], project, tmp_path)
    assert got["file"] == str(project / "pkg" / "__main__.py")
    got = probe("fastprof", ["--", "sub/probe.py", "-o"], project, tmp_path)
    assert got["argv"] == ["sub/probe.py", "-o"]


def test_options_after_the_script_belong_to_the_script(project):
    r = fp("work.py", "-o", "never.prof", cwd=project)
    assert r.returncode == 0, r.stderr
    assert not (project / "never.prof").exists()
    assert "function calls" in r.stdout


# -- output ---------------------------------------------------------------------

def _ordered_by(text):
    return [ln.strip() for ln in text.splitlines() if "Ordered by" in ln]


def test_printed_table_is_cprofiles(project):
    r = fp("work.py", cwd=project)
    c = run("cProfile", "work.py", cwd=project)
    assert r.returncode == 0 and c.returncode == 0
    assert _ordered_by(r.stdout) == _ordered_by(c.stdout)  # same default sort
    header = "ncalls  tottime  percall  cumtime  percall filename:lineno(function)"
    assert header in r.stdout
    fib_row = [ln for ln in r.stdout.splitlines() if "work.py:1(fib)" in ln]
    assert len(fib_row) == 1 and fib_row[0].split()[0] == "465/1"
    for sort, title in (("tottime", "internal time"), ("calls", "call count"),
                        ("-1", "standard name"), ("tottime,calls", "internal time, call count")):
        r = fp("-s", sort, "work.py", cwd=project)
        assert _ordered_by(r.stdout) == ["Ordered by: " + title], r.stderr


def test_outfile_counts_match_cprofile_and_nothing_is_printed(project):
    r = fp("-o", "fp.prof", "work.py", cwd=project)
    c = run("cProfile", "-o", "cp.prof", "work.py", cwd=project)
    assert r.returncode == 0, r.stderr
    assert r.stdout == c.stdout == "" and r.stderr == ""
    ours = load_profile(str(project / "fp.prof")).stats
    theirs = load_profile(str(project / "cp.prof")).stats

    def script_counts(stats):
        return {k[2]: v[:2] for k, v in stats.items() if k[0].endswith("work.py")}
    assert script_counts(ours) == script_counts(theirs)
    assert script_counts(ours)["fib"] == (1, 465) and script_counts(ours)["gen"] == (6, 6)
    import pstats
    assert pstats.Stats(str(project / "fp.prof")).total_calls > 0


def test_outfile_is_relative_to_the_starting_directory(project):
    write(project / "chdir.py", "import os\nos.makedirs('elsewhere', exist_ok=True)\n"
                                "os.chdir('elsewhere')\n")
    r = fp("-o", "here.prof", "chdir.py", cwd=project)
    assert r.returncode == 0, r.stderr
    assert (project / "here.prof").exists()
    assert not (project / "elsewhere" / "here.prof").exists()


def test_trailer_records_options(project):
    r = fp("--clock", "cpu", "--callpaths", "-o", "t.prof", "work.py", cwd=project)
    assert r.returncode == 0, r.stderr
    data = load_profile(str(project / "t.prof"))
    assert data.clock == "cpu"
    assert data.callpaths is not None
    names = {f[2] for f in data.callpaths.functions}
    assert {"<module>", "main", "fib", "gen"} <= names
    assert [t["name"] for t in data.threads] == ["MainThread"]  # --threads is the default


def test_no_builtins(project):
    r = fp("--no-builtins", "-o", "nb.prof", "work.py", cwd=project)
    assert r.returncode == 0, r.stderr
    stats = load_profile(str(project / "nb.prof")).stats
    assert stats and not [k for k in stats if k[0] == "~" and k[2] != "<gc>"]  # a collection may come


@pytest.mark.parametrize("mode, gen_calls", [("call", 6), ("wall", 1)])
def test_coroutines_mode(project, mode, gen_calls):
    r = fp("--coroutines", mode, "-o", "co.prof", "work.py", cwd=project)
    assert r.returncode == 0, r.stderr
    stats = load_profile(str(project / "co.prof")).stats
    (gen,) = [v for k, v in stats.items() if k[2] == "gen"]
    assert gen[1] == gen_calls


THREADED = """\
import threading, time

def in_thread():
    return sum(range(1000))

def late():
    time.sleep(0.2)
    in_late()

def in_late():
    return 1

t = threading.Thread(target=in_thread, name="worker-1")
t.start(); t.join()
threading.Thread(target=late, name="late-1").start()   # python waits for it
"""


def _names(stats):
    return {k[2] for k in stats}


def test_threads_are_profiled_by_default_and_waited_for(project):
    write(project / "threaded.py", THREADED)
    r = fp("-o", "th.prof", "threaded.py", cwd=project)
    assert r.returncode == 0, r.stderr
    data = load_profile(str(project / "th.prof"))
    assert {"in_thread", "in_late"} <= _names(data.stats)
    threads = {t["name"]: t for t in data.threads}
    assert {"MainThread", "worker-1", "late-1"} <= set(threads)
    assert "in_thread" in _names(threads["worker-1"]["stats"])
    assert "in_thread" not in _names(threads["MainThread"]["stats"])


def test_no_threads_profiles_the_main_thread_only(project):
    write(project / "threaded.py", THREADED)
    r = fp("--no-threads", "-o", "th.prof", "threaded.py", cwd=project)
    assert r.returncode == 0, r.stderr
    data = load_profile(str(project / "th.prof"))
    assert "in_thread" not in _names(data.stats) and "<module>" in _names(data.stats)
    assert data.threads == []


def test_per_thread_printing(project):
    write(project / "threaded.py", THREADED)
    r = fp("--per-thread", "threaded.py", cwd=project)
    assert r.returncode == 0, r.stderr
    assert "=== thread MainThread" in r.stdout and "=== thread worker-1" in r.stdout
    worker = r.stdout.split("=== thread worker-1")[1].split("=== thread")[0]
    assert "(in_thread)" in worker and "(<module>)" not in worker
    merged = fp("threaded.py", cwd=project)
    assert "=== thread" not in merged.stdout and "(in_thread)" in merged.stdout


@pytest.mark.parametrize("name", ["out.callgrind", "callgrind.out.42", "out.collapsed",
                                  "out.speedscope.json", "out.html"])
def test_export_formats_by_extension(project, name):
    r = fp("--callpaths", "-o", name, "work.py", cwd=project)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert (project / name).stat().st_size > 0


def test_tree_formats_record_exact_call_paths_without_asking(project):
    r = fp("-o", "out.speedscope.json", "work.py", cwd=project)
    assert r.returncode == 0, r.stderr
    doc = json.loads((project / "out.speedscope.json").read_text())
    names = [p["name"] for p in doc["profiles"]]
    assert names and not any("estimated" in n for n in names)


@pytest.mark.parametrize("name", ["restats", "out.pstats", "out.stats", "prof.out",
                                  "out.fprof", "out.txt", "x.svg", "out.dat"])
def test_pstats_for_plain_names(project, name):
    r = fp("-o", name, "work.py", cwd=project)
    assert r.returncode == 0, r.stderr
    assert "fib" in _names(load_profile(str(project / name)).stats)


# -- exit status ----------------------------------------------------------------

EXITS = """\
import sys
def work():
    return sum(range(100))
work()
how = sys.argv[1]
if how == "exit3":
    sys.exit(3)
if how == "exitmsg":
    sys.exit("bye now")
if how == "exitnone":
    sys.exit()
if how == "raise":
    def deeper():
        raise ValueError("boom")
    deeper()
if how == "interrupt":
    raise KeyboardInterrupt
"""


@pytest.mark.parametrize("how, status", [("exit3", 3), ("exitmsg", 1), ("exitnone", 0),
                                         ("raise", 1), ("interrupt", 130), ("fine", 0)])
def test_exit_status_passes_through_and_stats_are_still_written(project, how, status):
    write(project / "exits.py", EXITS)
    r = fp("-o", "e.prof", "exits.py", how, cwd=project)
    assert r.returncode == status, r.stderr
    assert "work" in _names(load_profile(str(project / "e.prof")).stats)
    if how == "exitmsg":
        assert r.stderr.strip() == "bye now"
    if how == "raise":
        assert "Traceback (most recent call last)" in r.stderr
        assert 'exits.py", line 14, in deeper' in r.stderr
        assert r.stderr.strip().endswith("ValueError: boom")
        assert "run_command.py" not in r.stderr and "profiler.py" not in r.stderr
    if how == "interrupt":
        assert "KeyboardInterrupt" in r.stderr


def test_stats_are_printed_after_an_exception(project):
    write(project / "exits.py", EXITS)
    r = fp("exits.py", "raise", cwd=project)
    assert r.returncode == 1
    assert "function calls" in r.stdout and "(work)" in r.stdout and "(deeper)" in r.stdout
    r = fp("exits.py", "exit3", cwd=project)
    assert r.returncode == 3 and "function calls" in r.stdout


def test_stats_are_printed_when_the_program_closed_stdout(project):
    # python -m json.tool closes sys.stdout; python -m cProfile then fails
    write(project / "closer.py", "import sys\nprint('hi')\nsys.stdout.close()\n")
    r = fp("closer.py", cwd=project)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("hi\n") and "function calls" in r.stdout


def test_exceptions_in_a_module_drop_runpy_frames(project):
    write(project / "pkg" / "boom.py", "raise LookupError('in module')\n")
    r = fp("-o", "b.prof", "-m", "pkg.boom", cwd=project)
    assert r.returncode == 1
    assert "LookupError: in module" in r.stderr and "boom.py" in r.stderr
    assert "runpy" not in r.stderr and "<string>" not in r.stderr
    assert (project / "b.prof").exists()


def test_syntax_error_in_script(project):
    write(project / "bad.py", "def (:\n")
    r = fp("bad.py", cwd=project)
    assert r.returncode == 1
    assert "SyntaxError" in r.stderr and "bad.py" in r.stderr


# -- usage errors --------------------------------------------------------------------

MARKER = """\
open("ran.marker", "w").close()
"""


def _usage_error(r):
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("python -m fastprof: error: ")
    return lines[0]


@pytest.mark.parametrize("args, message", [
    (["missing.py"], "can't open file 'missing.py'"),
    (["sub"], "can't find '__main__' module in 'sub'"),
    (["view", "x.prof"], "use the fastprof command: fastprof view"),
    (["-o", "hi.py"], "no program to profile"),
    (["-o", "marker.py", "marker.py"], "refusing to overwrite the input file marker.py"),
    (["--to", "html", "marker.py"], "--to needs -o FILE"),
    (["--to", "svg", "-o", "x", "marker.py"], "unknown format 'svg'"),
    (["-o", "-", "marker.py"], "needs --to FORMAT"),
    (["-m", "no_such_module_xyz"], "No module named no_such_module_xyz"),
    (["-m", "pkg.no_such_sub"], "No module named pkg.no_such_sub"),
    (["-m"], "-m needs a module name"),
    (["-s", "bogus", "marker.py"], "option -s: invalid choice: 'bogus'"),
    (["-s", "tottime,nope", "marker.py"], "option -s: invalid choice: 'nope'"),
    (["-o", "no/such/dir/x.prof", "marker.py"], "does not exist"),
    (["-o", "sub", "marker.py"], "it is a directory"),
    (["-o", "marker.py/x.prof", "marker.py"], "is not a directory"),
    (["--clock", "sun", "marker.py"], "--clock must be 'wall' or 'cpu', not 'sun'"),
    (["--coroutines", "x", "marker.py"], "--coroutines must be 'call' or 'wall', not 'x'"),
    (["--max-depth", "0", "marker.py"], "--max-depth must be >= 1, not 0"),
    (["--min-percent", "150", "marker.py"], "--min-percent must be between 0 and 100, not 150"),
    (["--max-depth", "ten", "marker.py"], "invalid integer value: 'ten'"),
    (["--bogus", "marker.py"], "no such option: --bogus"),
    (["-o"], "-o option requires 1 argument"),
])
def test_usage_errors_are_one_line_exit_2_and_nothing_runs(project, args, message):
    write(project / "marker.py", MARKER)
    (project / "sub").mkdir(exist_ok=True)
    line = _usage_error(fp(*args, cwd=project))
    assert message in line
    assert not (project / "ran.marker").exists()


def test_unknown_sort_key_lists_the_valid_ones(project):
    write(project / "marker.py", MARKER)
    line = _usage_error(fp("-s", "bogus", "marker.py", cwd=project))
    import pstats
    for k in list(pstats.Stats.sort_arg_dict_default) + ["-1"]:
        assert repr(k) in line.split("choose from")[1]


def test_unwritable_output_directory(project, monkeypatch, capsys):
    # root can write anywhere; ask main() itself with the creation refused
    write(project / "marker.py", MARKER)
    monkeypatch.chdir(str(project))
    import fastprof.data.atomic_file

    def refused(path):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(fastprof.data.atomic_file, "create_beside", refused)
    assert run_command.main(["-o", "x.prof", "marker.py"]) == 2
    err = capsys.readouterr().err
    assert "cannot write x.prof: Permission denied" in err and len(err.strip().splitlines()) == 1
    assert not (project / "ran.marker").exists()


def test_no_arguments_prints_usage(project):
    r = fp(cwd=project)
    assert r.returncode == 2
    assert r.stderr.startswith("usage: python -m fastprof")
    assert "Traceback" not in r.stderr


def test_help_mentions_every_option(project):
    r = fp("--help", cwd=project)
    assert r.returncode == 0 and r.stderr == ""
    for option in run_command.build_parser().option_list:
        for opt in option._short_opts + option._long_opts:
            assert opt in r.stdout
    for word in ("examples:", ".callgrind", ".speedscope.json", ".collapsed", ".html",
                 ".prof", "cumulative", "tottime", "exit status"):
        assert word in r.stdout


def test_default_threads_is_one_constant():
    assert run_command.build_parser().parse_args([])[0].threads is run_command.DEFAULT_THREADS


def test_split_argv():
    split = run_command.split_argv
    assert split(["-o", "x", "s.py", "-o", "y"]) == (["-o", "x"], ["s.py", "-o", "y"])
    assert split(["-ox", "-scalls", "s.py"]) == (["-ox", "-scalls"], ["s.py"])
    assert split(["--sort=calls", "--clock", "cpu", "-m", "mod", "a"]) == \
        (["--sort=calls", "--clock", "cpu", "-m"], ["mod", "a"])
    assert split(["-mmod", "-x"]) == (["-m"], ["mod", "-x"])
    assert split(["--", "-s.py"]) == ([], ["-s.py"])
