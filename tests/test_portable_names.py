"""portable_names: one name per function whatever install its file came from."""

import os
import subprocess
import sys
import textwrap

from fastprof.data.portable_names import path_roots, portable_names, relative_path, relative_paths
from fastprof.data.profile_file import ProfileData, load_profile, write_profile


def test_relative_to_the_longest_sys_path_entry():
    roots = path_roots(["/opt/lib/python3.12", "/opt/lib/python3.12/site-packages", ""])
    assert roots == ["/opt/lib/python3.12/site-packages/", "/opt/lib/python3.12/"]
    # a relative entry (cProfile's and python -m fastprof's sys.path[0] for a
    # script run by a relative path) is where this process stands
    assert path_roots(["rel"]) == [os.path.join(os.path.abspath("rel"), "")]
    assert relative_path("/opt/lib/python3.12/site-packages/jinja2/runtime.py", roots) == "jinja2/runtime.py"
    assert relative_path("/opt/lib/python3.12/json/decoder.py", roots) == "json/decoder.py"


def test_outside_every_entry_site_packages_is_cut_else_unchanged():
    roots = path_roots(["/elsewhere"])
    assert relative_path("/venv-b/lib/python3.12/site-packages/jinja2/runtime.py", roots) == "jinja2/runtime.py"
    assert relative_path("/usr/lib/python3/dist-packages/yaml/__init__.py", roots) == "yaml/__init__.py"
    assert relative_path("/home/me/app.py", roots) == "/home/me/app.py"
    for pseudo in ("<string>", "~", "<frozen importlib._bootstrap>"):
        assert relative_path(pseudo, roots) == pseudo


def test_two_installs_give_the_same_names():
    a = ("/venv-a/lib/python3.12/site-packages/jinja2/runtime.py", 120, "resolve")
    b = ("/tmp/target-b/jinja2/runtime.py", 131, "resolve")
    qa = {a: "Context.resolve"}
    qb = {b: "Context.resolve"}
    na = portable_names([a], qa, relative_paths([a[0]], ["/venv-a/lib/python3.12/site-packages"]))
    nb = portable_names([b], qb, relative_paths([b[0]], ["/tmp/target-b"]))
    assert na[a] == nb[b] == "jinja2/runtime.py:Context.resolve"


def test_repeated_qualified_names_are_numbered_by_first_line():
    f = "/site/app/views.py"
    keys = [(f, 30, "<lambda>"), (f, 12, "<lambda>"), (f, 40, "other")]
    q = {keys[0]: "index.<locals>.<lambda>", keys[1]: "index.<locals>.<lambda>"}
    names = portable_names(keys, q, {f: "app/views.py"})
    assert names == {
        keys[1]: "app/views.py:index.<locals>.<lambda>#1",
        keys[0]: "app/views.py:index.<locals>.<lambda>#2",
        keys[2]: "app/views.py:other",
    }


def test_c_functions_lose_their_address():
    k = ("~", 0, "<built-in method __new__ of type object at 0x7f00deadbeef>")
    assert portable_names([k]) == {k: "~:<built-in method __new__ of type object>"}


def test_the_trailer_keeps_the_paths_recorded_in_the_profiled_process(tmp_path):
    lib = tmp_path / "target"
    (lib / "toylib").mkdir(parents=True)
    (lib / "toylib" / "__init__.py").write_text("def work():\n    return sum(range(10))\n")
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent("""
        import sys, fastprof
        sys.path.insert(0, sys.argv[1])
        import toylib
        with fastprof.Profile() as p:
            toylib.work()
        p.dump_stats(sys.argv[2])
    """))
    out = tmp_path / "out.prof"
    env = dict(os.environ)
    subprocess.run([sys.executable, str(script), str(lib), str(out)], check=True, env=env)
    data = load_profile(str(out))
    init = str(lib / "toylib" / "__init__.py")
    assert data.paths[init] == os.path.join("toylib", "__init__.py")
    # read back in a process whose sys.path does not hold the install
    key = next(k for k in data.stats if k[0] == init)
    assert portable_names([key], data.qualnames, data.paths)[key] == "toylib/__init__.py:work"
    again = tmp_path / "again.prof"
    write_profile(str(again), data)
    assert load_profile(str(again)).paths == data.paths


def test_no_paths_no_trailer_key():
    assert ProfileData({}).trailer() is None


