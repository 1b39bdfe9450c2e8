"""The two C helpers of ``pytest --fastprof-per-test`` (issue 23 item 5):
``Profiler._stats_marshal`` writes a one-thread profile's pstats table
(and the trailer's qualified names) straight to marshal bytes
(csrc/fpy_stats_marshal.c); ``Profiler._fold_into`` adds a profiler's
tables into another one's, the session's sum (csrc/fpy_stats_fold.c).
The oracles: ``_stats_and_codes`` (itself checked against the Python loop
in test_stats_c.py), ``names.qualnames_of`` and ``model.merge_stats``."""
import marshal
import os
import sys
import threading

import pytest

from helpers import USING_CPROFILE

if USING_CPROFILE:
    pytest.skip("fastprof's C helpers", allow_module_level=True)

import fastprof  # noqa: E402
from fastprof import _fastprof  # noqa: E402
from fastprof.data.model import merge_stats  # noqa: E402
from fastprof.data.names import qualnames_of  # noqa: E402
from fastprof.modes.pytest_plugin import HIDDEN, HiddenRows  # noqa: E402

ELSEWHERE = "<elsewhere>"  # the file of the functions standing for the plugin's own
RULE = HiddenRows(ELSEWHERE)  # the plugin's rule, for that file
HIDES = RULE.hides_c_function


class Shape:
    def area(self, n):
        return sum(range(n)) + len(str(n))


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def gen(n):
    yield from range(n)


def workload():
    """Recursion, C calls, a method, a generator, a closure: no two
    functions share a pstats key."""
    fib(10)
    Shape().area(5)
    sorted([3, 1, 2])
    list(gen(4))

    def inner(x):
        return x + 1
    inner(1)


def recorded(work=workload, **options):
    prof = fastprof.Profile(**options)
    prof.enable()
    work()
    prof.disable()
    return prof


def elsewhere_code():
    """A function compiled as file ELSEWHERE that calls the workload, fib
    and a C method ({}.clear) nothing else calls."""
    ns = {"workload": workload, "fib": fib}
    exec(compile("def wrapper():\n    workload()\n    fib(3)\n    {}.clear()\n",
                 ELSEWHERE, "exec"), ns)
    return ns["wrapper"]


def elsewhere_profile():
    wrapper = elsewhere_code()
    prof = fastprof.Profile()
    prof.enable()
    wrapper()
    fib(2)
    prof.disable()
    return prof


def test_table_is_the_stats_dict_in_its_order():
    prof = recorded()
    table, quals, codes, files, calls, tid = prof._stats_marshal(ELSEWHERE, HIDES)
    stats, want_codes = prof._stats_and_codes()
    got = marshal.loads(table)
    assert got == stats
    assert list(got) == list(stats)
    assert [list(v[4]) for v in got.values()] == [list(v[4]) for v in stats.values()]
    assert codes == want_codes
    assert calls == sum(v[1] for v in stats.values())
    assert tid == [r[0] for r in prof.threads()][0]
    assert files == list(dict.fromkeys(c.co_filename for c in codes if not isinstance(c, str)))
    # written with references, as marshal's version 4: its size, not twice it
    assert len(table) <= len(marshal.dumps(stats)) < len(marshal.dumps(stats, 2))


def test_qualified_names_are_those_of_the_codes():
    prof = recorded()
    _table, quals, codes, _files, _calls, _tid = prof._stats_marshal(ELSEWHERE, HIDES)
    want = qualnames_of(codes)
    if sys.version_info < (3, 11):  # no co_qualname: the caller reads them
        assert quals == b"" and want == {}
        return
    assert any(q == "Shape.area" for q in want.values())
    assert marshal.loads(quals) == [k + (q,) for k, q in want.items()]


