"""``fastprof top PID``: the live view of a running process (3.14+).

The interval arithmetic (two snapshots -> the rows of the period between
them) is checked on hand-made snapshots with exact numbers, on every
version.  On 3.14+ the command runs against a busy multi-threaded target
(tests/data/top_target.py: an "alpha" thread of few long calls, two "beta"
threads of many short ones), in a real terminal: tmux, 80x24, keys sent
and the screen read back with capture-pane; the target's printed result
and what a profiler could leave behind are compared with a run nobody
watched.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import fastprof
from fastprof.data import cost_note
from fastprof.data.profile_file import load_profile
from fastprof.modes import top
from helpers import CPU_BOUND_SCALE, TESTS_DIR, cli_env

TARGET = os.path.join(TESTS_DIR, "data", "top_target.py")
# where the attacher's fastprof lives (nothing of it may show in a profile)
FASTPROF_DIR = os.path.dirname(os.path.abspath(fastprof.__file__)) + os.sep

needs_remote_exec = pytest.mark.skipif(
    not hasattr(sys, "remote_exec"),
    reason="fastprof top attaches with sys.remote_exec: Python 3.14+ (PEP 768)")
needs_tmux = pytest.mark.skipif(
    shutil.which("tmux") is None,
    reason="tmux is not installed (scripts/apt-packages.txt: make deps)")


# -- the arithmetic, on every version --------------------------------------------

F = ("app.py", 10, "f")
G = ("app.py", 20, "g")
LEN = ("~", 0, "<built-in method builtins.len>")
KEYS = [F, G, LEN, F]  # function number 3: another code object with F's key

BEFORE = {
    "seq": 4, "time": 100.0, "elapsed": 3.0,
    "threads": [[1, "MainThread", True], [2, "worker", True], [3, "gone", False]],
    # [function number, calls, recursive calls, tottime, cumtime], cumulative
    "all": [[0, 10, 0, 1.5, 2.0], [1, 4, 1, 0.25, 0.5], [2, 7, 0, 0.125, 0.125]],
    "helper": [[2, 3, 0, 0.0625, 0.0625]],  # the agent's own calls, in "all" too
    "thread": [2, [[0, 6, 0, 1.0, 1.25], [2, 4, 0, 0.0625, 0.0625]]],
    "compensate": True, "removed": 0.001,
}
AFTER = {
    "seq": 6, "time": 100.5, "elapsed": 3.5,
    "threads": [[1, "MainThread", True], [2, "worker", True], [3, "gone", False], [5, "new", True]],
    "all": [[0, 16, 0, 2.0, 2.75], [1, 4, 1, 0.25, 0.5], [2, 107, 0, 0.25, 0.25],
            [3, 2, 1, 0.5, 1.0]],
    "helper": [[2, 3, 0, 0.0625, 0.0625]],
    "thread": [2, [[0, 8, 0, 1.25, 1.5], [2, 54, 0, 0.125, 0.125]]],
    "compensate": True, "removed": 0.001 + 108 * 2 * 50e-9,
}


def as_dict(rows):
    return {r.key: (r.calls, r.pcalls, r.own, r.cum) for r in rows}


def test_interval_rows_all_threads():
    rows, seconds = top.interval_rows(BEFORE, AFTER, KEYS)
    assert seconds == 0.5
    assert as_dict(rows) == {
        # 16 - 10 calls, + the second code object's 2 calls (1 recursive)
        F: (6 + 2, 6 + 1, 0.5 + 0.5, 0.75 + 1.0),
        # len: (107 - 3) - (7 - 3), the helper's calls taken off both
        LEN: (100, 100, 0.125, 0.125),
        # g did not run in the period: no row
    }


def test_interval_rows_one_thread():
    rows, seconds = top.interval_rows(BEFORE, AFTER, KEYS, thread=2)
    assert seconds == 0.5
    assert as_dict(rows) == {F: (2, 2, 0.25, 0.25), LEN: (50, 50, 0.0625, 0.0625)}
    # a thread whose rows a snapshot lacks (the agent sends them from the
    # snapshot after the viewer asked): nothing yet
    assert top.interval_rows(BEFORE, AFTER, KEYS, thread=1) == (None, 0.0)
    assert top.interval_rows(BEFORE, dict(AFTER, thread=[1, []]), KEYS, thread=1) == (None, 0.0)


def test_since_attach_is_the_snapshot_itself():
    rows, seconds = top.interval_rows(None, AFTER, KEYS)
    assert seconds == 3.5
    assert as_dict(rows) == {F: (18, 17, 2.5, 3.75), G: (4, 3, 0.25, 0.5), LEN: (104, 104, 0.1875, 0.1875)}


def test_the_screen_says_what_was_removed():
    """The cost line: raw times said so; a snapshot that does not say (an
    agent of another version) shows none."""
    assert top.cost_line(BEFORE, dict(AFTER, compensate=False, removed=0.0)) == cost_note.RAW_NOTE
    unsaid = {k: v for k, v in BEFORE.items() if k not in ("compensate", "removed")}
    assert top.cost_line(unsaid, AFTER) is None
    assert top.cost_line(BEFORE, unsaid) is None
    view = top.View(4321, micro="u")
    view.add_functions([list(F) + [None], list(G) + [None], list(LEN) + [None], list(F) + [None]])
    view.add_snapshot(unsaid)
    view.add_snapshot({k: v for k, v in AFTER.items() if k not in ("compensate", "removed")})
    assert view.lines(80, 24)[3].split()[0] == "OWN"


def test_sorting_and_the_screen():
    rows, _s = top.interval_rows(BEFORE, AFTER, KEYS)
    assert [r.key for r in top.sort_rows(rows, "own")] == [F, LEN]
    assert [r.key for r in top.sort_rows(rows, "calls")] == [LEN, F]
    view = top.View(4321, sort="own", micro="u")
    view.add_functions([list(F) + ["App.f"], list(G) + [None], list(LEN) + [None], list(F) + [None]])
    view.add_snapshot(BEFORE)
    assert view.lines(80, 24)[3] == "collecting the first interval..."
    view.add_snapshot(AFTER)
    lines = view.lines(80, 24)
    assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
    assert lines[0] == "fastprof top - process 4321 - up 0:03"
    assert lines[1] == "threads: all (3) - sort: own time - last 500 ms"
    assert lines[2] == "2 functions ran, 108 calls (216/s), 1.12 s own time"
    # what was taken out of those times: all threads' calls in the period
    # (the agent's included, as in what was removed), 2 events each
    assert lines[3] == "profiler cost removed: 50 ns/event, 216 events"
    assert lines[4].split() == ["OWN", "OWN%", "CUM", "CALLS", "CALLS/S", "FUNCTION"]
    assert lines[5].split() == ["1.00", "s", "200.0%", "1.75", "s", "8/7", "16", "App.f", "(app.py:10)"]
    assert lines[6].split() == ["125", "ms", "25.0%", "125", "ms", "100", "200",
                                "<built-in", "method", "builtins.len>"]
    assert lines[-1] == top.HELP_LINE
    # the keys' effects: sort, the thread filter (the agent is asked for its
    # rows), since attach, pause
    view.sort = "calls"
    assert "builtins.len" in view.lines(80, 24)[5]
    view.next_thread()
    assert view.thread == 1 and view.lines(80, 24)[1].startswith("threads: MainThread [1]")
    view.next_thread()
    view.next_thread()  # thread 3 ended: skipped
    assert view.thread == 5 and view.lines(80, 24)[1].startswith("threads: new [5]")
    view.next_thread()
    assert view.thread is None
    view.next_thread(-1)
    view.next_thread(-1)
    assert view.thread == 2
    view.next_thread(-2)
    view.total = True
    assert view.lines(80, 24)[1].endswith("since attach, 3.50 s")
    assert view.lines(80, 24)[3] == "profiler cost removed: %.0f ns/event, 258 events" % (
        AFTER["removed"] / 258 * 1e9)
    view.toggle_pause()
    view.add_snapshot(dict(AFTER, seq=7, time=101.5, elapsed=4.5))
    assert view.lines(80, 24)[0].endswith("up 0:03 - PAUSED")
    view.toggle_pause()
    assert view.lines(80, 24)[0] == "fastprof top - process 4321 - up 0:04"
    # a small terminal: still the key help on the last line, nothing wider
    small = view.lines(40, 8)
    assert len(small) == 8 and small[-1] == top.HELP_LINE[:38] + ".." and max(map(len, small)) <= 40


def test_bytes_allocated_in_the_interval():
    """--memory: each snapshot has each function's bytes so far (all
    threads but the helper's, and the shown thread's); a row holds the
    period's, and a function that allocated without a call returning in
    the period has a row too."""
    before = dict(BEFORE, memory=[list(F) + [1000], list(LEN) + [64]],
                  thread_memory=[2, [list(F) + [400]]])
    after = dict(AFTER, memory=[list(F) + [1500], list(LEN) + [64], list(G) + [4096]],
                 thread_memory=[2, [list(F) + [1400]]])
    rows, _s = top.interval_rows(before, after, KEYS)
    got = {r.key: r.allocated for r in rows}
    assert got == {F: 500, LEN: 0, G: 4096}
    assert [r.key for r in top.sort_rows(rows, "alloc")][0] == G
    rows, _s = top.interval_rows(before, after, KEYS, thread=2)
    assert {r.key: r.allocated for r in rows} == {F: 1000, LEN: 0}
    assert {r.key: r.allocated for r in top.interval_rows(None, after, KEYS)[0]}[G] == 4096
    view = top.View(4321, sort="alloc", micro="u", memory=True)
    view.add_functions([list(F) + [None], list(G) + [None], list(LEN) + [None], list(F) + [None]])
    view.add_snapshot(before)
    view.add_snapshot(after)
    lines = view.lines(100, 24)
    assert lines[1] == "threads: all (3) - sort: bytes allocated - last 500 ms"
    assert lines[2].endswith(", 4.5 KiB allocated"), lines[2]
    assert lines[4].split() == ["OWN", "OWN%", "CUM", "CALLS", "CALLS/S", "ALLOC", "FUNCTION"]
    assert lines[5].split()[-3:] == ["KiB", "g", "(app.py:20)"] and lines[5].split()[0] == "0"
    assert lines[-1] == top.HELP_LINE_MEMORY
    # a snapshot without memory (no --memory): no bytes, no row for them
    assert {r.key: r.allocated for r in top.interval_rows(BEFORE, AFTER, KEYS)[0]} == {F: 0, LEN: 0}


def run_top(*args, timeout=120, tmpdir=None):
    env = cli_env()
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    r = subprocess.run([sys.executable, "-m", "fastprof.cli", "top"] + [str(a) for a in args],
                       capture_output=True, text=True, env=env, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout, r.stderr


def test_help():
    status, out, err = run_top("--help")
    assert status == 0, err
    for text in ("usage: fastprof top", "PID", "--interval", "--batch", "--thread",
                 "sort by own time / cumulative time / calls", "detach"):
        assert text in out, text
    r = subprocess.run([sys.executable, "-m", "fastprof.cli", "--help"], env=cli_env(),
                       capture_output=True, text=True)
    assert r.returncode == 0 and "top" in r.stdout and "a live view of a running" in r.stdout


def test_not_permitted_says_what_is_needed():
    from fastprof.modes.attach import _remote_exec_error
    text = top._for_top(_remote_exec_error(4321, PermissionError(1, "Operation not permitted")))
    assert text == ("permission denied attaching to process 4321: it must run as your user and the "
                    "system must allow ptrace (kernel.yama.ptrace_scope 0 or 1, or CAP_SYS_PTRACE in "
                    "a container)")
    text = top._for_top(_remote_exec_error(4321, RuntimeError(
        "Can't send commands from Python 3.14 to a Python 3.15 process")))
    assert "python3.15 -m fastprof.cli top 4321" in text


@pytest.mark.skipif(hasattr(sys, "remote_exec"), reason="the error of an interpreter before 3.14")
def test_older_interpreter_says_so():
    status, out, err = run_top(os.getpid(), "--batch")
    assert status == 2 and out == ""
    assert err.strip() == ("fastprof top: error: needs Python 3.14 or later (sys.remote_exec, PEP 768); this is "
                           "%d.%d: run it with the target's python (pythonX.Y -m fastprof.cli top PID), or "
                           "start the program under python -m fastprof" % sys.version_info[:2])


# -- against a real process (3.14+) ----------------------------------------------

class Target:
    """top_target.py running in the background."""

    def __init__(self, tmp_path):
        self.control = tmp_path / ("control-%d" % time.monotonic_ns())
        self.control.mkdir()
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)  # fastprof comes from the attacher
        self.proc = subprocess.Popen([sys.executable, TARGET, str(self.control)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd=str(tmp_path))
        self.pid = self.proc.pid
        wait_for(lambda: (self.control / "ready").exists() or self.proc.poll() is not None)
        assert self.proc.poll() is None, self.proc.communicate()

    def finish(self):
        (self.control / "stop").write_text("")
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def wait_for(cond, timeout=30.0, what="a condition"):
    t0 = time.monotonic()
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() - t0 > timeout:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(0.05)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The target's output with nobody attached."""
    if not hasattr(sys, "remote_exec"):
        pytest.skip("3.14+ only")
    t = Target(tmp_path_factory.mktemp("baseline"))
    time.sleep(0.5)
    return t.finish()


