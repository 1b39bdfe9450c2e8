"""python/fastprof/_fastprof.pyi agrees with the built C module (issue 13,
item 5): the same members, and each function's parameters (names, kinds,
defaults) as inspect.signature() reads them from the C docstrings' text
signatures. The stub and py.typed are installed with the package.

The stub is read with `ast`, not a type checker, so this runs on every
supported Python without extra dependencies.
"""
import ast
import inspect
import os
import sys
import types

import pytest

import helpers

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE, reason="checks fastprof's own C module")

import fastprof  # noqa: E402
from fastprof import _fastprof  # noqa: E402

PKG_DIR = os.path.dirname(os.path.abspath(fastprof.__file__))
STUB = os.path.join(PKG_DIR, "_fastprof.pyi")
TYPE_ONLY_BASES = {"TypedDict", "Protocol"}     # stub-only helper classes (e.g. _ClockInfo)


def stub_tree():
    with open(STUB, encoding="utf-8") as f:
        return ast.parse(f.read(), STUB)


def top_level(tree):
    """{name: node} of the stub's module-level definitions (imports left out)."""
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign):
            names[node.target.id] = node
    return names


def is_type_only(node):
    return isinstance(node, ast.ClassDef) and any(
        isinstance(b, ast.Name) and b.id in TYPE_ONLY_BASES for b in node.bases)


def class_members(node):
    """{name: FunctionDef} of a stub class, properties included."""
    return {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}


def is_property(fn):
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def stub_params(fn, drop_self):
    """[(name, kind, default)] of a stub function, as inspect names kinds."""
    a = fn.args
    positional = [(p, inspect.Parameter.POSITIONAL_ONLY) for p in a.posonlyargs] + \
                 [(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [(p.arg, kind, d) for (p, kind), d in zip(positional, defaults)]
    if a.vararg:
        out.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, None))
    out += [(p.arg, inspect.Parameter.KEYWORD_ONLY, d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, None))
    if drop_self:
        assert out and out[0][0] == "self", fn.name
        out = out[1:]
    return [(name, kind, inspect.Parameter.empty if d is None else ast.literal_eval(d))
            for name, kind, d in out]


def runtime_params(obj):
    return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]


def runtime_public(obj):
    """The names a module or class defines, dunders left out."""
    names = vars(obj) if isinstance(obj, type) else {n: getattr(obj, n) for n in dir(obj)}
    return {n for n in names if not (n.startswith("__") and n.endswith("__"))}


def test_stub_and_py_typed_are_installed_with_the_package():
    # PKG_DIR is the build under test (build/pyX.Y/lib/fastprof under make)
    assert os.path.isfile(STUB)
    assert os.path.isfile(os.path.join(PKG_DIR, "py.typed"))
    assert os.path.basename(os.path.dirname(_fastprof.__file__)) == "fastprof"
    assert os.path.dirname(os.path.abspath(_fastprof.__file__)) == PKG_DIR


def test_module_members_agree():
    stub = {n for n, node in top_level(stub_tree()).items() if not is_type_only(node)}
    assert stub == runtime_public(_fastprof)


@pytest.mark.parametrize("name", ["_after_fork_child", "_mem_fail_after"])
def test_module_function_signatures_agree(name):
    fn = top_level(stub_tree())[name]
    assert stub_params(fn, drop_self=False) == runtime_params(getattr(_fastprof, name))


def test_profiler_members_agree():
    stub = class_members(top_level(stub_tree())["Profiler"])
    runtime = runtime_public(_fastprof.Profiler)
    assert set(stub) - {"__init__"} == runtime
    for name, fn in stub.items():
        if name == "__init__":
            # the class's own text signature: Profile(timer=None, ...).
            # 3.9's PyType_FromSpec drops a type's text signature from its doc.
            if sys.version_info < (3, 10):
                continue
            assert stub_params(fn, drop_self=True) == runtime_params(_fastprof.Profiler)
        elif is_property(fn):
            assert isinstance(vars(_fastprof.Profiler)[name], types.GetSetDescriptorType), name
        else:
            # an unbound method descriptor: `self` is positional-only on both sides
            assert stub_params(fn, drop_self=False) == runtime_params(getattr(_fastprof.Profiler, name)), name


@pytest.mark.parametrize("name", ["profiler_entry", "profiler_subentry"])
def test_record_fields_agree(name):
    node = top_level(stub_tree())[name]
    stub_fields = [n for n, fn in class_members(node).items() if is_property(fn)]
    cls = getattr(_fastprof, name)
    fields = [n for n, v in vars(cls).items() if isinstance(v, types.MemberDescriptorType)]
    assert stub_fields == fields                      # same names, same order
    assert len(fields) == cls.n_fields


def test_return_values_have_the_stub_types():
    def work():
        return sorted([2, 1])

    p = _fastprof.Profiler(callpaths=True)
    assert p.enabled is False
    assert p.enable() is None
    work()
    assert p.disable(this_thread=False) is None
    stats = p.getstats()
    assert stats and all(isinstance(e, _fastprof.profiler_entry) for e in stats)
    for e in stats:
        assert isinstance(e.code, (types.CodeType, str))
        assert isinstance(e.callcount, int) and isinstance(e.reccallcount, int)
        assert isinstance(e.totaltime, float) and isinstance(e.inlinetime, float)
        assert e.calls is None or all(isinstance(s, _fastprof.profiler_subentry) for s in e.calls)
    paths = p.callpaths()
    assert paths and all(isinstance(t, tuple) and [type(x) for x in t[:1] + t[2:]] == [int, int, float, float]
                         and isinstance(t[1], (types.CodeType, str)) for t in paths)
    assert all(isinstance(t, tuple) and len(t) == 3 and all(isinstance(x, int) for x in t)
               for t in p.threads())
    assert isinstance(p.memory(), int)
    info = p.clock_info()
    assert set(info) == {"clock", "ticks_per_second"} and isinstance(info["ticks_per_second"], float)
    assert info["clock"] in ("tsc", "monotonic", "cpu", "custom")
    assert p.clear() is None
    assert isinstance(_fastprof.USES_MONITORING, int)
