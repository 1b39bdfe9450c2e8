"""The C loops behind ``profiler.entries_to_stats`` (csrc/fpy_stats_dict.c)
and ``model.add_stats`` (csrc/fpy_stats_sum.c): the same dicts, number for
number, as the Python loops they replace (the oracles:
``stats_oracle.py_entries_to_stats``, and ``model.python_add_stats``, which
is also the loop the offline commands run without the extension), and a
clear exception, never a crash, on bad input."""
import sys

import pytest

from helpers import USING_CPROFILE

if USING_CPROFILE:
    pytest.skip("fastprof's C helpers", allow_module_level=True)

from stats_oracle import py_entries_to_stats, py_label  # noqa: E402

from fastprof import _fastprof  # noqa: E402
from fastprof.data import model  # noqa: E402
from fastprof.data.model import KeyChooser, add_stats, match_key, merge_stats, stats_result  # noqa: E402
from fastprof.recording.profiler import entries_to_stats  # noqa: E402


def py_add_stats(out, table, keys):
    """The oracle: the loop model.add_stats runs without the extension."""
    model.python_add_stats(out, table, keys)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def workload():
    """Recursion, C calls, and entries sharing a key: two lambdas on one
    line, closures of one factory, a function redefined in a loop."""
    fib(12)
    sorted([3, 1, 2], key=lambda x: -x), sorted([1, 2], key=lambda x: x)  # noqa: E731
    def factory(k):
        def inner(x):
            return x + k
        return inner
    for k in range(3):
        factory(k)(k)
        exec("def again(): return len([])\nagain()", {})
    fib(5)


def recorded_entries(**options):
    import fastprof
    prof = fastprof.Profile(**options)
    prof.enable()
    workload()
    prof.disable()
    return prof.getstats()


@pytest.mark.parametrize("options", [{}, {"builtins": False}, {"subcalls": False}])
def test_entries_stats_is_the_python_loop(options):
    entries = recorded_entries(**options)
    got, want = entries_to_stats(entries), py_entries_to_stats(entries)
    assert got == want
    assert list(got) == list(want)  # the same order too
    assert [list(v[4]) for v in got.values()] == [list(v[4]) for v in want.values()]
    shared = [k for k in want if k[2] in ("<lambda>", "inner", "again")]
    assert shared  # keys of several code objects are there, summed
    for v in got.values():
        assert all(type(a) is type(b) for a, b in zip(v[:4], (0, 0, 0.0, 0.0)))


def test_entries_stats_of_plain_tuples_and_a_callee_without_entry():
    code = fib.__code__
    other = (lambda: 0).__code__
    entries = [(code, 3, 1, 2.0, 0.5, [(code, 1, 1, 0.25, 0.125), (other, 2, 0, 1.0, 1.0),
                                       ("len", 1, 0, 0.1, 0.1)]),
               ["len", 4, 0, 0.2, 0.2, None], (code, 1, 0, 1.0, 0.5, [])]
    got = _fastprof._entries_stats(entries)
    assert got == py_entries_to_stats(entries)
    assert got[py_label(code)][:4] == (2 + 1, 3 + 1, 0.5 + 0.5, 2.0 + 1.0)
    assert py_label(other) not in got  # an edge to it is left out, as before
    assert got[("~", 0, "len")][4] == {py_label(code): (1, 1, 0.1, 0.1)}


@pytest.mark.parametrize("bad, message", [
    (None, "not iterable"),
    ([(1, 2, 3)], "an entry .* has 3 fields, not 6"),
    ([("f", 1, 0, 0.1, 0.1, 5)], "not iterable"),
    ([("f", 1, 0, 0.1, 0.1, [("f", 1)])], "a subentry .* has 2 fields, not 5"),
    ([(object(), 1, 0, 0.1, 0.1, None)], "co_filename"),
    ([("f", "1", 0, 0.1, 0.1, None)], "unsupported operand"),
])
def test_entries_stats_refuses_bad_input(bad, message):
    with pytest.raises((TypeError, AttributeError), match=message):
        _fastprof._entries_stats(bad)


def tables():
    """Tables as the per-test profiles have them: C names with addresses,
    edges summed into a sum that has them, new keys."""
    a = ("~", 0, "<built-in method __new__ of type object at 0x1>")
    b = ("~", 0, "<built-in method __new__ of type object at 0x2>")
    f, g = ("f.py", 1, "f"), ("g.py", 3, "g")
    return [
        {f: (1, 1, 0.5, 0.75, {}), a: (2, 2, 0.1, 0.1, {f: (2, 2, 0.1, 0.1)})},
        {f: (1, 2, 0.25, 0.5, {g: (1, 1, 0.25, 0.5)}), b: (1, 1, 0.3, 0.3, {f: (1, 1, 0.3, 0.3)}),
         g: (1, 1, 0.0, 0.5, {})},
        {g: [2, 2, 0.5, 1.0, {f: [2, 2, 0.5, 1.0]}]},  # lists (from JSON)
        {f: (0, 1, 0.1, 0.1, {g: (1, 1, 0.1)})},  # a shorter edge: zip's length
    ]


