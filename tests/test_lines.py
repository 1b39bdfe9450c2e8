"""Line-level profiling (``Profile(lines=...)``, ``--lines``): hits equal
sys.settrace's line events, line times add up, the .prof trailer, merge,
the view and the command line."""
import re
import sys
import textwrap
import time

import lines_corpus
import pytest

from fastprof import Profile
from fastprof.data.names import label
from fastprof.recording.func_patterns import FunctionPatterns, parse_pattern
from helpers import USING_CPROFILE, line_hits, settrace_hits

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="fastprof-only feature")


def profiled_hits(func, patterns):
    prof = Profile(lines=patterns)
    prof.runcall(func)
    return prof, line_hits(prof.line_stats())


def test_hits_equal_settrace_line_events():
    expected = settrace_hits(lines_corpus.run_all, "lines_corpus")
    prof, got = profiled_hits(lines_corpus.run_all, ["lines_corpus"])
    assert len(expected) >= 10
    assert got == expected
    assert prof.unmatched_line_patterns() == []


def test_function_pattern_selects_function_and_its_nested_code():
    expected = settrace_hits(lines_corpus.run_all, "lines_corpus")
    _prof, got = profiled_hits(lines_corpus.run_all, ["lines_corpus:nested", "lines_corpus:comp*"])
    names = {k[2] for k in got}
    want = {k for k in expected if k[2] in ("nested", "inner", "comprehensions", "<lambda>")
            or (k[2] in ("<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"))}
    assert {"nested", "inner", "comprehensions"} <= names
    assert got == {k: expected[k] for k in want}


def test_unmatched_pattern_is_reported():
    prof = Profile(lines=["lines_corpus:no_such_function", "lines_corpus:early_return"])
    prof.runcall(lines_corpus.early_return, [1, -2])
    assert prof.unmatched_line_patterns() == ["lines_corpus:no_such_function"]


def test_other_functions_get_no_line_stats():
    _prof, got = profiled_hits(lines_corpus.run_all, ["lines_corpus:caught"])
    assert [k[2] for k in got] == ["caught"]


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def timed():
    busy(0.03)
    for _ in range(2):
        busy(0.02)
    return 1


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def spun():
    spin(300000)
    for _ in range(2):
        spin(200000)
    return 1


def line_times(func, compensate):
    """(cumtime, line stats, first line) of *func* run under lines=."""
    prof = Profile(lines=["test_lines:" + func.__name__], compensate=compensate)
    prof.runcall(func)
    prof.create_stats()
    key = label(func.__code__)
    return prof.stats[key][3], prof.line_stats()[key], func.__code__.co_firstlineno


@pytest.mark.parametrize("func, compensate", [(timed, False), (spun, True)])
def test_line_times_add_up_to_cumtime(func, compensate):
    # raw: the busy-waits spin on the clock until their time is up, so the
    # times match that time. Compensated: lines lose the profiler's cost as
    # the profile does; the loops make no call, so little is taken out (the
    # busy-waits call the clock so often that under ASan the profiler is
    # nearly all of their time, and the rest, ~15 us of 70 ms, is noise)
    cumtime, lines, first = line_times(func, compensate)
    assert cumtime > 0.005
    assert sum(t for _h, t in lines.values()) == pytest.approx(cumtime, rel=0.05)
    assert lines[first + 3][0] == 2  # the second call ran twice
    assert lines[first + 1][1] + lines[first + 3][1] >= 0.95 * cumtime
    if not compensate:  # busy-waits last at least their time
        assert lines[first + 1][1] >= 0.03
        assert lines[first + 3][1] >= 0.04


@pytest.mark.parametrize("text, kind, where, qual", [
    ("myapp.*", "module", "myapp.*", None),
    ("myapp.db:Query.*", "module", "myapp.db", "Query.*"),
    ("src/app/*.py", "path", "src/app/*.py", None),
    ("app.py:main", "path", "app.py", "main"),
])
def test_parse_pattern(text, kind, where, qual):
    assert parse_pattern(text) == (kind, where, qual)


@pytest.mark.parametrize("bad", ["", ":x", "mod:", "my mod"])
def test_bad_pattern_is_refused(bad):
    with pytest.raises(ValueError, match="bad function pattern"):
        Profile(lines=[bad])