def test_rows_of_the_skipped_file_and_edges_from_them_are_left_out():
    """As the plugin's rule (pytest_plugin.HiddenRows) says: the file's
    rows, the edges from them, and a "...disable..." C function only they
    called."""
    prof = elsewhere_profile()
    stats, _codes = prof._stats_and_codes()
    own = {k for k in stats if k[0] == ELSEWHERE}
    assert own and any(ELSEWHERE == c[0] for v in stats.values() for c in v[4])
    # the plugin's rule names "disable": here the C method is dict.clear,
    # kept (its name does not say disable) though only the wrapper called it
    want = {k: v[:4] + ({c: e for c, e in v[4].items() if c not in own},)
            for k, v in stats.items() if k not in own}
    table, _q, codes, _f, calls, _t = prof._stats_marshal(ELSEWHERE, HIDES)
    assert marshal.loads(table) == want
    assert any("clear" in k[2] for k in want)
    assert calls == sum(v[1] for v in stats.values())  # (skipped rows counted)
    assert all(getattr(c, "co_filename", None) != ELSEWHERE for c in codes)


def phase_and_end():
    """A profile as the plugin records one: enabled and disabled from
    functions of file ELSEWHERE."""
    prof = fastprof.Profile()
    ns = {"prof": prof, "workload": workload}
    exec(compile("def phase():\n    prof.enable()\n    workload()\n", ELSEWHERE, "exec"), ns)
    exec(compile("def end():\n    prof.disable()\n", ELSEWHERE, "exec"), ns)
    ns["phase"]()
    ns["end"]()
    return prof


def test_a_disable_method_only_the_skipped_file_called_is_left_out():
    prof = phase_and_end()
    stats, _codes = prof._stats_and_codes()
    disable = [k for k in stats if k[0] == "~" and "disable" in k[2]]
    assert disable and set(stats[disable[0]][4]) <= {k for k in stats if k[0] == ELSEWHERE}
    got = marshal.loads(prof._stats_marshal(ELSEWHERE, HIDES)[0])
    assert not [k for k in got if k[0] == ELSEWHERE or "disable" in k[2]]
    assert got == {k: v for k, v in marshal.loads(prof._stats_marshal("<none>", HIDES)[0]).items()
                   if k[0] != ELSEWHERE and "disable" not in k[2]}


class ClearToo(HiddenRows):
    """A rule that also hides a C function named "...clear..." only hidden rows called."""

    @staticmethod
    def hides_c_function(name):
        return "clear" in name or HiddenRows.hides_c_function(name)


def test_c_hides_what_it_is_handed_and_nothing_more():
    """The rule is the caller's: C asks hides_c_function of each C function
    only skipped rows called, once, and hides what it accepts; None hides
    no C function."""
    prof = phase_and_end()
    stats, _codes = prof._stats_and_codes()
    disable = [k for k in stats if k[0] == "~" and "disable" in k[2]]
    kept = marshal.loads(prof._stats_marshal(ELSEWHERE, None)[0])
    assert len(disable) == 1 and disable[0] in kept
    asked = []
    assert marshal.loads(prof._stats_marshal(ELSEWHERE, asked.append)[0]) == kept  # (None: false)
    assert asked == [disable[0][2]]
    assert disable[0] not in marshal.loads(prof._stats_marshal(ELSEWHERE, lambda name: 1)[0])
    prof = elsewhere_profile()
    clear = [k for k in prof._stats_and_codes()[0] if "clear" in k[2]]
    assert clear and clear[0] in marshal.loads(prof._stats_marshal(ELSEWHERE, HIDES)[0])
    assert clear[0] not in marshal.loads(prof._stats_marshal(ELSEWHERE, ClearToo.hides_c_function)[0])


@pytest.mark.parametrize("rule", [RULE, ClearToo(ELSEWHERE), HiddenRows("<none>")],
                         ids=["plugin", "clear-too", "nothing"])
@pytest.mark.parametrize("make", [phase_and_end, elsewhere_profile], ids=["phase", "wrapper"])
def test_c_and_the_general_path_apply_the_same_rule(rule, make):
    """One definition, two paths: the table C writes is the general path's
    (HiddenRows.without of the profile's data), for the plugin's rule and
    for others."""
    prof = make()
    got = prof.one_thread_marshal(rule.file, rule.hides_c_function)
    data = rule.without(prof.profile_data())
    assert marshal.loads(got[0]) == data.stats
    assert list(marshal.loads(got[0])) == list(data.stats)
    assert set(got[3]) == {k[0] for k in data.stats if k[0] != "~"}