@pytest.mark.parametrize("keys", [KeyChooser, lambda: match_key])
def test_add_stats_is_the_python_loop(keys):
    got, want = {}, {}
    k_got, k_want = keys(), keys()
    for table in tables():
        add_stats(got, table, k_got)
        py_add_stats(want, table, k_want)
    assert got == want
    assert [list(v[4]) for v in got.values()] == [list(v[4]) for v in want.values()]
    assert stats_result(got) == merge_stats(tables(), keys())


def with_addresses(n):
    """A C function named with an address, a different one each call."""
    for i in range(n):
        object.__new__(type("T%d" % i, (), {}))


def test_add_stats_of_real_profiles_is_the_python_loop():
    """Recorded tables (recursion: fib's edges from itself; callers dicts;
    C functions named with addresses, each profile its own, summed under
    KeyChooser's first key) added by C and by Python: equal sums, in the
    same order."""
    import fastprof
    got, want, k_got, k_want = {}, {}, KeyChooser(), KeyChooser()
    for n in range(1, 4):
        entries = recorded_entries()
        prof = fastprof.Profile()
        prof.runcall(with_addresses, n)
        table = entries_to_stats(entries)
        extra = {("~", 0, k[2].replace("at 0x", "at 0x%d" % n)) if " at 0x" in k[2] else k: v
                 for k, v in entries_to_stats(prof.getstats()).items()}
        for t in (table, extra):
            add_stats(got, t, k_got)
            py_add_stats(want, t, k_want)
    assert got == want
    assert [list(v[4]) for v in got.values()] == [list(v[4]) for v in want.values()]
    assert list(got) == list(want)
    fib_key = next(k for k in got if k[2] == "fib")
    assert fib_key in got[fib_key][4]  # recursion: fib's edge from itself
    addressed = [k for k in want if " at 0x" in k[2]]
    assert addressed and len({match_key(k) for k in addressed}) == len(addressed)
    assert k_got.first == k_want.first


def test_without_the_extension_add_stats_is_the_python_loop(monkeypatch):
    """model.add_stats runs python_add_stats when the extension could not be
    imported (model._fastprof is None): merge_stats gives the same dict."""
    want = merge_stats(tables(), KeyChooser())
    calls = []
    real = model.python_add_stats
    monkeypatch.setattr(model, "python_add_stats", lambda *a: (calls.append(1), real(*a)))
    monkeypatch.setattr(model, "_fastprof", None)
    got = merge_stats(tables(), KeyChooser())
    assert got == want and list(got) == list(want)
    assert len(calls) == len(tables())


@pytest.mark.parametrize("table", [
    {("f", 1, "f"): (1, 1, 0.1)},
    {("f", 1, "f"): 5},
    {("f", 1, "f"): (1, 1, 0.1, 0.1, [])},
    {("f", 1, "f"): (1, 1, 0.1, 0.1, {("g", 1, "g"): 5})},
    {("f", 1, "f"): ("x", 1, 0.1, 0.1, {})},
    {("f", 1, "f"): (1, 1, 0.1, 0.1, {}), ("g", 1, "g"): (1, 1, 0.1, 0.1, [])},
])
def test_python_loop_refuses_bad_input_as_c_does(table):
    """The same exception type, and what was added before it stays added
    in both."""
    sums = []
    for add in (_fastprof._add_stats, model.python_add_stats):
        out = {("f", 1, "f"): [1, 1, 0.5, 0.5, {}]}
        with pytest.raises(TypeError) as info:
            add(out, table, match_key)
        sums.append((out, type(info.value)))
    assert sums[0] == sums[1]


class Boom(Exception):
    pass


def raising_keys(key):
    raise Boom(key)


@pytest.mark.parametrize("args, error, message", [
    (([], {}, match_key), TypeError, "must be dict"),
    (({}, {("f", 1, "f"): (1, 1, 0.1)}, match_key), TypeError, "5 fields"),
    (({}, {("f", 1, "f"): 5}, match_key), TypeError, None),
    (({}, {("f", 1, "f"): (1, 1, 0.1, 0.1, [])}, match_key), TypeError, "callers must be a dict"),
    (({}, {("f", 1, "f"): (1, 1, 0.1, 0.1, {("g", 1, "g"): 5})}, match_key), TypeError, None),
    (({}, {("f", 1, "f"): (1, 1, 0.1, 0.1, {})}, raising_keys), Boom, None),
    (({}, {("f", 1, "f"): (1, 1, 0.1, 0.1, {})}, 5), TypeError, "keys must be callable"),
    (({}, {("f", 1, "f"): (1, 1, 0.1, 0.1, {})}, match_key, []), TypeError, "chosen must be a dict"),
    (({("f", 1, "f"): (1, 1, 0.1, 0.1, {})}, {("f", 1, "f"): (1, 1, 0.1, 0.1, {})}, match_key),
     TypeError, "the sum's rows must be lists"),
    (({}, {("f", 1, "f"): ("x", 1, 0.1, 0.1, {})}, match_key), TypeError, None),
])
def test_add_stats_refuses_bad_input(args, error, message):
    with pytest.raises(error, match=message):
        _fastprof._add_stats(*args)