def check_unchanged(result, baseline):
    status, out, err = result
    assert (status, out, err) == baseline
    assert status == 0 and err == ""
    assert "work done: True alpha exact: True beta exact: True" in out
    assert "profiler slot: None profile hook: None" in out
    assert "fastprof modules: []" in out
    assert "other threads: 0 sys.path unchanged: True" in out


class Tmux:
    """A tmux server of its own (socket in tmp_path) with one 80x24 window
    running *command*; the screen read with capture-pane."""

    def __init__(self, tmp_path, command, env):
        self.socket = str(tmp_path / "tmux.sock")
        env = dict(env)
        env.pop("TMUX", None)
        self.env = env
        self.tmux("new-session", "-d", "-s", "top", "-x", "80", "-y", "24", command)

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.socket] + list(args), env=self.env, check=True,
                              capture_output=True, text=True, timeout=30).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "top").splitlines()

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "top", *keys)

    def wait(self, cond, what, timeout=120.0):
        """Until cond(screen lines) is true; returns its value."""
        last = []

        def look():
            last[:] = self.screen()
            return cond(last)
        try:
            return wait_for(look, timeout, what)
        except AssertionError:
            raise AssertionError("timed out waiting for %s; the screen:\n%s"
                                 % (what, "\n".join(last))) from None

    def pane_pid(self):
        return int(self.tmux("display-message", "-p", "-t", "top", "#{pane_pid}").strip())

    def kill_server(self):
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], env=self.env, capture_output=True)


