"""Bytes per line (``Profile(memory=True, lines=...)``, ``python -m
fastprof --memory --lines``): each line's bytes allocated while it ran
(its calls' included), the change of live bytes meanwhile (net) and its
own bytes (its calls' left out).

Oracles:

- tracemalloc on the same interpreter, for a function that keeps all it
  allocates: a line's net is the size of the blocks alive at the end whose
  traceback passes through that line, its own bytes those whose innermost
  frame is that line;
- the function's own row: its lines' own bytes add up to what the row
  allocated itself, their bytes to what it allocated with its callees;
- a line that frees a block shows the block's size as a negative net.

Then the .prof file keeps them, and ``fastprof view --lines`` and ``python
-m fastprof --memory --lines`` show them (Alloc, Net, Own alloc columns),
absent without memory."""
import os
import subprocess
import sys
import tracemalloc

import pytest

from fastprof import Profile
from fastprof.data.profile_file import load_profile, write_profile
from helpers import USING_CPROFILE

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="fastprof-only feature")

HERE = os.path.dirname(os.path.abspath(__file__))


def key(func):
    code = func.__code__
    return (code.co_filename, code.co_firstlineno, code.co_name)


def line_of(func, offset):
    return func.__code__.co_firstlineno + offset


def pair():
    return bytearray(3000), bytearray(5000)


def keeps_all():
    a = bytearray(300_000)   # line +1
    b = "y" * 70_000         # line +2
    c = pair()               # line +3: a Python callee's blocks
    d = [b] * 1000           # line +4
    return a, b, c, d        # line +5: the tuple


def frees_one():
    big = bytearray(2_000_000)
    small = bytearray(10)
    del big
    return small


def profiled(func, **options):
    prof = Profile(memory=True, lines=[__name__ + ":" + func.__name__], **options)
    prof.enable()
    try:
        result = func()
    finally:
        prof.disable()
    return prof, result


def traced_sizes(func):
    """tracemalloc's view of one run of func, nothing freed: {line: (bytes
    of blocks whose traceback passes through it, bytes of those whose
    innermost frame is it)}."""
    tracemalloc.start(50)
    try:
        result = func()  # noqa: F841 (kept alive for the snapshot)
        snap = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    filename = func.__code__.co_filename
    first, last = func.__code__.co_firstlineno, func.__code__.co_firstlineno + 6
    out = {}
    for trace in snap.traces:
        frames = [(f.filename, f.lineno) for f in trace.traceback]
        mine = {ln for fn, ln in frames if fn == filename and first < ln < last}
        for ln in mine:
            incl, own = out.get(ln, (0, 0))
            innermost = frames[-1] == (filename, ln)  # (oldest frame first)
            out[ln] = (incl + trace.size, own + (trace.size if innermost else 0))
    return out


def test_each_line_against_tracemalloc():
    # (first runs: the interpreter's own caches, and its instrumentation of
    # the code for the profile's events, which the allocating line pays)
    profiled(keeps_all)
    expected = traced_sizes(keeps_all)
    prof, _kept = profiled(keeps_all)
    got = prof.line_memory_stats()[key(keeps_all)]
    assert set(expected) <= set(got)
    for ln, (incl, own) in expected.items():
        allocated, net, own_allocated = got[ln]
        assert net == incl, ln
        # tracemalloc sees the blocks alive at the end; the line allocated
        # those and a few temporaries (3.9-3.11: the callee's frame object,
        # which the profile hook has the interpreter make)
        assert 0 <= own_allocated - own < 1000, ln
        assert 0 <= allocated - net < 1000, ln
    assert got[line_of(keeps_all, 3)][0] >= 8000  # the callee's blocks, on the calling line
    assert got[line_of(keeps_all, 3)][2] < 1000   # ... not its own