def test_the_plugin_hides_its_own_file():
    from fastprof.modes import pytest_plugin
    assert HIDDEN.file == pytest_plugin.FastprofSession._profiled.__code__.co_filename
    assert os.path.splitext(HIDDEN.file)[0] == os.path.splitext(pytest_plugin.__file__)[0]
    assert HIDDEN.hides_c_function("<method 'disable' of 'fastprof.Profile' objects>")
    assert not HIDDEN.hides_c_function("<built-in method builtins.len>")


class Boom(Exception):
    pass


def test_hides_c_function_errors_are_raised_and_the_tables_kept():
    prof = phase_and_end()
    want = prof._stats_and_codes()

    def boom(name):
        raise Boom(name)

    with pytest.raises(Boom):
        prof._stats_marshal(ELSEWHERE, boom)
    assert prof._stats_and_codes() == want
    with pytest.raises(TypeError, match="callable or None"):
        prof._stats_marshal(ELSEWHERE, "disable")
    with pytest.raises(TypeError):
        prof._stats_marshal(ELSEWHERE)

    def clears(name):  # frees the entries C is reading
        prof.clear()
        return True

    with pytest.raises(RuntimeError, match="changed the profiler"):
        prof._stats_marshal(ELSEWHERE, clears)
    assert prof._stats_and_codes()[0] == {}
    prof = phase_and_end()
    with pytest.raises(RuntimeError, match="changed the profiler"):
        prof._stats_marshal(ELSEWHERE, lambda name: prof.enable() or prof.disable())
    assert prof._stats_marshal(ELSEWHERE, HIDES) is not None


def shared_key():
    for _ in range(2):  # two code objects, one pstats key: summed into one row elsewhere
        exec(compile("def again():\n    return 1\nagain()\n", "<same>", "exec"), {})


def other_thread():
    t = threading.Thread(target=fib, args=(5,))
    t.start()
    t.join()


def surrogate_name():
    exec(compile("def f():\n    return 1\nf()\n", "/tmp/\udcff.py", "exec"), {})


@pytest.mark.parametrize("work, options", [
    (shared_key, {}), (other_thread, {"threads": True}), (surrogate_name, {})],
    ids=["shared-key", "two-threads", "not-utf8"])
def test_what_c_does_not_write_takes_the_general_path(work, options):
    prof = recorded(work, **options)
    assert prof._stats_marshal(ELSEWHERE, HIDES) is None
    assert prof._stats_and_codes()[0]  # the general path's table is there


def test_nothing_recorded():
    prof = fastprof.Profile()
    assert prof._stats_marshal(ELSEWHERE, HIDES) is None
    with pytest.raises(TypeError):
        prof._stats_marshal(b"bytes", HIDES)


def test_memory_running_out_raises_and_keeps_the_tables():
    """Python's allocations failing one after the other (_testcapi's
    set_nomemory) while the bytes are written: a MemoryError or the whole
    table, never a crash, and the tables are still there afterwards."""
    _testcapi = pytest.importorskip("_testcapi")
    if not hasattr(_testcapi, "set_nomemory"):
        pytest.skip("no _testcapi.set_nomemory")
    prof = recorded()
    want = prof._stats_and_codes()
    table = prof._stats_marshal(ELSEWHERE, HIDES)[0]
    failed = 0
    for n in range(0, 40):
        _testcapi.set_nomemory(n, 0)
        try:
            got = prof._stats_marshal(ELSEWHERE, HIDES)
        except MemoryError:
            got = None
        finally:
            _testcapi.remove_mem_hooks()
        if got is None:
            failed += 1
        else:
            assert got[0] == table
    assert failed >= 10
    assert prof._stats_and_codes() == want


# -- _fold_into ---------------------------------------------------------------