def row_of(lines, name):
    """Index of the first table row naming function *name*, or None."""
    for i, line in enumerate(lines):
        if " %s (top_target.py:" % name in line:
            return i
    return None


def table(lines):
    return [line for line in lines[5:-2] if line.strip()]


def header_and_rows(lines, header, *names):
    """True once the screen shows *header* and a table with all *names*."""
    return any(header in line for line in lines[:2]) and all(
        row_of(lines, n) is not None for n in names)


def top_command(pid, tmp_path, *args):
    python = sys.executable
    out = tmp_path / "viewer.out"
    return ("cd %s && %s -m fastprof.cli top %d %s 2>%s; echo EXIT=$?; sleep 60"
            % (tmp_path, python, pid, " ".join(args), out))


@needs_remote_exec
@needs_tmux
def test_top_in_a_terminal(tmp_path, baseline):
    private = tmp_path / "private"
    private.mkdir()
    env = cli_env()
    env["TMPDIR"] = str(private)
    env["TERM"] = "xterm"
    t = Target(tmp_path)
    term = None
    try:
        out = tmp_path / "so-far.prof"
        term = Tmux(tmp_path, top_command(t.pid, tmp_path, "--interval", "0.5", "-o", str(out)), env)
        # rows appear, sorted by own time: alpha_work (long calls) above beta_work
        # (a thread is in the list once it ran after the attach: all 4 within a snapshot or two)
        lines = term.wait(lambda s: header_and_rows(s, "threads: all (4) - sort: own time",
                                                    "alpha_work", "beta_work") and s, "the first table")
        assert lines[0].startswith("fastprof top - process %d - up " % t.pid)
        assert lines[1].startswith("threads: all (4) - sort: own time - last ")
        assert lines[-1].startswith("q quit")
        assert len(lines) <= 24 and max(map(len, lines)) <= 80
        assert row_of(lines, "alpha_work") < row_of(lines, "beta_work")
        # by calls: beta_work (hundreds of thousands a second) above alpha_work
        term.keys("n")
        lines = term.wait(lambda s: header_and_rows(s, "sort: calls", "alpha_work", "beta_work")
                          and row_of(s, "beta_work") < row_of(s, "alpha_work") and s,
                          "the table sorted by calls")
        # the CALLS column (top.ROW: after OWN, OWN% and CUM), all / primitive
        calls = [int(line[25:34].strip().split("/")[0].replace(",", "")) for line in table(lines)[1:]]
        assert len(calls) >= 3 and calls == sorted(calls, reverse=True), calls
        # the thread filter: t until the alpha thread, whose table has no beta_work
        for _ in range(5):
            shown = lines[1].split(" - ")[0]
            term.keys("t")
            lines = term.wait(lambda s, shown=shown: s[1].split(" - ")[0] != shown and s,
                              "the next thread")
            if lines[1].startswith("threads: alpha ["):
                break
        else:
            raise AssertionError("no alpha thread among: %s" % lines[1])
        lines = term.wait(lambda s: s[1].startswith("threads: alpha [")
                          and row_of(s, "alpha_work") is not None and s, "alpha's table")
        assert row_of(lines, "beta_work") is None
        # pause: the screen stays as it is
        term.keys("p")
        paused = term.wait(lambda s: s[0].endswith(" - PAUSED") and s, "PAUSED")
        time.sleep(1.2)
        assert term.screen() == paused
        term.keys("p")
        term.wait(lambda s: not s[0].endswith("PAUSED"), "unpaused")
        # w: the profile so far, loadable, with both kinds of work and the threads
        term.keys("w")
        # (the status line is cut at the terminal's 80 columns: a long tmp
        # path, as under xdist, loses its end)
        term.wait(lambda s: any(line.startswith("wrote ") for line in s), "the write")
        data = load_profile(str(out))
        names = {key[2]: value for key, value in data.stats.items()}
        assert names["alpha_work"][1] > 0 and names["beta_work"][1] > names["alpha_work"][1]
        assert sorted(th["name"] for th in data.threads) == ["MainThread", "alpha", "beta-0", "beta-1"]
        assert not any(key[0].startswith(FASTPROF_DIR) for key in data.stats), sorted(data.stats)
        # q: detached, the private directory removed
        term.keys("q")
        term.wait(lambda s: "EXIT=0" in s, "the viewer's exit")
        assert "detached from process %d" % t.pid in (tmp_path / "viewer.out").read_text()
        assert list(private.iterdir()) == []
        time.sleep(0.3)
        result = t.finish()
    finally:
        if term is not None:
            term.kill_server()
        t.kill()
    check_unchanged(result, baseline)


