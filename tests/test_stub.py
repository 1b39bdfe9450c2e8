"""python/fastprof/_fastprof.pyi agrees with the built C module: every name
the module and each of its types define (public and underscore names, and
the dunders a type adds of its own) is in the stub, as it stands on this
Python version, and every stub name is in the module; each function's
parameters (names, kinds, defaults) are those inspect.signature() reads from
the C docstrings' text signatures; properties are data descriptors and
methods are methods. The stub and py.typed are installed with the package.
"""
import inspect
import os
import sys
import types

import pytest
import stub_ast

import helpers

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE, reason="checks fastprof's own C module")

import fastprof  # noqa: E402
from fastprof import _fastprof  # noqa: E402

PKG_DIR = os.path.dirname(os.path.abspath(fastprof.__file__))
STUB = os.path.join(PKG_DIR, "_fastprof.pyi")
VERSION = sys.version_info[:2]
# What every C type gets from PyType_FromSpec / PyStructSequence and the
# stub leaves to typeshed's builtins; any other dunder a type has is its own.
GENERATED_DUNDERS = {"__doc__", "__module__", "__new__", "__init__", "__reduce__", "__repr__", "__replace__",
                     "__dict__", "__weakref__"}
DATA_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)
Py_TPFLAGS_BASETYPE = 1 << 10
CONSTRUCTORS = {"__init__", "__new__"}     # the stub's: tp_init (Profiler) or tp_new only (LineCounter)


def stub_module():
    return stub_ast.module_names(stub_ast.parse(STUB), VERSION)


def runtime_module_names():
    return {n for n in dir(_fastprof) if not (n.startswith("__") and n.endswith("__"))}


def runtime_class_names(cls):
    return {n for n in vars(cls) if n not in GENERATED_DUNDERS}


def stub_class_names(node):
    names = set(stub_ast.class_members(node, VERSION)) - CONSTRUCTORS
    return names | stub_ast.STRUCTSEQ_MEMBERS if stub_ast.is_structseq(node) else names


def runtime_params(obj):
    return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]


def has_text_signature(cls):
    # 3.9's PyType_FromSpec drops a type's text signature from its doc
    try:
        inspect.signature(cls)
    except ValueError:
        return False
    return True


C_TYPES = sorted(n for n in dir(_fastprof) if isinstance(getattr(_fastprof, n), type))


def test_stub_and_py_typed_are_installed_with_the_package():
    # PKG_DIR is the build under test (build/pyX.Y/lib/fastprof under make)
    assert os.path.isfile(STUB)
    assert os.path.isfile(os.path.join(PKG_DIR, "py.typed"))
    assert os.path.basename(os.path.dirname(_fastprof.__file__)) == "fastprof"
    assert os.path.dirname(os.path.abspath(_fastprof.__file__)) == PKG_DIR


def test_installed_stub_is_the_source_stub():
    with open(STUB, encoding="utf-8") as a, open(stub_ast.SOURCE_STUB, encoding="utf-8") as b:
        assert a.read() == b.read()


def test_module_names_agree():
    assert set(stub_module()) == runtime_module_names()


def test_every_type_is_a_stub_class():
    stub = stub_module()
    assert C_TYPES == sorted(n for n, node in stub.items() if isinstance(node, stub_ast.ast.ClassDef))


@pytest.mark.parametrize("name", sorted(n for n in dir(_fastprof)
                                        if callable(getattr(_fastprof, n))
                                        and not isinstance(getattr(_fastprof, n), type)
                                        and not n.startswith("__")))
def test_module_function_signatures_agree(name):
    fn = stub_module()[name]
    assert stub_ast.params(fn.args, drop_self=False) == runtime_params(getattr(_fastprof, name))


@pytest.mark.parametrize("type_name", C_TYPES)
def test_type_members_agree(type_name):
    cls = getattr(_fastprof, type_name)
    assert stub_class_names(stub_module()[type_name]) == runtime_class_names(cls)