def test_a_package_no_sys_path_entry_holds_is_named_by_its_module(tmp_path):
    # setuptools' editable installs import a checkout through a meta path
    # finder: no sys.path entry holds its files, its modules' names say where
    lib = tmp_path / "checkout" / "src"
    (lib / "toylib").mkdir(parents=True)
    (lib / "toylib" / "__init__.py").write_text("from toylib.core import work\n")
    (lib / "toylib" / "core.py").write_text("def work():\n    return sum(range(10))\n")
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent("""
        import sys, fastprof
        sys.path.insert(0, sys.argv[1])
        import toylib
        sys.path.remove(sys.argv[1])   # as if a finder had imported it
        with fastprof.Profile() as p:
            toylib.work()
        p.dump_stats(sys.argv[2])
    """))
    out = tmp_path / "out.prof"
    subprocess.run([sys.executable, str(script), str(lib), str(out)], check=True)
    paths = load_profile(str(out)).paths
    assert paths[str(lib / "toylib" / "core.py")] == os.path.join("toylib", "core.py")
    # the given sys.path alone: no module is asked
    assert relative_paths([str(lib / "toylib" / "core.py")], ["/elsewhere"]) == {}


def test_a_script_run_by_a_relative_path_pairs_with_its_full_path(tmp_path, monkeypatch):
    """python -m fastprof examples/demo.py from the checkout, and the same
    script by its full path from elsewhere: one name (seen with fastprof check)."""
    scripts = tmp_path / "examples"
    scripts.mkdir()
    full = str(scripts / "demo.py")
    monkeypatch.chdir(tmp_path)
    by_relative = relative_paths([os.path.join("examples", "demo.py")], [str(scripts)])
    by_full = relative_paths([full], [str(scripts)])
    assert by_relative == {os.path.join("examples", "demo.py"): "demo.py"}
    assert by_full == {full: "demo.py"}


def test_paths_memo_says_what_relative_paths_says(tmp_path, monkeypatch):
    """PathsMemo (pytest --fastprof-per-test: the trailer's paths once per
    session, not a scan of sys.modules per test) answers as relative_paths
    does, after sys.path, the current directory or sys.modules change; it
    reads sys.modules again only then."""
    import types

    from fastprof.data.portable_names import PathsMemo
    pkg = tmp_path / "memo_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("")
    loose = str(tmp_path / "other" / "loose.py")
    names = [m.__file__ for m in list(sys.modules.values())
             if isinstance(getattr(m, "__file__", None), str)][:30]
    names += [str(pkg / "__init__.py"), str(pkg / "mod.py"), loose, "~", "<string>", "rel/x.py"]
    memo = PathsMemo()

    def same():
        assert memo.relative_paths(iter(names)) == relative_paths(names)

    same()
    same()
    assert memo.scans == 1  # nothing changed: sys.modules read once
    monkeypatch.syspath_prepend(str(tmp_path))
    same()
    monkeypatch.syspath_prepend(str(tmp_path / "other"))
    same()
    monkeypatch.chdir(tmp_path)
    same()
    import memo_pkg.mod  # noqa: F401  (two modules added)
    same()
    assert relative_paths(names)[str(pkg / "mod.py")] == os.path.join("memo_pkg", "mod.py")
    # a module replaced under its key (same number of modules): its file is
    # named after the new one
    fake = types.ModuleType("renamed.inner")
    fake.__file__ = str(pkg / "mod.py")
    monkeypatch.setitem(sys.modules, "memo_pkg.mod", fake)
    same()
    assert memo.relative_paths(names)[str(pkg / "mod.py")] == os.path.join("renamed", "inner.py")
    scans = memo.scans
    for _ in range(20):
        same()
    assert memo.scans == scans


def test_a_file_two_modules_share_is_named_where_it_is_whichever_came_first(tmp_path):
    # tlz is an alias package of toolz: tlz.itertoolz's __file__ is
    # toolz/itertoolz.py. Which was imported first varies with the order the
    # tests run (the count gate's learning passes): the name must not.
    from types import ModuleType
    filename = str(tmp_path / "toolz" / "itertoolz.py")

    def module(name):
        m = ModuleType(name)
        m.__file__ = filename
        return m
    real, alias = module("toolz.itertoolz"), module("tlz.itertoolz")
    for order in ([("toolz.itertoolz", real), ("tlz.itertoolz", alias)],
                  [("tlz.itertoolz", alias), ("toolz.itertoolz", real)]):
        modules = dict(order)
        assert relative_paths([filename], [str(tmp_path)], modules) == {filename: "toolz/itertoolz.py"}
    # neither name where the file is: the smaller one, in either order
    other = str(tmp_path / "vendored" / "core.py")
    a, b = ModuleType("pkg_b.core"), ModuleType("pkg_a.core")
    a.__file__ = b.__file__ = other
    for modules in ({"pkg_b.core": a, "pkg_a.core": b}, {"pkg_a.core": b, "pkg_b.core": a}):
        assert relative_paths([other], [str(tmp_path)], modules) == {other: "pkg_a/core.py"}
