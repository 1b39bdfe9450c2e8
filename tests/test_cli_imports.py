"""``import fastprof`` and ``python -m fastprof`` leave the program the
interpreter it would have under cProfile: no module imported that cProfile
does not import, no ABC cache emptied, so the program's own profile has the
same rows and counts (cProfile on the same interpreter is the oracle)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import fastprof

PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(fastprof.__file__)))


def env(**extra):
    e = dict(os.environ, **extra)
    e["PYTHONPATH"] = os.pathsep.join(p for p in (PKG_PARENT, e.get("PYTHONPATH")) if p)
    e.pop("PYTHONSTARTUP", None)
    return e


def python(*args, cwd=None, **extra_env):
    r = subprocess.run([sys.executable] + list(args), cwd=cwd, env=env(**extra_env), timeout=120,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


# gc is a built-in C module: importing it runs no Python code, registers no
# ABC and empties no cache, and fastprof needs its ``callbacks`` list to
# record collections as <gc> (on by default). The only module excused.
EXCUSED = {"gc"}


def ours(modules):
    return {m for m in modules
            if m != "fastprof" and not m.startswith("fastprof.") and m not in EXCUSED}


# -- import fastprof --------------------------------------------------------------

# -I: no PYTHONPATH, no user site: the interpreter as a program starts
IMPORT = """\
import sys; sys.path.insert(0, {path!r})
import abc
before = set(sys.modules)
token = abc.get_cache_token()
import {tool}
after = set(sys.modules)
token_moved = abc.get_cache_token() != token
import json
print(json.dumps({{"new": sorted(after - before), "token_moved": token_moved}}))
"""


def test_import_fastprof_imports_nothing_cprofile_does_not_and_keeps_abc_caches():
    theirs = json.loads(python("-I", "-c", IMPORT.format(tool="cProfile", path=PKG_PARENT)))
    got = json.loads(python("-I", "-c", IMPORT.format(tool="fastprof", path=PKG_PARENT)))
    assert not got["token_moved"], got["new"]
    assert ours(got["new"]) <= set(theirs["new"]), got["new"]


WORKLOAD = """\
import sys; sys.path.insert(0, {path!r})
from collections.abc import Mapping, Sequence, Iterable

class MyMap(dict):
    pass

def check(x):
    return isinstance(x, Mapping), isinstance(x, Sequence), isinstance(x, Iterable)

def work():
    for x in ({{}}, [], MyMap(), (), "s", 1, 2.0, MyMap, set()):
        check(x)

{early}
work()           # the ABC caches are warm now
import {tool}    # must not empty them
prof = {tool}.Profile()
prof.enable()
work()
prof.disable()
prof.create_stats()
import json
print(json.dumps(sorted("%s:%s" % (k[2], v[1]) for k, v in prof.stats.items()
                        if "disable" not in k[2])))
"""


@pytest.mark.parametrize("cache", ["shared", "new"])
def test_counts_after_import_equal_cprofiles(tmp_path, cache):
    # A new calibration cache file is always written by the profiler's
    # calibration, in the middle of the program (that write once imported
    # io, whose ABC registrations empty the caches: 3.15 fails without the
    # fix). The oracle is cProfile imported before the warm-up: the program's counts
    # as if the tool's import were invisible. (Where importing cProfile keeps
    # the caches, 3.9-3.13, importing it late gives the same; since 3.14 its
    # import empties them, so the late import would be a wrong oracle.)
    theirs = json.loads(python("-I", "-c", WORKLOAD.format(tool="cProfile", path=PKG_PARENT,
                                                           early="import cProfile")))
    extra = {"FASTPROF_CALIBRATION_CACHE": str(tmp_path / "calibration.tsv")} if cache == "new" else {}
    got = json.loads(python("-I", "-c", WORKLOAD.format(tool="fastprof", path=PKG_PARENT,
                                                        early=""), **extra))
    # before: 129 __subclasscheck__ calls where cProfile has 2
    assert got == theirs


# -- python -m fastprof: sys.modules at the script's first line ------------------

FIRST_LINE = """\
import sys
mods = sorted(sys.modules)
import json
with open(sys.argv[1], "w") as f:
    json.dump(mods, f)