def sum_of(tables):
    return merge_stats(tables)


def test_folds_add_up_to_the_merged_tables():
    total = fastprof.Profile(threads=True)
    tables, removed = [], 0.0
    for _ in range(3):
        prof = recorded(threads=True)
        tables.append(prof._stats_and_codes()[0])
        removed += prof._compensation()["removed"]
        prof._fold_into(total, [(tid, 7) for tid, _i, _n in prof.threads()])
    got = total._stats_and_codes()[0]
    want = sum_of(tables)
    assert set(got) == set(want)
    for key, row in want.items():
        assert got[key][:2] == row[:2], key
        assert got[key][2:4] == pytest.approx(row[2:4], rel=1e-9), key
        assert {c: e[:2] for c, e in got[key][4].items()} == {c: e[:2] for c, e in row[4].items()}
    assert [r[0] for r in total.threads()] == [7]
    assert total.threads()[0][1] == threading.get_ident()
    assert total._compensation()["removed"] == pytest.approx(removed, rel=1e-9)


def test_the_sum_keeps_its_functions_after_the_sources_are_gone():
    total = fastprof.Profile()
    ns = {}
    exec(compile("def short_lived():\n    return sorted([2, 1])\nshort_lived()\n",
                 "<gone>", "exec"), ns)
    prof = fastprof.Profile()
    prof.enable()
    ns["short_lived"]()
    prof.disable()
    want = prof._stats_and_codes()[0]
    prof._fold_into(total, [(r[0], 1) for r in prof.threads()])
    prof.clear()
    del prof, ns
    import gc
    gc.collect()
    got = total._stats_and_codes()[0]
    assert {k: v[:2] for k, v in got.items()} == {k: v[:2] for k, v in want.items()}


def test_fold_refuses_what_it_cannot_add():
    prof = recorded()
    pairs = [(r[0], 1) for r in prof.threads()]
    with pytest.raises(ValueError, match="another profiler"):
        prof._fold_into(prof, pairs)
    with pytest.raises(ValueError, match="different clocks"):
        prof._fold_into(fastprof.Profile(clock="cpu"), pairs)
    on = fastprof.Profile()
    on.enable()
    try:
        with pytest.raises(ValueError, match="another profiler"):
            prof._fold_into(on, pairs)
    finally:
        on.disable()
    with pytest.raises(TypeError):
        prof._fold_into(fastprof.Profile(), [(1,)])
    with pytest.raises(TypeError):
        prof._fold_into(object(), pairs)
    total = fastprof.Profile()
    prof._fold_into(total, [(10 ** 6, 1)])  # no such thread: nothing added
    assert total.threads() == []


def test_fold_when_memory_runs_out():
    """A failed fold raises MemoryError; what it added stays consistent
    (every function it holds has its reference: clearing and reading it
    later neither crashes nor leaks)."""
    prof = recorded()
    pairs = [(r[0], 1) for r in prof.threads()]
    failed = 0
    for n in range(0, 30, 2):
        total = fastprof.Profile()
        _fastprof._mem_fail_after(n)
        try:
            prof._fold_into(total, pairs)
        except MemoryError:
            failed += 1
        finally:
            _fastprof._mem_fail_after(-1)
        total._stats_and_codes()
        total.clear()
    assert failed >= 1


@pytest.mark.skipif(not hasattr(sys, "getrefcount"), reason="needs sys.getrefcount")
def test_no_reference_is_kept_or_lost():
    prof = recorded()
    code = fib.__code__
    before = sys.getrefcount(code)
    for _ in range(100):
        prof._stats_marshal(ELSEWHERE, HIDES)
    assert sys.getrefcount(code) == before
    total = fastprof.Profile()
    prof._fold_into(total, [(r[0], 1) for r in prof.threads()])
    assert sys.getrefcount(code) == before + 1  # the sum's entry holds it
    prof._fold_into(total, [(r[0], 1) for r in prof.threads()])
    assert sys.getrefcount(code) == before + 1
    total.clear()
    assert sys.getrefcount(code) == before