def test_lines_add_up_to_the_row():
    prof, _kept = profiled(keeps_all)
    row = prof.memory_stats()[key(keeps_all)]
    lines = prof.line_memory_stats()[key(keeps_all)].values()
    assert sum(own for _a, _n, own in lines) == row.allocated
    assert sum(a for a, _n, _own in lines) == row.allocated_incl


def test_a_freeing_line_has_a_negative_net():
    prof, _small = profiled(frees_one)
    got = prof.line_memory_stats()[key(frees_one)]
    assert got[line_of(frees_one, 1)][1] >= 2_000_000
    assert got[line_of(frees_one, 3)] == (0, -got[line_of(frees_one, 1)][1], 0)


def test_threads_each_count_their_own_runs():
    import threading

    def twice():
        threads = [threading.Thread(target=keeps_all) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    prof = Profile(memory=True, lines=[__name__ + ":keeps_all"], threads=True)
    prof.enable()
    twice()
    prof.disable()
    got = prof.line_memory_stats()[key(keeps_all)]
    one, _kept = profiled(keeps_all)
    alone = one.line_memory_stats()[key(keeps_all)]
    first = line_of(keeps_all, 1)
    assert got[first][0] == 2 * alone[first][0]


def test_none_without_memory():
    prof = Profile(lines=[__name__ + ":keeps_all"])
    prof.runcall(keeps_all)
    assert prof.line_stats() and prof.line_memory_stats() == {}


def test_the_file_keeps_them_and_the_view_shows_them(tmp_path):
    prof, _kept = profiled(keeps_all)
    path = str(tmp_path / "m.prof")
    prof.dump_stats(path)
    data = load_profile(path)
    assert data.lines_memory == prof.line_memory_stats()
    write_profile(str(tmp_path / "again.prof"), data)
    assert load_profile(str(tmp_path / "again.prof")).lines_memory == data.lines_memory
    out = subprocess.run([sys.executable, "-m", "fastprof.cli", "view", path, "--lines"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    header = [ln for ln in out.stdout.splitlines() if ln.startswith("Line ")]
    assert header and "Alloc" in header[0] and "Net" in header[0] and "Own alloc" in header[0]
    first = [ln for ln in out.stdout.splitlines() if "bytearray(300_000)" in ln][0]
    assert "293 KiB" in first  # 300,000 bytes and the object's header


def test_the_command_line(tmp_path):
    script = tmp_path / "lines_bytes.py"
    script.write_text("def work():\n    data = bytearray(5_000_000)\n    return len(data)\n\nwork()\n")
    cmd = [sys.executable, "-m", "fastprof", "--memory", "--lines", "lines_bytes:work", str(script)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    row = [ln for ln in out.stdout.splitlines() if "bytearray(5_000_000)" in ln][0]
    assert "4.8 MiB" in row
    plain = subprocess.run(cmd[:3] + cmd[4:], capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    header = [ln for ln in plain.stdout.splitlines() if ln.startswith("Line ")]
    assert header and "Alloc" not in header[0]


def test_merge_sums_them(tmp_path):
    from fastprof.tools.merge import merge_profiles
    files = []
    for i, memory in enumerate((True, True, False)):
        prof = Profile(memory=memory, lines=[__name__ + ":keeps_all"])
        prof.runcall(keeps_all)
        files.append(str(tmp_path / ("%d.prof" % i)))
        prof.dump_stats(files[-1])
    a, b, plain = (load_profile(f) for f in files)
    both = merge_profiles([a, b]).lines_memory[key(keeps_all)]
    for ln, (allocated, net, own) in both.items():
        assert allocated == a.lines_memory[key(keeps_all)][ln][0] + b.lines_memory[key(keeps_all)][ln][0]
        assert net == a.lines_memory[key(keeps_all)][ln][1] + b.lines_memory[key(keeps_all)][ln][1]
        assert own == a.lines_memory[key(keeps_all)][ln][2] + b.lines_memory[key(keeps_all)][ln][2]
    # an input whose lines have no bytes: the sum has none (not a part)
    assert merge_profiles([a, plain]).lines_memory == {}
