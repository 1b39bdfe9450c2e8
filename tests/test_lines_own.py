"""Own time per line (``Profile.line_own_stats()``, the ``lines_own``
trailer, the Own column): a line's time less the calls made while it was
open, as the profiler times them.  A fake timer, advanced only by the
program, makes every expected value exact."""
import sys
import threading

import pytest

from fastprof import Profile
from fastprof.data.names import label
from fastprof.recording.line_profiling import MONITORING
from helpers import USING_CPROFILE

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="fastprof-only feature")

T = [0]  # the fake clock, in ms (timeunit=0.001)


def fake_timer():
    return T[0]


def own_child(k):
    T[0] += k


def own_work(n):
    T[0] += 10
    own_child(300); T[0] += 20  # noqa: E702 - a call and own work on one line
    for _ in range(n):
        own_child(5); T[0] += 1  # noqa: E702
    return own_recursive(2)


def own_recursive(k):
    T[0] += 7
    if k:
        own_recursive(k - 1); T[0] += 2  # noqa: E702
    return k


def own_gen(n):
    for _ in range(n):
        T[0] += 1
        yield own_child(4)
        own_child(2); T[0] += 3  # noqa: E702


def own_stops(prof):
    T[0] += 10
    own_child(5); T[0] += 1  # noqa: E702
    T[0] += 3; prof.disable()  # noqa: E702 - open when profiling stops


def own_before(prof, k):
    T[0] += 1
    if k:
        prof.enable(); own_before(prof, 0)  # noqa: E702 - this frame began before profiling
    T[0] += 2
    return k


def first(func):
    return func.__code__.co_firstlineno


def profiled(func, *args, **options):
    T[0] = 0
    prof = Profile(timer=fake_timer, timeunit=0.001, lines=[__name__ + ":own_*"], **options)
    prof.runcall(func, *args)
    prof.create_stats()
    return prof


def ms(table):
    return {n: round(v * 1000, 6) for n, v in table.items()}


def test_own_is_time_less_the_calls_of_the_line():
    prof = profiled(own_work, 4)
    lines, own = prof.line_stats(), prof.line_own_stats()
    w, r = label(own_work.__code__), label(own_recursive.__code__)
    a = first(own_work)
    assert {n: round(t * 1000, 6) for n, (_h, t) in lines[w].items()} == {
        a + 1: 10, a + 2: 320, a + 3: 0, a + 4: 24, a + 5: 7 * 3 + 2 * 2}
    # no call: own = time; a call: own = time - the call's time
    assert ms(own[w]) == {a + 1: 10, a + 2: 20, a + 3: 0, a + 4: 4, a + 5: 0}
    # recursion: each activation's calls taken from its own lines only
    b = first(own_recursive)
    assert ms(own[r]) == {b + 1: 21, b + 2: 0, b + 3: 4, b + 4: 0}
    # a function's own times add up to its tottime (no time before its first line here)
    for key in (w, r):
        assert sum(own[key].values()) == pytest.approx(prof.stats[key][2], abs=1e-12)


def test_a_function_running_at_the_stop_keeps_its_own_times():
    # (an attach ends so, in the middle of the hot function): the line open
    # at the stop has no own time, the lines before it theirs, exact
    T[0] = 0
    prof = Profile(timer=fake_timer, timeunit=0.001, lines=[__name__ + ":own_*"])
    prof.enable()
    own_stops(prof)
    s = label(own_stops.__code__)
    a = first(own_stops)
    own = ms(prof.line_own_stats()[s])
    assert {n: own[n] for n in (a + 1, a + 2)} == {a + 1: 10, a + 2: 1}
    assert own.get(a + 3, 0) == 0
    # its time: the unfinished run, up to the stop (a timer's readings are
    # any thread's)
    assert round(prof.line_stats()[s][a + 3][1] * 1000, 6) == 3


def own_stops_busy(prof):
    sum(range(200000)); prof.disable()  # noqa: E702 - open when profiling stops


def test_the_cpu_clock_leaves_the_unfinished_run_out():
    # the thread CPU clock's readings are the stopping thread's only: a
    # line open at the stop has its finished runs' time, here none
    prof = Profile(clock="cpu", lines=[__name__ + ":own_*"])
    prof.enable()
    own_stops_busy(prof)
    s = label(own_stops_busy.__code__)
    assert prof.line_stats()[s] == {first(own_stops_busy) + 1: (1, 0.0)}


def test_a_frame_begun_before_profiling_has_exact_own_times():
    # (attaching to a service: its frames already running) the frame begun
    # before profiling is on no stack: its callees are the calls that
    # returned to the empty stack, so its lines' own times are exact too
    T[0] = 0
    prof = Profile(timer=fake_timer, timeunit=0.001, lines=[__name__ + ":own_*"])
    own_before(prof, 1)
    prof.disable()
    b = label(own_before.__code__)
    a = first(own_before)
    # a + 4: 2 ms in the inner call, and on 3.12+ 2 ms in the outer frame
    # once the inner call (3 ms, not the outer line's own) returned (before
    # 3.12 a frame begun before profiling is not traced: docs/lines.md)
    outer = 1 if sys.version_info >= (3, 12) else 0
    assert {n: (h, round(t * 1000, 6)) for n, (h, t) in prof.line_stats()[b].items()} == {
        a + 1: (1, 1), a + 2: (1, 0), a + 4: (1 + outer, 2 + 2 * outer), a + 5: (1 + outer, 0)}
    assert ms(prof.line_own_stats()[b]) == {a + 1: 1, a + 2: 0, a + 4: 2 + 2 * outer, a + 5: 0}