@pytest.mark.parametrize("type_name", C_TYPES)
def test_type_signatures_agree(type_name):
    cls = getattr(_fastprof, type_name)
    members = stub_ast.class_members(stub_module()[type_name], VERSION)
    checked = 0
    for name, node in members.items():
        if name in CONSTRUCTORS:
            if has_text_signature(cls):
                assert stub_ast.params(node.args, drop_self=True) == runtime_params(cls), name
                checked += 1
        elif stub_ast.is_property(node):
            assert isinstance(vars(cls)[name], DATA_DESCRIPTORS), name
        elif isinstance(node, stub_ast.ast.FunctionDef):
            attr = vars(cls)[name]
            if name == "__call__":
                # a tp_call slot: its wrapper has no text signature to compare
                assert isinstance(attr, types.WrapperDescriptorType), name
                continue
            assert isinstance(attr, types.MethodDescriptorType), name
            # an unbound method descriptor: `self` is positional-only on both sides
            assert stub_ast.params(node.args, drop_self=False) == runtime_params(attr), name
            checked += 1
        else:                                      # a class attribute (__match_args__)
            assert not isinstance(vars(cls)[name], DATA_DESCRIPTORS), name
    assert checked or stub_ast.is_structseq(stub_module()[type_name])


@pytest.mark.parametrize("type_name", C_TYPES)
def test_final_in_the_stub_exactly_where_the_type_cannot_be_subclassed(type_name):
    node = stub_module()[type_name]
    final = any(isinstance(d, stub_ast.ast.Name) and d.id == "final" for d in node.decorator_list)
    subclassable = bool(getattr(_fastprof, type_name).__flags__ & Py_TPFLAGS_BASETYPE)
    assert final == (not subclassable)


def test_stub_conditions_are_read_for_this_version():
    # the 3.9-3.11 trace-function methods exist exactly where the stub says
    members = stub_ast.class_members(stub_module()["LineCounter"], VERSION)
    assert ("trace_start" in members) == (VERSION < (3, 12)) == (not _fastprof.USES_MONITORING)


@pytest.mark.parametrize("name", ["profiler_entry", "profiler_subentry"])
def test_record_fields_agree(name):
    node = stub_module()[name]
    members = stub_ast.class_members(node, VERSION)
    stub_fields = [n for n, fn in members.items() if stub_ast.is_property(fn)]
    cls = getattr(_fastprof, name)
    fields = [n for n, v in vars(cls).items() if isinstance(v, types.MemberDescriptorType)]
    assert stub_fields == fields                      # same names, same order
    assert len(fields) == cls.n_fields
    if VERSION >= (3, 10):
        assert cls.__match_args__ == tuple(fields)


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


@pytest.mark.skipif(not _fastprof.USES_MONITORING, reason="line() and jump() are sys.monitoring callbacks")
def test_line_counter_return_values_have_the_stub_types():
    def body():
        x = 1
        return x

    code = body.__code__
    disable = object()
    lc = _fastprof.LineCounter(disable)
    p = _fastprof.Profiler()
    assert lc.bind(p, 2) is None
    assert lc.add(code) is None
    first = code.co_firstlineno
    p.enable()  # (a bound profiler's lines count while it records)
    try:
        assert lc.line(code, first + 1) is None
        assert lc.line(code, first + 2) is None
        assert lc.jump(code, 0, 2) is disable              # a forward jump: not needed again
    finally:
        p.disable()
    assert lc.close() is None
    stats = lc.stats()
    assert list(stats) == [code]
    assert {n: type(h) for n, (h, _) in stats[code].items()} == {first + 1: int, first + 2: int}
    assert all(isinstance(t, float) for _, t in stats[code].values())
    own = lc.own_stats()
    assert all(isinstance(c, types.CodeType) and all(isinstance(t, float) for t in lines.values())
               for c, lines in own.items())
    assert lc.clear() is None