@needs_remote_exec
@needs_tmux
@pytest.mark.parametrize("how", ["SIGKILL", "terminal closed"])
def test_viewer_gone_the_target_stops_by_itself(tmp_path, baseline, how):
    """The viewer killed outright (the agent notices its attacher gone), or
    its terminal closed (SIGHUP, an ssh connection dropped: it detaches)."""
    private = tmp_path / "private"
    private.mkdir()
    env = cli_env()
    env["TMPDIR"] = str(private)
    t = Target(tmp_path)
    term = None
    try:
        command = "exec %s -m fastprof.cli top %d --interval 0.5" % (sys.executable, t.pid)
        term = Tmux(tmp_path, command, env)
        term.wait(lambda s: header_and_rows(s, "sort: own time", "alpha_work"), "the first table")
        assert len(list(private.iterdir())) == 1
        if how == "SIGKILL":
            os.kill(term.pane_pid(), signal.SIGKILL)
        else:
            term.kill_server()
        wait_for(lambda: list(private.iterdir()) == [], 15, "the private directory removed")
        time.sleep(0.3)
        result = t.finish()
    finally:
        if term is not None:
            term.kill_server()
        t.kill()
    check_unchanged(result, baseline)


@needs_remote_exec
def test_attach_and_detach_20_times(tmp_path, baseline):
    """--batch (no terminal), 20 times in a row on one process: a table each
    time, the profile of the first session written, nothing left behind."""
    private = tmp_path / "private"
    private.mkdir()
    t = Target(tmp_path)
    try:
        for i in range(20):
            out = tmp_path / "session.prof"
            extra = ["-o", out] if i == 0 else []
            status, stdout, stderr = run_top(t.pid, "--batch", "-n", "1", "--interval", "0.2",
                                             "--limit", "5", *extra, tmpdir=private)
            assert status == 0, stderr
            lines = stdout.splitlines()
            assert lines[0].startswith("fastprof top - process %d - up " % t.pid), stdout
            # what was taken out of the times shown, as the views say it
            assert re.fullmatch(r"profiler cost removed: \d+ ns/event, [\d.]+ k? ?events", lines[3]), stdout
            assert lines[4].split()[:2] == ["OWN", "OWN%"], stdout
            assert 1 <= len(table(lines + ["", ""])) <= 6, stdout
            assert stderr.splitlines()[-1] == "fastprof top: detached from process %d" % t.pid, stderr
            assert list(private.iterdir()) == []
            if i == 0:
                assert "fastprof top: wrote %s: " % out in stderr
                names = {key[2] for key in load_profile(str(out)).stats}
                assert {"alpha_work", "beta_work"} <= names
        time.sleep(0.3)
        result = t.finish()
    finally:
        t.kill()
    check_unchanged(result, baseline)