"""


@pytest.mark.parametrize("options", [[], ["--no-threads"], ["-o", "x.html"],
                                     ["-s", "tottime", "--callpaths"]])
@pytest.mark.parametrize("form", ["script", "module"])
def test_cli_imports_no_more_than_cprofile_by_the_first_line(tmp_path, options, form):
    (tmp_path / "first.py").write_text(FIRST_LINE)
    program = ["first.py"] if form == "script" else ["-m", "first"]
    python("-m", "cProfile", "-o", "c.prof", *program, str(tmp_path / "c.json"), cwd=str(tmp_path))
    python("-m", "fastprof", *options, *program, str(tmp_path / "f.json"), cwd=str(tmp_path))
    theirs = set(json.loads((tmp_path / "c.json").read_text()))
    got = set(json.loads((tmp_path / "f.json").read_text()))
    assert sorted(ours(got) - theirs) == []


def test_module_check_leaves_the_import_caches_alone(tmp_path):
    # the -m pre-check looks the module up; the finders it made are dropped
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(textwrap.dedent("""\
        import sys, json
        with open(sys.argv[1], "w") as f:
            json.dump(sorted(sys.path_importer_cache), f)
        """))
    python("-m", "cProfile", "-o", "c.prof", "-m", "pkg.mod", str(tmp_path / "c.json"),
           cwd=str(tmp_path))
    python("-m", "fastprof", "-o", "f.prof", "-m", "pkg.mod", str(tmp_path / "f.json"),
           cwd=str(tmp_path))
    theirs = set(json.loads((tmp_path / "c.json").read_text()))
    got = set(json.loads((tmp_path / "f.json").read_text()))
    fastprof_dir = os.path.dirname(os.path.abspath(fastprof.__file__))
    # nothing beyond cProfile's but fastprof's own package dirs (3.15's
    # cProfile adds its own profiling/ dirs)
    assert {p for p in got if p != fastprof_dir and not p.startswith(fastprof_dir + os.sep)} <= theirs
    assert all("profiling" in p for p in theirs - got), theirs - got


LATE_THREADING = """\
import sys; sys.path.insert(0, {path!r})
import fastprof
prof = fastprof.Profile(threads=True)
prof.enable()
imported_by_enable = "threading" in sys.modules
import threading            # the program's own import, after enable()

def in_thread():
    return sum(range(100))

t = threading.Thread(target=in_thread, name="late-import")
t.start()
t.join()
prof.disable()
names = {{name for _id, _ident, name, stats in prof.thread_stats()
          if any(k[2] == "in_thread" for k in stats)}}
print(imported_by_enable, sorted(names))
"""


def test_threads_mode_profiles_threads_of_a_threading_imported_later():
    # enable(threads=True) does not import threading; once the program
    # does, its new threads are profiled all the same
    out = python("-I", "-c", LATE_THREADING.format(path=PKG_PARENT))
    assert out.split(None, 1) == ["False", "['late-import']\n"]


def test_fastprof_run_imports_no_more_than_cprofile(tmp_path):
    # the fastprof command's "run": argparse, typing... only for the other commands
    (tmp_path / "first.py").write_text(FIRST_LINE)
    python("-m", "cProfile", "-o", "c.prof", "first.py", str(tmp_path / "c.json"), cwd=str(tmp_path))
    # the `fastprof` console script is a file; `python -c` would add what -c
    # itself imports (linecache on 3.13+, for the source of its tracebacks)
    (tmp_path / "fastprof_command.py").write_text(
        "import sys; from fastprof.cli import main; "
        "sys.argv[1:] = ['run', 'first.py', %r]; sys.exit(main(sys.argv[1:]))\n"
        % str(tmp_path / "f.json"))
    python("fastprof_command.py", cwd=str(tmp_path))
    theirs = set(json.loads((tmp_path / "c.json").read_text()))
    got = set(json.loads((tmp_path / "f.json").read_text()))
    assert sorted(ours(got) - theirs) == []
