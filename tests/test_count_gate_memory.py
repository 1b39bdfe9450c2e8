"""pytest --fastprof-counts=DIR --fastprof-memory: the gate on bytes too.

Each counted function's bytes (what it allocated; an opaque one's, such as
re.compile's, with what ran inside it) are checked against the same profile's memory rows,
which tests/test_memory_profile.py checks against tracemalloc; a test that
allocates more fails the run, one that allocates less or the same passes.
"""

import gc
import json
import re

import pytest
from test_count_gate import VERSION, gate, make, run_pytest, tables

from fastprof.tools import counts
from helpers import USING_CPROFILE

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="fastprof's pytest mode")

ALLOCATES = """\
    import os

    N = int(os.environ.get("N", "100000"))

    def helper():
        return bytearray(N)

    def test_alloc():
        assert len(helper()) == N

    def test_quiet():
        assert 2 + 2 == 4
"""


def _buffer(n):
    return bytearray(n)


def _work():
    _buffer(300000)
    re.compile("gate-bytes-[a-z]+")   # (re's cache purged before: compiled here)


def test_bytes_of_a_test_are_its_rows_bytes():
    from fastprof import Profile
    prof = Profile(memory=True, callpaths=True, gc=True)
    enabled = gc.isenabled()
    gc.disable()   # (a collection inside re.compile would be left out of the gate's bytes)
    re.purge()
    try:
        prof.runcall(_work)
    finally:
        if enabled:
            gc.enable()
    data = prof.profile_data()
    table = counts.counts_of_test(data, memory=True)
    rows = prof.memory_stats()
    [buffer_key] = [k for k in rows if k[2] == "_buffer"]
    assert table["test_count_gate_memory.py:_buffer bytes"] == rows[buffer_key].allocated >= 300000
    # re.compile is counted, what it runs inside is not: its bytes are its
    # own and those of everything below it
    [compile_key] = [k for k in rows if k[2] == "compile" and k[0] == re.__file__]
    entry = "%s:compile bytes" % ("re/__init__.py" if re.__file__.endswith("__init__.py") else "re.py")
    assert table[entry] == rows[compile_key].allocated_incl > 0
    assert not any(e.startswith(("re/_compiler", "re/_parser", "sre_")) for e in table)
    # the sum is the entries'
    entries = [c for e, c in table.items() if counts.is_bytes(e) and e != counts.TEST_BYTES]
    assert table[counts.TEST_BYTES] == sum(entries)
    # the counts are those without memory
    plain = Profile(callpaths=True, gc=True)
    gc.disable()
    re.purge()
    try:
        plain.runcall(_work)
    finally:
        if enabled:
            gc.enable()
    assert counts.counts_only(table) == counts.counts_of_test(plain.profile_data())


