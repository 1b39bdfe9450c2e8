"""Profiles of one program against a library installed in two places pair
the same functions (issue 23, item 1): ``fastprof diff`` shows the real
change only, ``fastprof merge`` sums each function once.

The program that showed it: jinja2 3.0.3 and 3.1.6 in two ``pip install
--target`` directories, diffed (1,047 gone/new rows).  Here a toy library
in two versions, written into two directories that each run puts on
``sys.path`` (what ``--target`` makes): version 2 moves every line (a
comment on top), calls a helper twice where version 1 called it once, and
renames a private function; both have two lambdas in one method and
comprehensions and generator expressions, which must pair by qualified name
and order, not by short name.
"""
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402
from fastprof import cli  # noqa: E402
from fastprof.data.portable_names import portable_names  # noqa: E402
from fastprof.data.profile_file import load_profile  # noqa: E402
from fastprof.tools import diff, merge
from fastprof.tools.view import format_count  # noqa: E402

CORE_V1 = '''\
def _helper(x):
    return x * 2 + 1


def _old_private(xs):
    return [v + 1 for v in xs]


class Renderer:
    def __init__(self, n):
        self.n = n
        self.keyfn = lambda v: -v
        self.other = lambda v: v % 3

    def render(self, items):
        ordered = sorted(items, key=self.keyfn)
        buckets = sorted(items, key=self.other)
        out = []
        for v in ordered:
            out.append(_helper(v))
        total = sum(v for v in buckets)
        return _old_private(out), total
'''

CORE_V2 = '''\
# toylib 2.0: render() calls the helper twice, _old_private is _prepare_rows

def _helper(x):
    return x * 2 + 1


def _prepare_rows(xs):
    return [v + 1 for v in xs]


class Renderer:
    def __init__(self, n):
        self.n = n
        self.keyfn = lambda v: -v
        self.other = lambda v: v % 3

    def render(self, items):
        ordered = sorted(items, key=self.keyfn)
        buckets = sorted(items, key=self.other)
        out = []
        for v in ordered:
            w = _helper(v)
            out.append(_helper(w))
        total = sum(v for v in buckets)
        return _prepare_rows(out), total
'''

INIT = '''\
from .core import Renderer


def run(n):
    r = Renderer(n)
    for i in range(n):
        r.render(list(range(i % 20)))
    return r
'''

DRIVER = '''\
import sys
sys.path.insert(0, sys.argv[1])
import toylib

toylib.run(200)
'''

N_RENDER = 200
N_ITEMS = sum(i % 20 for i in range(N_RENDER))   # _helper calls in version 1


def install(root, core, *parts):
    """Write toylib into ROOT/PARTS.../toylib (a --target directory); the
    directory that holds the package."""
    where = root.joinpath(*parts) if parts else root
    pkg = where / "toylib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(INIT)
    (pkg / "core.py").write_text(core)
    return where


def record(tmp_path, name, target, *runner):
    """Profile the driver against the install in *target*, in a process of its own."""
    driver = tmp_path / "driver.py"
    if not driver.exists():
        driver.write_text(DRIVER)
    out = str(tmp_path / name)
    runner = runner or ("-m", "fastprof")
    proc = helpers.run_python(list(runner) + ["-o", out, str(driver), str(target)])
    assert proc.returncode == 0, proc.stderr
    return out


def call(capsys, *args):
    rc = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def status_rows(out):
    """{function text: status} of the [new] and [gone] rows of a diff's table."""
    found = {}
    for line in out.splitlines():
        m = re.search(r"(\S+)  (\S+):\d+  \[(new|gone)\]$", line)
        if m:
            found["%s:%s" % (m.group(2), m.group(1))] = m.group(3)
    return found


def calls_of(data, portable):
    names = portable_names(data.stats, data.qualnames, data.paths)
    found = [v[1] for k, v in data.stats.items() if names[k] == portable]
    assert len(found) == 1, (portable, sorted(names.values()))
    return found[0]


@pytest.fixture
def two_installs(tmp_path):
    a = install(tmp_path, CORE_V1, "target-a")
    b = install(tmp_path, CORE_V2, "target-b")
    return a, b