def test_lines_must_be_a_list():
    with pytest.raises(TypeError, match="list of patterns"):
        Profile(lines="lines_corpus")


def test_main_alias_matches_script_stem():
    pats = FunctionPatterns(["lines_prog:hot"], main_alias="lines_prog")
    code = compile("def hot(): pass", "/x/lines_prog.py", "exec").co_consts[0]
    assert pats.matches(code, "__main__")
    assert not FunctionPatterns(["other:hot"], main_alias="lines_prog").matches(code, "__main__")


# -- files, merge and the command lines ---------------------------------------

PROG = '''\
def helper(k):
    return sum(range(k))


def hot(n):
    total = 0
    for i in range(n):
        if i % 2:
            total += helper(i)
        else:
            total -= 1
    return total


def cold():
    return 1


hot(50)
cold()
'''


@pytest.fixture
def prog(tmp_path):
    path = tmp_path / "lines_prog.py"
    path.write_text(PROG)
    return path


def fastprof_cli(*args, cwd=None):
    from helpers import run_python
    return run_python(["-m", "fastprof"] + [str(a) for a in args], cwd=cwd)


def cli_tool(*args):
    from helpers import run_python
    return run_python(["-m", "fastprof.cli"] + [str(a) for a in args])


def hot_table(path):
    """settrace's line hits of hot() when the program runs."""
    ns = {"__name__": "lines_prog"}
    code = compile(path.read_text(), str(path), "exec")
    return settrace_hits(lambda: exec(code, ns), "lines_prog")


def test_cli_lines_matches_script_stem_and_writes_trailer(prog, tmp_path):
    import pstats

    from fastprof.data.profile_file import load_profile
    out = tmp_path / "out.prof"
    r = fastprof_cli("--lines", "lines_prog:hot", "-o", out, prog)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    data = load_profile(str(out))
    key = (str(prog), 5, "hot")
    assert list(data.lines) == [key]
    expected = hot_table(prog)[key]
    assert {n: h for n, (h, _t) in data.lines[key].items() if h} == expected
    assert expected[7] == 51 and expected[9] == 25
    pstats.Stats(str(out))  # pstats still reads the file

    view = cli_tool("view", out, "--lines")
    assert view.returncode == 0, view.stderr
    text = view.stdout
    assert re.search(r"^hot \(.*lines_prog.py:5\)$", text, re.M)
    row = [ln for ln in text.splitlines() if ln.rstrip().endswith("total += helper(i)")][0]
    assert row.split()[:2] == ["9", "25"]
    assert ">>" in text

    nothing = cli_tool("view", out, "--lines", "nomatch")
    assert nothing.returncode == 1
    assert "no function with line stats matches /nomatch/" in nothing.stderr


def test_view_lines_before_the_file(prog, tmp_path):
    # --lines takes an optional NAME: `view --lines FILE` must not take the file for it
    out = tmp_path / "out.prof"
    assert fastprof_cli("--lines", "lines_prog:hot", "-o", out, prog).returncode == 0
    after = cli_tool("view", out, "--lines")
    before = cli_tool("view", "--lines", out)
    assert before.returncode == 0, before.stderr
    assert before.stdout == after.stdout and "total += helper(i)" in before.stdout
    missing = cli_tool("view", "--lines")
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines()[-1] == \
        "fastprof view: error: the following arguments are required: FILE"