@needs_remote_exec
def test_memory_sorted_by_bytes(tmp_path):
    """--memory -s alloc on a live target: alpha_work's scratch buffer (4 KiB
    a call) is the most allocated."""
    t = Target(tmp_path)
    try:
        for thread in ([], ["--thread", "alpha"]):
            status, stdout, stderr = run_top(t.pid, "--batch", "-n", "2", "--interval", "0.3",
                                             "--memory", "-s", "alloc", "--limit", "3", *thread)
            assert status == 0, stderr
            frame = stdout.split("\n\n")[1].splitlines()
            assert "sort: bytes allocated" in frame[1] and frame[2].endswith(" allocated"), frame
            header = [n for n, line in enumerate(frame) if line.split()[:1] == ["OWN"]][0]
            assert frame[header].split()[5] == "ALLOC"
            first = frame[header + 1].split()
            assert "alpha_work" in first and first[first.index("alpha_work") - 1] in ("KiB", "MiB"), frame
        time.sleep(0.3)
        result = t.finish()
    finally:
        t.kill()
    assert "fastprof modules: []" in result[1] and "profiler slot: None" in result[1]


@needs_remote_exec
def test_thread_option_and_errors(tmp_path):
    t = Target(tmp_path)
    try:
        status, stdout, stderr = run_top(t.pid, "--batch", "-n", "2", "--interval", "0.2",
                                         "--thread", "beta-1")
        assert status == 0, stderr
        frames = stdout.split("\n\n")
        assert frames[0].splitlines()[1].startswith("threads: beta-1 [")
        assert "beta_work" in stdout and "alpha_work" not in stdout
        status, stdout, stderr = run_top(t.pid, "--batch", "-n", "1", "--thread", "nope")
        assert status == 2 and stderr.splitlines()[0].startswith(
            "fastprof top: error: process %d has no thread 'nope'; its threads: MainThread [1], " % t.pid)
        # no terminal, no --batch
        status, stdout, stderr = run_top(t.pid)
        assert (status, stdout) == (2, "")
        assert stderr.strip() == "fastprof top: error: needs a terminal (stdin and stdout); without one use --batch"
        time.sleep(0.3)
        result = t.finish()
    finally:
        t.kill()
    assert "fastprof modules: []" in result[1] and "profiler slot: None" in result[1]