@pytest.mark.skipif(helpers.USING_CPROFILE, reason="runs python -m fastprof")
def test_diff_of_two_installs_shows_the_real_change_only(tmp_path, capsys, two_installs):
    a, b = two_installs
    pa = record(tmp_path, "a.prof", a, "-m", "fastprof", "--lines", "toylib")
    pb = record(tmp_path, "b.prof", b, "-m", "fastprof", "--lines", "toylib")
    da, db = load_profile(pa), load_profile(pb)
    assert da.paths[str(a / "toylib" / "core.py")] == os.path.join("toylib", "core.py")
    changes = diff.diff_stats(da.stats, db.stats, da.qualnames, db.qualnames, da.paths, db.paths)
    # the exact signal: which functions' calls changed, which are new or gone
    counted = {(c.path, diff.readable_name(c.key, db.qualnames if c.new_key else da.qualnames),
                "new" if c.base_key is None else "gone" if c.new_key is None else "calls")
               for c in changes if diff.calls_changed(c)}
    core = os.path.join("toylib", "core.py")
    # (before 3.12 the comprehension of the renamed function is a function
    # of its own: the only <listcomp> of its file on both sides, it pairs)
    assert counted == {(core, "_helper", "calls"), (core, "_old_private", "gone"),
                       (core, "_prepare_rows", "new")}, counted
    helper = next(c for c in changes if c.path == core and c.key[2] == "_helper")
    assert (helper.base[1], helper.new[1]) == (N_ITEMS, 2 * N_ITEMS)
    # every other function of the library paired with itself, moved a line or two down
    lambdas = [c for c in changes if c.path == core and c.key[2] == "<lambda>"]
    assert len(lambdas) == 2 and all(c.base_key and c.new_key for c in lambdas)
    assert sorted((c.base_key[1], c.new_key[1]) for c in lambdas) == [(12, 14), (13, 15)]
    paired = [c for c in changes if c.base_key and c.new_key and c.path.startswith("toylib")]
    assert len(paired) >= 6 and all(c.base_key[0] != c.new_key[0] for c in paired)

    out = call(capsys, "diff", pa, pb, "-s", "calls", "-n", "0")
    assert status_rows(out) == {"toylib/core.py:_old_private": "gone",
                                "toylib/core.py:_prepare_rows": "new"}, out
    assert "paired across installs" in out and "--full-paths" in out
    assert str(a) not in out and str(b) not in out
    top = out.split("\n\n")[1].splitlines()[1]
    assert re.search(r"_helper  toylib/core\.py:3  \[moved from line 1\]$", top), out
    # the line section pairs the same way (its lines by the shift of the
    # first line): render's loop got a line, so what follows has other hits
    lines = out[out.index("Lines:"):]
    assert "Renderer.render  toylib/core.py:17" in lines, lines
    moved = next(ln for ln in lines.splitlines() if "out.append(_helper(w))" in ln)
    assert moved.split()[:4] == ["23", str(N_RENDER), format_count(N_ITEMS),
                                 "+" + format_count(N_ITEMS - N_RENDER)], lines

    full = call(capsys, "diff", pa, pb, "-s", "calls", "-n", "0", "--full-paths")
    assert "%s:3  (base: %s:1)" % (b / "toylib" / "core.py", a / "toylib" / "core.py") in full, full