def test_profile_in_a_script_names_it_by_its_stem(tmp_path):
    # `python app.py` with Profile(lines=["app:hot"]) (the middleware's way):
    # the script is __main__, and answers to its file's name too
    from helpers import run_python
    script = tmp_path / "app.py"
    script.write_text(PROG + textwrap.dedent("""
        import fastprof
        prof = fastprof.Profile(lines=["app:hot"], only=["app"])
        prof.enable()
        hot(20)
        prof.disable()
        print(sorted(k[2] for k in prof.line_stats()), prof.unmatched_line_patterns())
        print(sorted({e.code.co_name for e in prof.getstats() if not isinstance(e.code, str)}))
    """))
    r = run_python([str(script)], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    lines, only = r.stdout.splitlines()[-2:]
    assert lines == "['hot'] []"
    assert only == "['helper', 'hot']"


def test_cli_prints_lines_and_reports_unmatched_pattern(prog):
    r = fastprof_cli("--lines", "lines_prog:hot", "--lines", "lines_prog:hto", prog)
    assert r.returncode == 0, r.stderr
    assert "Line by line" in r.stdout
    assert "total -= 1" in r.stdout
    assert r.stderr.strip().splitlines() == [
        "python -m fastprof: --lines lines_prog:hto: no function that ran matches it"]


def test_cli_bad_pattern_is_a_usage_error(prog):
    r = fastprof_cli("--lines", "lines_prog:", prog)
    assert r.returncode == 2
    assert "bad function pattern" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_lines_from_old_profile(prog, tmp_path):
    from fastprof.data.profile_file import load_profile
    old = tmp_path / "old.prof"
    assert fastprof_cli("-o", old, prog).returncode == 0
    new = tmp_path / "new.prof"
    r = fastprof_cli("--lines-from", "%s:1" % old, "-o", new, prog)
    assert r.returncode == 0, r.stderr
    stats = load_profile(str(old)).stats
    top = max((k for k in stats if k[0] != "~" and k[2] != "<module>"), key=lambda k: stats[k][2])
    assert list(load_profile(str(new)).lines) == [top]
    r = fastprof_cli("--lines-from", tmp_path / "missing.prof", prog)
    assert r.returncode == 2 and "--lines-from" in r.stderr


def test_merge_sums_lines(prog, tmp_path):
    from fastprof.data.profile_file import load_profile
    a, b, m = tmp_path / "a.prof", tmp_path / "b.prof", tmp_path / "m.prof"
    for out in (a, b):
        assert fastprof_cli("--lines", "lines_prog:hot", "-o", out, prog).returncode == 0
    r = cli_tool("merge", a, b, "-o", m)
    assert r.returncode == 0, r.stderr
    la, lb, lm = (load_profile(str(p)).lines for p in (a, b, m))
    key = (str(prog), 5, "hot")
    assert {n: h for n, (h, _t) in lm[key].items()} == {
        n: h + lb[key][n][0] for n, (h, _t) in la[key].items()}
    assert lm[key][7][1] == pytest.approx(la[key][7][1] + lb[key][7][1])


def test_threads_each_count_their_lines():
    import threading
    expected = settrace_hits(lambda: lines_corpus.loop_branches(30), "lines_corpus")
    key = label(lines_corpus.loop_branches.__code__)
    prof = Profile(threads=True, lines=["lines_corpus:loop_branches"])
    with prof:
        workers = [threading.Thread(target=lines_corpus.loop_branches, args=(30,)) for _ in range(3)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    got = {n: h for n, (h, _t) in prof.line_stats()[key].items() if h}
    assert got == {n: 3 * h for n, h in expected[key].items()}


def test_lines_with_only():
    import only_app
    prof = Profile(only=["only_app"], lines=["only_app:work"])
    prof.runcall(only_app.main)
    prof.create_stats()
    assert {k[2] for k in prof.line_stats()} == {"work"} | (
        {"<listcomp>"} if sys.version_info < (3, 12) else set())
    assert all(k[0].endswith("only_app.py") for k in prof.stats if k[0] != "~")


def test_function_defined_after_start_is_matched_when_it_first_runs():
    import types
    source = "def late(n):\n    t = 0\n    for i in range(n):\n        t += i\n    return t\n"
    prof = Profile(lines=["late_mod:late"])
    with prof:
        mod = types.ModuleType("late_mod")
        exec(compile(source, "late_mod.py", "exec"), mod.__dict__)
        mod.late(4)
    table = prof.line_stats()[("late_mod.py", 1, "late")]
    assert {n: h for n, (h, _t) in table.items() if h} == {2: 1, 3: 5, 4: 4, 5: 1}


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")
def test_no_free_tool_id_is_a_clear_error():
    from fastprof.recording.line_profiling import TOOL_IDS, LineRecorderError
    mon = sys.monitoring
    taken = [t for t in TOOL_IDS if mon.get_tool(t) is None]
    for t in taken:
        mon.use_tool_id(t, "test")
    try:
        prof = Profile(lines=["lines_corpus"])
        with pytest.raises(LineRecorderError, match="needs a free sys.monitoring tool id"):
            prof.enable()
        assert not prof.enabled
    finally:
        for t in taken:
            mon.free_tool_id(t)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the trace function is 3.9-3.11's")
def test_trace_function_already_set_is_a_clear_error():
    from fastprof.recording.line_profiling import LineRecorderError

    def debugger(frame, event, arg):
        return None

    sys.settrace(debugger)
    try:
        prof = Profile(lines=["lines_corpus"])
        with pytest.raises(LineRecorderError, match="a trace function .* is already set"):
            prof.enable()
        assert not prof.enabled
        assert sys.gettrace() is debugger
    finally:
        sys.settrace(None)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the trace function is 3.9-3.11's")
def test_program_restoring_the_trace_function_keeps_lines_counted():
    # the C trace function is what sys.gettrace() returns; set back as a
    # Python trace function, it puts itself back, and the profile hook,
    # a separate slot, records all along
    expected = settrace_hits(lambda: lines_corpus.loop_branches(12), "lines_corpus")
    key = label(lines_corpus.loop_branches.__code__)
    prof = Profile(lines=["lines_corpus:loop_branches"])
    with prof:
        saved = sys.gettrace()
        sys.settrace(None)
        lines_corpus.loop_branches(12)  # not traced: no lines
        sys.settrace(saved)
        lines_corpus.loop_branches(12)
    assert sys.gettrace() is None
    assert line_hits(prof.line_stats())[key] == expected[key]
    prof.create_stats()
    calls = {k[2]: v[1] for k, v in prof.stats.items()}
    assert calls["loop_branches"] == 2


def _pausing():
    yield 1
    a = 2
    yield a


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the trace function is 3.9-3.11's")
def test_frames_get_their_line_events_back_after_the_profile():
    # the C trace function switches line events off in frames it does not
    # count; a tracer set later (a debugger) must still see their lines:
    # this running frame, and a generator suspended meanwhile
    here = sys._getframe()
    gen = _pausing()
    prof = Profile(lines=["lines_corpus:loop_branches"])
    prof.enable()
    next(gen)
    prof.disable()
    seen = []

    def tracer(frame, event, arg):
        if event == "line" and frame.f_code in (here.f_code, _pausing.__code__):
            seen.append((frame.f_code.co_name, frame.f_lineno - frame.f_code.co_firstlineno))
        return tracer

    here.f_trace = tracer
    sys.settrace(tracer)
    try:
        next(gen)
        mark = len(seen)
    finally:
        sys.settrace(None)
    assert ("_pausing", 2) in seen and ("_pausing", 3) in seen
    assert seen[-1][0] == here.f_code.co_name  # the line of `mark = ...`
    assert mark


def test_listing_title_names_a_method_once():
    # the qualified name replaces the plain one: "Box.grow (file:line)"
    from fastprof.tools.line_view import function_listing
    key = ("/src/box.py", 10, "grow")
    table = {11: (2, 0.5)}
    assert function_listing(key, table, qualname="Box.grow")[0] == "Box.grow (/src/box.py:10)"
    assert function_listing(key, table)[0] == "grow (/src/box.py:10)"


QUALNAME_MODULE = '''
import functools

def deco(f):
    @functools.wraps(f)
    def wrapper(*a):
        return f(*a)
    return wrapper

class Box:
    def grow(self, n):
        return [i for i in range(n)]

    @staticmethod
    def make():
        return Box()

    @property
    def size(self):
        return 3

    @deco
    def wrapped(self):
        return 1

    class Inner:
        def run(self):
            return 2

def grow(n):
    return n

def main():
    b = Box.make()
    b.grow(3)
    b.size
    b.wrapped()
    Box.Inner().run()
    grow(1)
'''


@pytest.mark.parametrize("pattern, names", [
    ("qn_mod:Box.grow", {"grow", "<listcomp>"} if sys.version_info < (3, 12) else {"grow"}),
    ("qn_mod:Box.*", {"grow", "make", "size", "wrapped", "run"}
     | ({"<listcomp>"} if sys.version_info < (3, 12) else set())),
    ("qn_mod:Box.Inner.run", {"run"}),
    ("qn_mod:grow", {"grow"}),
])
def test_class_qualname_patterns_on_every_version(tmp_path, monkeypatch, pattern, names):
    # 3.9/3.10 code objects have no co_qualname: it is read from the module
    (tmp_path / "qn_mod.py").write_text(QUALNAME_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "qn_mod", raising=False)
    import qn_mod
    for patterns in ([pattern], ["qn_mod:main", pattern]):
        prof = Profile(lines=patterns)
        prof.runcall(qn_mod.main)
        got = {k[2] for k in prof.line_stats()}
        want = names | ({"main"} if "qn_mod:main" in patterns else set())
        assert got == want, (patterns, got)
        assert prof.unmatched_line_patterns() == []
    scoped = Profile(only=[pattern])
    scoped.runcall(qn_mod.main)
    scoped.create_stats()
    assert {k[2] for k in scoped.stats if k[0].endswith("qn_mod.py")} == names


def running_at_start(prof):
    prof.enable()
    total = 0
    for i in range(3):
        total += i
    prof.disable()
    return total


def test_a_function_running_at_the_start_counts_lines_from_then():
    # 3.12+: its frame gets line events from enable() on; before, sys.settrace
    # traces only frames begun after it
    prof = Profile(lines=[__name__ + ":running_at_start"])
    running_at_start(prof)
    a = running_at_start.__code__.co_firstlineno
    got = line_hits(prof.line_stats())
    if sys.version_info >= (3, 12):
        assert got == {label(running_at_start.__code__): {a + 2: 1, a + 3: 4, a + 4: 3, a + 5: 1}}
        assert prof.unmatched_line_patterns() == []
    else:
        assert got == {}


def test_threads_running_before_the_start_count_lines_with_threads():
    # a service's worker threads, made before profiling (3.9-3.11: the
    # trace function is set in them at enable, as the profile hook; one with
    # a tracer of its own keeps it, and its lines are not counted)
    import queue
    import threading
    expected = settrace_hits(lambda: lines_corpus.loop_branches(9), "lines_corpus")
    key = label(lines_corpus.loop_branches.__code__)
    jobs, done = queue.Queue(), queue.Queue()

    def own_tracer(frame, event, arg):
        return None

    def worker(traced):
        if traced:
            sys.settrace(own_tracer)
        while True:
            job = jobs.get()
            if job is None:
                break
            done.put((job(), sys.gettrace() if traced else None))

    plain = threading.Thread(target=worker, args=(False,))
    plain.start()
    prof = Profile(lines=["lines_corpus:loop_branches"], threads=True)
    try:
        with prof:
            jobs.put(lambda: lines_corpus.loop_branches(9))
            done.get(timeout=10)
    finally:
        jobs.put(None)
        plain.join()
    assert line_hits(prof.line_stats())[key] == expected[key]
    if sys.version_info < (3, 12):
        traced = threading.Thread(target=worker, args=(True,))
        traced.start()
        prof = Profile(lines=["lines_corpus:loop_branches"], threads=True)
        try:
            with prof:
                jobs.put(lambda: lines_corpus.loop_branches(9))
                _result, tracer = done.get(timeout=10)
        finally:
            jobs.put(None)
            traced.join()
        assert tracer is own_tracer
        assert line_hits(prof.line_stats()).get(key, {}) == {}


def test_threads_are_left_without_a_tracer_after_the_stop():
    # 3.9-3.11: the trace function set in running threads (and in threads
    # started while profiling) is taken out of them again at disable(): a
    # service's worker threads do not pay a tracer after profiling ends
    import queue
    import threading
    jobs, done = queue.Queue(), queue.Queue()

    def worker():
        while True:
            job = jobs.get()
            if job is None:
                break
            done.put(job())

    def in_worker(job):
        jobs.put(job)
        return done.get(timeout=10)

    before = threading.Thread(target=worker)
    before.start()
    prof = Profile(lines=["lines_corpus:loop_branches"], threads=True)
    try:
        with prof:
            during = threading.Thread(target=worker)
            during.start()
            in_worker(lambda: lines_corpus.loop_branches(9))
            in_worker(lambda: lines_corpus.loop_branches(9))
            traced_while_on = in_worker(sys.gettrace) is not None
        tracers = [in_worker(sys.gettrace), in_worker(sys.gettrace)]
    finally:
        jobs.put(None)
        jobs.put(None)
        before.join()
        during.join()
    assert traced_while_on == (sys.version_info < (3, 12))
    assert tracers == [None, None]
    assert sys.gettrace() is None
    key = label(lines_corpus.loop_branches.__code__)
    assert sum(line_hits(prof.line_stats())[key].values()) == 2 * sum(
        settrace_hits(lambda: lines_corpus.loop_branches(9), "lines_corpus")[key].values())
