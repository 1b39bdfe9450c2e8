"""Memory profiling of numpy's array data (issue 33): numpy's default data
handler (NEP 49, numpy 1.22+) hooked while memory is profiled
(csrc/fpy_numpy_handler.c).

- ``np.ones(10**7)`` charges its 80,000,000 bytes once, to the call that
  made the array (numpy's ``empty``, a C function's row), and the caller's
  bytes including callees hold them;
- the totals equal tracemalloc's, which counts numpy's data through
  ``PyTraceMalloc_Track`` at the handler: without the hook they would miss
  the arrays;
- small arrays too (numpy's cache of small freed blocks sits behind the
  handler, so its reuse is an allocation, as tracemalloc counts it);
- numpy imported after the profile started is hooked too (from its first
  function the profile sees), and the handler is numpy's own again once the
  profile stops (``memory_totals()["numpy"]``).

Both sides of numpy 2.5, which moved its data to Python's raw domain (its
allocations then pass through the raw-domain hook as well, which the
guard keeps from counting twice), run in CI: 3.9-3.11 get numpy 2.0-2.4,
3.12-3.14 numpy 2.5 or later (the newest each version has).
"""
import os
import sys
import textwrap
import tracemalloc

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE, reason="memory=True is fastprof's")

if sys.version_info >= (3, 15):
    pytest.skip("no numpy wheels for 3.15 yet", allow_module_level=True)
try:
    import numpy as np
except ImportError:
    helpers.tool_missing("numpy is not installed (requirements-test.txt)")


def make_ones():
    return np.ones(10**7)


def key(func):
    code = func.__code__
    return (code.co_filename, code.co_firstlineno, code.co_name)


def test_a_big_array_is_counted_once_where_it_was_made():
    import fastprof
    p = fastprof.Profile(memory=True)
    p.enable()
    made = make_ones()
    p.disable()
    stats = p.memory_stats()
    data = made.nbytes
    assert data == 80_000_000
    maker = stats[key(make_ones)]
    assert data <= maker.allocated_incl < data + 10_000
    rows = [r for k, r in stats.items() if r.allocated >= data]
    assert len(rows) == 1 and rows[0].allocated < data + 1_000  # one row, once
    assert rows[0].net >= data and rows[0].live_at_peak >= data


def arrays():
    big = [np.arange(100_000) for _ in range(5)]
    small = [np.zeros(7) for _ in range(500)]
    del big[:3]
    return big, small


def test_totals_equal_tracemalloc():
    import fastprof
    tracemalloc.start()
    try:
        p = fastprof.Profile(memory=True)
        p.enable()
        try:
            p._memory_vs_tracemalloc(True)
            kept = arrays()
            ours, theirs = p._memory_vs_tracemalloc(False)
        finally:
            p.disable()
    finally:
        tracemalloc.stop()
    assert ours == theirs
    assert ours[0] >= 2 * 800_000
    assert kept


def test_numpy_imported_after_the_start():
    code = textwrap.dedent("""
        import tracemalloc, fastprof
        tracemalloc.start()
        p = fastprof.Profile(memory=True)
        p.enable()
        import numpy
        numpy.zeros(3)  # (numpy's own first calls: its handler is found)
        p._memory_vs_tracemalloc(True)
        a = numpy.ones(10**6)
        ours, theirs = p._memory_vs_tracemalloc(False)
        hooked = p.memory_totals()["numpy"]
        p.disable()
        print(ours == theirs, ours[0] >= 8_000_000, hooked, p.memory_totals()["numpy"])
    """)
    res = helpers.run_python(["-c", code])
    assert res.returncode == 0, res.stderr
    # counted while profiled, numpy's own handler again once stopped
    assert res.stdout.split() == ["True", "True", "True", "False"]
