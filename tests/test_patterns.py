"""``--only myapp`` and ``--lines myapp`` cover the package myapp: the code
of ``myapp/__init__.py`` and of every submodule (issue 23, item 2).

The program that showed it: ``--only myapp`` on an app whose package keeps
code in ``__init__.py`` and in subpackages recorded ``__init__``'s
functions only, and ``--only 'myapp.*'`` everything but them.  Here such a
package, a sibling module whose name merely starts with ``myapp`` (not
covered), and a script calling both; counts are checked against cProfile.
"""
import os
import pstats
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402
from fastprof.data.profile_file import load_profile  # noqa: E402
from fastprof.recording.func_patterns import FunctionPatterns, module_covered  # noqa: E402

FILES = {
    "myapp/__init__.py": '''\
        from myapp.sub import mod


        def start(n):
            return sum(mod.step(i) for i in range(n)) + myapp_extra.other(n)


        import myapp_extra  # noqa: E402
        ''',
    "myapp/sub/__init__.py": '''\
        def scale(x):
            return x * 3
        ''',
    "myapp/sub/mod.py": '''\
        from myapp.sub import scale


        def step(i):
            return scale(i) % 7
        ''',
    "myapp_extra.py": '''\
        def other(n):
            return n + 1
        ''',
    "prog.py": '''\
        import myapp

        print(myapp.start(50))
        ''',
}

# (relative file, function name) of the package's code that runs (the
# modules' bodies too: the script imports them while profiled)
PACKAGE = {("myapp/__init__.py", "start"), ("myapp/__init__.py", "<genexpr>"),
           ("myapp/sub/__init__.py", "scale"), ("myapp/sub/mod.py", "step"),
           ("myapp/__init__.py", "<module>"), ("myapp/sub/__init__.py", "<module>"),
           ("myapp/sub/mod.py", "<module>")}


@pytest.fixture
def app(tmp_path):
    for rel, text in FILES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def functions(path, root):
    """{(relative file, name): calls} of the Python functions in a profile."""
    stats = pstats.Stats(str(path)).stats
    return {(os.path.relpath(k[0], str(root)).replace(os.sep, "/"), k[2]): v[1]
            for k, v in stats.items() if k[0] != "~"}


def record(app, name, *options):
    out = app / name
    proc = helpers.run_python(list(options) + ["-o", str(out), str(app / "prog.py")], cwd=str(app))
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_module_covered():
    assert module_covered("myapp", "myapp")
    assert module_covered("myapp.sub.mod", "myapp")
    assert module_covered("myapp", "myapp.*") and module_covered("myapp.sub", "myapp.*")
    assert module_covered("myapp.db.query", "myapp.d*")
    assert module_covered("myapp.sub.mod", "myapp.sub")
    assert not module_covered("myapp", "myapp.sub")
    assert not module_covered("myapp_extra", "myapp")
    assert not module_covered("myapp_extra", "myapp.*")
    assert not module_covered("other.myapp", "myapp")


def test_a_path_glob_covers_the_files_below_a_directory(tmp_path):
    code = compile("def f(): pass", str(tmp_path / "src" / "myapp" / "sub" / "m.py"), "exec").co_consts[0]
    assert FunctionPatterns(["src/myapp"]).matches(code, "myapp.sub.m")
    assert FunctionPatterns([str(tmp_path / "src")]).matches(code, "myapp.sub.m")
    assert FunctionPatterns(["myapp/sub/*.py"]).matches(code, "myapp.sub.m")
    assert not FunctionPatterns(["src/other"]).matches(code, "myapp.sub.m")


@pytest.mark.skipif(helpers.USING_CPROFILE, reason="runs python -m fastprof")
@pytest.mark.parametrize("pattern", ["myapp", "myapp.*"])
def test_only_a_package_is_its_init_and_all_its_submodules(app, pattern):
    full, _ = record(app, "full.prof", "-m", "cProfile")
    expected = {f: n for f, n in functions(full, app).items() if f in PACKAGE}
    assert set(expected) == PACKAGE   # (the genexpr of start, on every version)
    scoped, proc = record(app, "only.prof", "-m", "fastprof", "--only", pattern)
    assert proc.stderr == ""   # no "no function that ran matches it"
    assert functions(scoped, app) == expected   # cProfile's counts, myapp_extra and prog.py out


@pytest.mark.skipif(helpers.USING_CPROFILE, reason="runs python -m fastprof")
def test_only_a_subpackage_leaves_its_parent_out(app):
    scoped, _ = record(app, "sub.prof", "-m", "fastprof", "--only", "myapp.sub")
    assert set(functions(scoped, app)) == {("myapp/sub/__init__.py", "scale"), ("myapp/sub/mod.py", "step"),
                                           ("myapp/sub/__init__.py", "<module>"), ("myapp/sub/mod.py", "<module>")}


@pytest.mark.skipif(helpers.USING_CPROFILE, reason="runs python -m fastprof")
def test_lines_of_a_package_are_those_of_all_its_modules(app):
    out, proc = record(app, "lines.prof", "-m", "fastprof", "--lines", "myapp")
    assert proc.stderr == ""
    data = load_profile(str(out))
    got = {(os.path.relpath(k[0], str(app)).replace(os.sep, "/"), k[2]) for k in data.lines}
    # code nested in start (its generator expression) is in start's listing
    # from 3.12 on; before, it is a function of its own with its own lines
    assert got - {("myapp/__init__.py", "<genexpr>")} == PACKAGE - {("myapp/__init__.py", "<genexpr>")}
    step = next(k for k in data.lines if k[2] == "step")
    assert data.lines[step][step[1] + 1][0] == 50   # "return scale(i) % 7", once a call
