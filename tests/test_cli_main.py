"""``python -m fastprof``: the program's ``__main__``.

On every version the program runs in its own module, registered as
``sys.modules['__main__']``: ``import __main__`` is the program, and what
it defines pickles, so multiprocessing works with fork, spawn and
forkserver (python -m cProfile manages that only from 3.14, for scripts).
A directory or zip archive with a ``__main__.py`` runs as ``python app.pyz``
runs it (cProfile cannot run one)."""

import json
import os
import subprocess
import sys
import textwrap
import zipapp

import pytest

from fastprof.data.profile_file import load_profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import cli_env as env  # noqa: E402


def run(*args, cwd):
    return subprocess.run([sys.executable] + list(args), cwd=str(cwd), env=env(), timeout=180,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def names(prof):
    return {k[2] for k in load_profile(str(prof)).stats}


POOL = """\
import multiprocessing, pickle, sys

def square(x):
    return x * x

class Box:
    def __init__(self, v):
        self.v = v

def unbox(b):
    return b.v + 1

if __name__ == "__main__":
    import __main__
    assert __main__.square is square, "import __main__ is not the program"
    assert pickle.loads(pickle.dumps(Box(4))).v == 4
    ctx = multiprocessing.get_context(sys.argv[1])
    with ctx.Pool(2) as pool:
        print(pool.map(square, range(5)), pool.map(unbox, [Box(1), Box(2)]))
"""


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("form", ["script", "module"])
def test_pool_map_of_a_function_defined_in_the_program(tmp_path, method, form):
    write(tmp_path / "pool.py", POOL)
    program = ["pool.py"] if form == "script" else ["-m", "pool"]
    r = run("-m", "fastprof", "-o", "p.prof", *program, method, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[0, 1, 4, 9, 16] [2, 3]\n"
    assert "<module>" in names(tmp_path / "p.prof")


PROBE = """\
import json, os, sys
g = globals()
info = {
    "argv": sys.argv,
    "name": __name__,
    "file": g.get("__file__"),
    "spec_name": getattr(g.get("__spec__"), "name", None),
    "path0": sys.path[0],
    "main_is_us": sys.modules["__main__"].__dict__ is g,
}
def here():
    return info
here()
with open(os.environ["PROBE_OUT"], "w") as f:
    json.dump(info, f)
"""


def _probe(args, cwd, out):
    e = env()
    e["PROBE_OUT"] = str(out)
    r = subprocess.run([sys.executable] + args, cwd=str(cwd), env=e, timeout=120,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("kind", ["directory", "zipapp"])
def test_directory_or_zipapp_runs_as_python_runs_it(tmp_path, kind):
    write(tmp_path / "app" / "__main__.py", PROBE)
    target = "app"
    if kind == "zipapp":
        zipapp.create_archive(str(tmp_path / "app"), str(tmp_path / "app.pyz"))
        target = "app.pyz"
    expected = _probe([target, "x", "-o", "y"], tmp_path, tmp_path / "plain.json")
    got = _probe(["-m", "fastprof", "-o", "a.prof", target, "x", "-o", "y"], tmp_path,
                 tmp_path / "prof.json")
    assert expected["path0"].endswith(target)  # python puts the archive first on the path
    assert got == expected
    assert got["argv"] == [target, "x", "-o", "y"] and got["main_is_us"]
    assert {"here", "<module>"} <= names(tmp_path / "a.prof")


def test_directory_without_main_is_a_usage_error(tmp_path):
    (tmp_path / "empty").mkdir()
    r = run("-m", "fastprof", "empty", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == ("python -m fastprof: error: can't find '__main__' module "
                                "in 'empty'")


def test_script_namespace_is_main_and_dunders_are_cprofiles(tmp_path):
    write(tmp_path / "s.py", """\
        import json, sys, __main__
        g = globals()
        print(json.dumps([__main__.__dict__ is g, sorted(k for k in g if k.startswith("__")),
                          repr(getattr(__main__, "__spec__", "missing")),
                          repr(getattr(__main__, "__loader__", "missing"))]))
        """)
    c = run("-m", "cProfile", "-o", "c.prof", "s.py", cwd=tmp_path)
    f = run("-m", "fastprof", "-o", "f.prof", "s.py", cwd=tmp_path)
    assert f.returncode == 0, f.stderr
    theirs, got = json.loads(c.stdout), json.loads(f.stdout)
    assert got[0] is True
    assert got[1] == theirs[1]  # the same names in the script's namespace
    assert got[2] == got[3] == "None"  # as a fresh module's (spawn reads them)