@needs_remote_exec
@needs_tmux
def test_unknown_terminal_is_refused_before_attaching(tmp_path):
    env = cli_env()
    env["TERM"] = "no-such-terminal"
    sleeper = subprocess.Popen(["sleep", "30"])
    term = None
    try:
        out = tmp_path / "viewer.out"
        term = Tmux(tmp_path, "TERM=no-such-terminal %s -m fastprof.cli top %d 2>%s; echo EXIT=$?; sleep 60"
                    % (sys.executable, sleeper.pid, out), env)
        term.wait(lambda s: any("EXIT=" in line for line in s), "the exit")
        assert "EXIT=2" in "\n".join(term.screen())
        assert out.read_text() == ("fastprof top: error: curses cannot drive this terminal "
                                   "(TERM=no-such-terminal): set TERM (xterm, screen, vt100...) "
                                   "or use --batch\n")
    finally:
        if term is not None:
            term.kill_server()
        sleeper.kill()
        sleeper.wait()


@needs_remote_exec
def test_clear_errors():
    def one_line(args, text):
        status, out, err = run_top(*args)
        assert status == 2 and out == "", (status, out, err)
        assert err.count("\n") == 1 and err.startswith("fastprof top: error: " + text), err
    one_line(["abc", "--batch"], "bad PID 'abc'")
    p = subprocess.Popen(["true"])
    p.wait()
    one_line([p.pid, "--batch"], "no such process: %d" % p.pid)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        one_line([sleeper.pid, "--batch"], "process %d is not a Python %d.%d process"
                 % ((sleeper.pid,) + sys.version_info[:2]))
    finally:
        sleeper.kill()
        sleeper.wait()
    one_line([os.getpid(), "--batch", "--interval", "0"], "--interval must be more than 0, not 0")
    one_line([os.getpid(), "-n", "3"], "-n/--iterations needs --batch")
    one_line([os.getpid(), "--batch", "-s", "alloc"],
             "-s alloc needs --memory (the bytes each function allocates)")