def test_add_stats_with_keys_that_change_the_table():
    """A keys() that empties the table and the sum while the C loop runs:
    an exception or a sum, never a crash."""
    out = {}
    table = {("f", i, "f"): (1, 1, 0.1, 0.1, {("g", j, "g"): (1, 1, 0.1, 0.1) for j in range(5)})
             for i in range(20)}

    rows = list(table.values())
    seen = []

    def keys(key):
        seen.append(key)
        table.clear()
        out.clear()
        for row in rows:
            row[4].clear()
        return key
    _fastprof._add_stats(out, table, keys)
    # every row was added (the C loop reads a copy of the items), without
    # edges (keys() cleared them first); each keys() call emptied the sum
    assert len(seen) == 20
    assert out == {("f", 19, "f"): [1, 1, 0.1, 0.1, {}]}


@pytest.mark.skipif(not hasattr(sys, "getrefcount"), reason="needs sys.getrefcount")
def test_no_reference_is_kept_or_lost():
    key, caller = ("f.py", 1, "f" * 3), ("g.py", 2, "g" * 3)
    edge = (1, 1, 0.5, 0.5)
    entries = recorded_entries()
    code = entries[0].code
    before = [sys.getrefcount(x) for x in (key, caller, edge, code)]
    for _ in range(200):
        out = {}
        add_stats(out, {key: (1, 1, 0.5, 0.5, {caller: edge})}, KeyChooser())
        add_stats(out, {key: (1, 1, 0.5, 0.5, {caller: edge})}, match_key)
        with pytest.raises(TypeError):
            _fastprof._add_stats(out, {key: (1, 1, 0.5, 0.5, {caller: 5})}, match_key)
        entries_to_stats(entries)
        with pytest.raises(TypeError):
            _fastprof._entries_stats([(code, 1, 0, 0.1, 0.1, [(code,)])])
        del out
    assert [sys.getrefcount(x) for x in (key, caller, edge, code)] == before


@pytest.mark.parametrize("options", [{}, {"builtins": False}, {"subcalls": False}, {"threads": True}])
def test_stats_from_the_tables_are_those_of_the_entries(options):
    """Profiler._stats_and_codes: the dict entries_to_stats(getstats())
    gives (the Python loop's), in the same order, and the entries' codes;
    per thread too."""
    import threading

    import fastprof
    prof = fastprof.Profile(**options)
    prof.enable()
    workload()
    if options.get("threads"):
        t = threading.Thread(target=workload)
        t.start()
        t.join()
    prof.disable()
    stats, codes = prof._stats_and_codes()
    entries = prof.getstats()
    want = py_entries_to_stats(entries)
    assert stats == want
    assert list(stats) == list(want)
    assert [list(v[4]) for v in stats.values()] == [list(v[4]) for v in want.values()]
    assert codes == [e.code for e in entries]
    for tid, _ident, _native in prof.threads():
        assert prof._stats_and_codes(tid)[0] == py_entries_to_stats(prof.getstats(tid))
    idents = {ident for _tid, ident, _native in prof.threads()}
    if options.get("threads"):
        # (a thread the test runner keeps, as xdist's, may be recorded too)
        assert {threading.main_thread().ident, t.ident} <= idents
    else:
        assert idents == {threading.get_ident()}
    with pytest.raises(KeyError):
        prof._stats_and_codes(10 ** 9)
    prof.create_stats()
    assert prof.stats == want


def test_stats_from_the_tables_when_memory_runs_out():
    """The core's allocations failing (the snapshot of the tables): a
    MemoryError, and the stats are still there afterwards."""
    import fastprof
    prof = fastprof.Profile()
    prof.enable()
    workload()
    prof.disable()
    want = prof._stats_and_codes()
    failed = 0
    for n in range(0, 40, 3):
        _fastprof._mem_fail_after(n)
        try:
            got = prof._stats_and_codes()
        except MemoryError:
            failed += 1
            continue
        finally:
            _fastprof._mem_fail_after(-1)
        assert got == want
    assert failed >= 1
    assert prof._stats_and_codes() == want