def test_generator_resumed_many_times():
    prof = profiled(lambda: list(own_gen(3)))
    g = label(own_gen.__code__)
    c = first(own_gen)
    assert ms(prof.line_own_stats()[g]) == {c + 1: 0, c + 2: 3, c + 3: 0, c + 4: 9}
    assert sum(prof.line_own_stats()[g].values()) == pytest.approx(prof.stats[g][2], abs=1e-12)


def test_generator_in_wall_mode():
    # wall mode parks a generator's frame with its callee time; on 3.12+ the
    # line callbacks run before the profiler puts it back: not exact there
    prof = profiled(lambda: list(own_gen(3)), coroutines="wall")
    g = label(own_gen.__code__)
    assert g in prof.line_stats()
    if MONITORING:
        assert g not in prof.line_own_stats()
    else:
        c = first(own_gen)
        assert ms(prof.line_own_stats()[g]) == {c + 1: 0, c + 2: 3, c + 3: 0, c + 4: 9}


def test_a_thread_the_profiler_does_not_record_has_no_own_time():
    T[0] = 0
    prof = Profile(timer=fake_timer, timeunit=0.001, lines=[__name__ + ":own_recursive"])
    with prof:
        own_recursive(1)
        worker = threading.Thread(target=own_recursive, args=(1,))
        worker.start()
        worker.join()
    r = label(own_recursive.__code__)
    if MONITORING:  # the lines of both threads, the profiler's stack of one
        assert prof.line_stats()[r][first(own_recursive) + 1][0] == 4
        assert r not in prof.line_own_stats()
    else:  # sys.settrace traces the enabling thread only, as the profiler
        assert prof.line_stats()[r][first(own_recursive) + 1][0] == 2
        assert ms(prof.line_own_stats()[r])[first(own_recursive) + 1] == 14


def test_file_merge_and_view(tmp_path):
    from fastprof.data.profile_file import load_profile
    from fastprof.tools.line_view import function_listing
    from fastprof.tools.merge import ProfileSum
    prof = profiled(own_work, 2)
    path = str(tmp_path / "a.prof")
    prof.dump_stats(path)
    data = load_profile(path)
    w = label(own_work.__code__)
    a = first(own_work)
    assert ms(data.lines_own[w]) == {a + 1: 10, a + 2: 20, a + 3: 0, a + 4: 2, a + 5: 0}
    total = ProfileSum()
    total.add(data)
    total.add(load_profile(path))
    merged = total.result()
    assert ms(merged.lines_own[w])[a + 2] == 40
    # an input with the function's lines but no own times: no own in the sum
    partial = load_profile(path)
    partial.lines_own = {}
    total.add(partial)
    assert w not in total.result().lines_own and w in total.result().lines
    text = function_listing(w, data.lines[w], data.stats[w][3], own=data.lines_own[w])
    assert text[2].split()[:4] == ["Line", "Hits", "Time", "Own"]
    row = [ln for ln in text if ln.rstrip().endswith("own_child(300); T[0] += 20  # noqa: E702 - a "
                                                     "call and own work on one line")][0]
    assert row.split()[:5] == [str(a + 2), "1", "320", "ms", "20.0"]
    assert "Own" not in function_listing(w, data.lines[w])[2]


def test_cli_view_shows_own_column(tmp_path):
    from helpers import run_python
    script = tmp_path / "own_prog.py"
    script.write_text("def leaf():\n    return sum(range(20000))\n\n\ndef main():\n"
                      "    x = leaf()\n    return x + 1\n\n\nmain()\n")
    out = tmp_path / "o.prof"
    r = run_python(["-m", "fastprof", "--lines", "own_prog:main", "-o", str(out), str(script)])
    assert r.returncode == 0, r.stderr
    view = run_python(["-m", "fastprof.cli", "view", str(out), "--lines"])
    assert view.returncode == 0, view.stderr
    header = [ln for ln in view.stdout.splitlines() if ln.startswith("Line")]
    assert header and header[0].split()[:4] == ["Line", "Hits", "Time", "Own"], view.stdout
    from fastprof.data.profile_file import load_profile
    data = load_profile(str(out))
    (key, own), = data.lines_own.items()
    # the call's line: own well under its time (leaf's time excluded)
    assert own[6] < data.lines[key][6][1] and own[6] >= 0


def test_threads_recorded_each_get_their_own_times():
    T[0] = 0
    prof = Profile(timer=fake_timer, timeunit=0.001, threads=True,
                   lines=[__name__ + ":own_recursive"])
    with prof:
        for _ in range(2):  # one after the other: the fake clock stays exact
            worker = threading.Thread(target=own_recursive, args=(1,))
            worker.start()
            worker.join()
    prof.create_stats()
    r = label(own_recursive.__code__)
    b = first(own_recursive)
    assert ms(prof.line_own_stats()[r]) == {b + 1: 28, b + 2: 0, b + 3: 4, b + 4: 0}
    assert sum(prof.line_own_stats()[r].values()) == pytest.approx(prof.stats[r][2], abs=1e-12)


def test_a_profile_with_lines_is_collected():
    # the recorder holds its profiler (bind): the cycle must be collectable
    import gc
    import weakref
    prof = profiled(own_work, 1)
    ref = weakref.ref(prof)
    del prof
    gc.collect()
    assert ref() is None