@pytest.mark.skipif(helpers.USING_CPROFILE, reason="runs python -m fastprof")
def test_merge_of_two_installs_sums_each_function_once(tmp_path, capsys, two_installs):
    a, b = two_installs
    pa = record(tmp_path, "a.prof", a, "-m", "fastprof", "--lines", "toylib.core:_helper")
    pb = record(tmp_path, "b.prof", b, "-m", "fastprof", "--lines", "toylib.core:_helper")
    out = str(tmp_path / "sum.prof")
    cli.main(["merge", pa, pb, "-o", out])
    capsys.readouterr()
    total = load_profile(out)
    core = os.path.join("toylib", "core.py")
    # one key for each function: the first input's, but for the one b renamed
    assert {k[2] for k in total.stats if k[0] == str(b / "toylib" / "core.py")} == {"_prepare_rows"}
    assert calls_of(total, "toylib/core.py:_helper") == 3 * N_ITEMS
    assert calls_of(total, "toylib/core.py:Renderer.render") == 2 * N_RENDER
    assert calls_of(total, "toylib/__init__.py:run") == 2
    for n in (1, 2):
        assert calls_of(total, "toylib/core.py:Renderer.__init__.<locals>.<lambda>#%d" % n) == 2 * N_ITEMS
    assert total.paths[str(a / "toylib" / "core.py")] == core
    assert str(b / "toylib" / "__init__.py") not in total.paths   # all its functions paired
    # callers were renamed with their functions: _helper's caller is one render
    helper = next(k for k in total.stats if k[0].endswith(core) and k[2] == "_helper")
    assert [c[2] for c in total.stats[helper][4]] == ["render"]
    # line stats too: one table for _helper, its body's hits summed
    (key, table), = [(k, t) for k, t in total.lines.items() if k[2] == "_helper"]
    assert key == helper and table[key[1] + 1][0] == 3 * N_ITEMS
    # profiles of one run keep two files at one relative path apart
    apart = merge.merge_profiles([load_profile(pa), load_profile(pb)], pair_installs=False)
    assert {k[0] for k in apart.stats if k[0].endswith(core)} == {
        str(a / "toylib" / "core.py"), str(b / "toylib" / "core.py")}


def test_cprofile_files_of_two_site_packages_pair_by_name(tmp_path, capsys):
    # no trailer, no qualified names: paths are cut at site-packages by the
    # reader, and repeated names (two lambdas) pair in order of first line
    a = install(tmp_path, CORE_V1, "venv-a", "lib", "site-packages")
    b = install(tmp_path, CORE_V2, "venv-b", "lib", "site-packages")
    pa = record(tmp_path, "a.prof", a, "-m", "cProfile")
    pb = record(tmp_path, "b.prof", b, "-m", "cProfile")
    out = call(capsys, "diff", pa, pb, "-s", "calls", "-n", "0")
    rows = status_rows(out)
    assert rows.pop("toylib/core.py:_old_private") == "gone", out
    assert rows.pop("toylib/core.py:_prepare_rows") == "new", out
    assert set(rows) <= {"toylib/core.py:<listcomp>"}, out
    da, db = load_profile(pa), load_profile(pb)
    changes = diff.diff_stats(da.stats, db.stats)
    lambdas = sorted((c.base_key[1], c.new_key[1]) for c in changes
                     if c.key[2] == "<lambda>" and c.path == os.path.join("toylib", "core.py"))
    assert lambdas == [(12, 14), (13, 15)]


def test_pairing_by_qualified_name_and_order_not_short_name():
    from fastprof.data.portable_names import pair_functions, portable_parts
    fa, fb = "/a/site-packages/m.py", "/b/m.py"
    # two classes' methods named run, two lambdas of f; b adds a lambda in g
    base = [(fa, 3, "run"), (fa, 9, "run"), (fa, 20, "<lambda>"), (fa, 21, "<lambda>")]
    new = [(fb, 3, "run"), (fb, 12, "run"), (fb, 20, "<lambda>"), (fb, 21, "<lambda>"),
           (fb, 30, "<lambda>")]
    qa = {base[0]: "A.run", base[1]: "B.run", base[2]: "f.<locals>.<lambda>", base[3]: "f.<locals>.<lambda>"}
    qb = {new[0]: "A.run", new[1]: "B.run", new[2]: "f.<locals>.<lambda>", new[3]: "f.<locals>.<lambda>",
          new[4]: "g.<locals>.<lambda>"}
    pairs = pair_functions(portable_parts(base, qa, {fa: "m.py"}), portable_parts(new, qb, {fb: "m.py"}))
    assert pairs == {new[0]: base[0], new[1]: base[1], new[2]: base[2], new[3]: base[3]}
    # the first lambda gone: the one left pairs with the one on its line
    pairs = pair_functions(portable_parts(base, qa, {fa: "m.py"}),
                           portable_parts(new[:2] + new[3:4], qb, {fb: "m.py"}))
    assert pairs[new[3]] == base[3]