# -- a thread per task: what the agent does stays bounded ------------------------

CHURN_TARGET = os.path.join(TESTS_DIR, "data", "thread_churn_target.py")


def _churn_task(k, done):
    done.release()
    return k + 1


def _threads_one_by_one(n):
    """n short threads, each started once the one before ran (_thread's:
    cheaper to start; before 3.12 threading's, the ones the hook follows)."""
    import _thread
    import threading
    for k in range(n):
        done = _thread.allocate_lock()
        done.acquire()
        if sys.version_info >= (3, 12):
            _thread.start_new_thread(_churn_task, (k, done))
        else:
            threading.Thread(target=_churn_task, args=(k, done)).start()
        assert done.acquire(timeout=60), "thread %d did not run" % k


def test_agent_after_20000_ended_threads(tmp_path):
    """The agent's work in the target (top_agent.TopSession, run here on
    every version): after 20,000 short threads, a snapshot and the profile
    so far each take the helper thread well under 100 ms of CPU (before the
    records of ended threads were folded, the write was quadratic in them:
    minutes, while the helper held the GIL), and the profile counts every
    thread's calls.  Under the sanitizers the bound is ten times wider
    (one write took 156 ms there): still far from minutes."""
    import marshal
    import threading

    from fastprof.modes.top_agent import TopSession
    options = {"builtins": None, "threads": True, "clock": "wall", "coroutines": "call",
               "callpaths": False, "max_depth": 128, "gc": True, "lines": None, "only": None,
               "fast": False, "line_keys": [], "duration": None, "attacher_pid": os.getpid(),
               "interval": 1.0}
    session = TopSession(str(tmp_path), options, None, set(sys.modules))
    session.helper_ident = threading.get_ident()
    session.prof.enable()
    session.started_at = time.monotonic()
    try:
        _threads_one_by_one(20000)
        session.prof.disable(this_thread=True)  # as the helper does (TopSession.tick)
        session.snapshot()  # the first one also appends every function's name
        costs = []
        for _ in range(3):
            session.snapshot()
            with open(tmp_path / "snapshot", "rb") as f:
                snap = marshal.load(f)
            costs.append(snap["cost"])
            assert len(snap["threads"]) <= 64 + 3, len(snap["threads"])
        assert min(costs) < 0.1 * CPU_BOUND_SCALE, costs
        session.write_so_far()  # (imports what writing needs, as start() does)
        cpu = time.thread_time()
        (tmp_path / "write").write_text("2")
        session.write_so_far()
        cost = time.thread_time() - cpu
    finally:
        session.prof.disable()
    data = load_profile(str(tmp_path / "profile-2.prof"))
    assert cost < 0.1 * CPU_BOUND_SCALE, cost
    calls = {key[2]: value[1] for key, value in data.stats.items()}
    assert calls["_churn_task"] == 20000
    assert sum(t.get("threads", 1) for t in data.threads) >= 20000
    assert any(t.get("threads", 1) > 1000 for t in data.threads)