def test_records_bytes_and_fails_on_growth_only(tmp_path):
    make(tmp_path, ALLOCATES)
    r = gate(tmp_path, "--fastprof-memory")
    assert r.returncode == 0, r.stdout + r.stderr
    t = tables(tmp_path)
    alloc = t["test_alloc"]
    assert alloc[counts.MEMORY] == 1
    assert 100000 < alloc["test_work.py:helper bytes"] < 100200   # the buffer and its header
    assert alloc[counts.TEST_BYTES] >= alloc["test_work.py:helper bytes"]
    assert t["test_quiet"][counts.MEMORY] == 1
    # the same, and less: pass
    r = gate(tmp_path, "--fastprof-memory")
    assert r.returncode == 0 and "no call count changed" in r.stdout, r.stdout + r.stderr
    r = gate(tmp_path, "--fastprof-memory", env={"N": "50000"})
    assert r.returncode == 0 and "no call count changed" in r.stdout, r.stdout + r.stderr
    # within 10% and 1 KiB: pass; beyond: fail, naming the function and the test's sum
    r = gate(tmp_path, "--fastprof-memory", env={"N": "109000"})
    assert r.returncode == 0, r.stdout + r.stderr
    r = gate(tmp_path, "--fastprof-memory", env={"N": "150000"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 test changed their call counts or allocate more bytes (of 2 compared)" in r.stdout
    assert "test_work.py::test_alloc: bytes grew (2 rows)" in r.stdout
    assert "KiB -> 147 KiB (+48.8 KiB) test_work.py:helper bytes" in r.stdout, r.stdout
    assert "KiB (+48.8 KiB) <test> bytes" in r.stdout
    # a wider tolerance, or a larger floor, lets it pass
    r = gate(tmp_path, "--fastprof-memory", "--fastprof-counts-memory-tolerance=60",
             env={"N": "150000"})
    assert r.returncode == 0, r.stdout + r.stderr
    r = gate(tmp_path, "--fastprof-memory", "--fastprof-counts-memory-min=60000",
             env={"N": "150000"})
    assert r.returncode == 0, r.stdout + r.stderr
    # without --fastprof-memory the bytes are not compared
    r = gate(tmp_path, env={"N": "150000"})
    assert r.returncode == 0 and "no call count changed" in r.stdout, r.stdout + r.stderr


def test_a_baseline_without_bytes_is_compared_on_counts_and_says_so(tmp_path):
    make(tmp_path, ALLOCATES)
    assert gate(tmp_path).returncode == 0
    assert counts.MEMORY not in tables(tmp_path)["test_alloc"]
    r = gate(tmp_path, "--fastprof-memory", env={"N": "150000"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("2 tests compared without bytes: their baselines recorded without "
            "--fastprof-memory (--fastprof-counts-update records them)") in r.stdout
    r = gate(tmp_path, "--fastprof-memory", "--fastprof-counts-update")
    assert r.returncode == 0 and tables(tmp_path)["test_alloc"][counts.MEMORY] == 1


def test_markdown_and_json_reports_carry_the_bytes(tmp_path):
    make(tmp_path, ALLOCATES)
    assert gate(tmp_path, "--fastprof-memory").returncode == 0
    md, js = tmp_path / "report.md", tmp_path / "report.json"
    for report in (md, js):
        r = gate(tmp_path, "--fastprof-memory", "--fastprof-counts-report=%s" % report,
                 env={"N": "150000"})
        assert r.returncode == 1, r.stdout + r.stderr
    text = md.read_text()
    assert "**1 test changed their call counts or allocate more bytes** (2 compared)" in text
    assert "| +50000 | `test_work.py:helper bytes` |" in text
    [change] = [c for c in json.loads(js.read_text())["changed"]["test_work.py::test_alloc"]
                if c["entry"] == "test_work.py:helper bytes"]
    assert change["new"] - change["old"] == 50000


def test_usage_errors(tmp_path):
    make(tmp_path, ALLOCATES)
    r = gate(tmp_path, "--fastprof-counts-memory-min=10")
    assert r.returncode == 4 and "need --fastprof-memory" in r.stderr, r.stderr
    r = gate(tmp_path, "--fastprof-memory", "--fastprof-counts-memory-tolerance=x")
    assert r.returncode == 4 and "--fastprof-counts-memory-tolerance: 'x' is not a percentage" in r.stderr
    r = run_pytest(tmp_path, "--fastprof-counts-memory-tolerance=5")
    assert r.returncode == 4 and "needs --fastprof-counts DIR" in r.stderr, r.stderr
    assert not (tmp_path / "counts" / VERSION).exists()


def test_compare_bytes():
    base = {"f bytes": 100000, "g bytes": (2000, 3000), counts.TEST_BYTES: 103000, "f": 1}
    assert counts.compare_bytes(base, {"f bytes": 110000, "g bytes": 3000}) == []   # 10%
    [c] = counts.compare_bytes(base, {"f bytes": 110001})
    assert (c.entry, c.old, c.new) == ("f bytes", 100000, 110001)
    assert counts.compare_bytes(base, {"g bytes": 4024}) == []     # the top, plus 1 KiB
    [c] = counts.compare_bytes(base, {"g bytes": 4025})
    assert c.learned == (2000, 3000) and c.old == 3000
    assert counts.compare_bytes(base, {"h bytes": 1024}) == []     # new, under 1 KiB
    assert counts.compare_bytes(base, {"h bytes": 1025})
    assert counts.compare_bytes(base, {"f bytes": 0}) == []        # less: never
    assert counts.compare_bytes(base, {"f bytes": 200000}, tolerance=100) == []
    assert counts.compare_bytes(base, {"f bytes": 200000}, min_bytes=100000) == []
    # a test whose counts vary (reads that return what has arrived): twice the top
    noisy = dict(base, **{"f -> recv": (3, 5)})
    assert counts.compare_bytes(noisy, {"f bytes": 200000}) == []
    assert counts.compare_bytes(noisy, {"f bytes": 200001})
    # bytes learned as ranges make no count noisy, nor are they counts
    assert counts.compare({"f": 1, "f bytes": (10, 2000)}, {"f": 2, "f bytes": 5000})
    assert counts.noisy_entries({"f": 1, "f bytes": (10, 2000)}) == []
    # biggest growth first, the text in human units
    changes = counts.compare_bytes(base, {"f bytes": 200000, counts.TEST_BYTES: 400000})
    assert [c.entry for c in changes] == [counts.TEST_BYTES, "f bytes"]
    assert counts.describe(changes[1]) == "97.7 KiB -> 195 KiB (+97.7 KiB)"