@needs_remote_exec
def test_write_on_a_thread_per_task_target(tmp_path):
    """--batch -o on a target that starts a thread per task (thousands a
    second): the profile is written, with the ended threads folded into
    their group, and the target is left as it was."""
    control = tmp_path / "control"
    control.mkdir()
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    proc = subprocess.Popen([sys.executable, CHURN_TARGET, str(control)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (control / "ready").exists() or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate()
        out = tmp_path / "churn.prof"
        status, stdout, stderr = run_top(proc.pid, "--batch", "-n", "4", "--interval", "0.5",
                                         "--limit", "5", "-o", out)
        assert status == 0, stderr
        assert "fastprof top: wrote %s: " % out in stderr
        assert stderr.splitlines()[-1] == "fastprof top: detached from process %d" % proc.pid
        data = load_profile(str(out))
        tasks = {key[2]: value[1] for key, value in data.stats.items()}["task"]
        folded = [t for t in data.threads if t.get("threads", 1) > 1]
        assert [t["group"] for t in folded] == ["task-N"], [t["name"] for t in data.threads]
        # every thread that ran a task is in the file: each ran one
        assert sum(t.get("threads", 1) for t in data.threads
                   if t.get("group", t["name"]).startswith("task-")) == tasks
        (control / "stop").write_text("")
        result, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert err == "" and " right: True" in result, (result, err)
    assert "profiler slot: None fastprof modules: []" in result
