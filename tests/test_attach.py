"""``fastprof attach PID``: profiling a running process (sys.remote_exec, 3.14+).

Real targets (tests/data/attach_target.py: three worker threads doing known
work until told to stop) are attached, detached and attached again; each
profile is read back, and the target's output and exit status are compared
with a run nobody attached to.
"""
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

import fastprof
from fastprof.data.profile_file import load_profile
from helpers import TESTS_DIR, OutputLines, cli_env

TARGET = os.path.join(TESTS_DIR, "data", "attach_target.py")
# where the attacher's fastprof lives (the target may import it from there)
FASTPROF_DIR = os.path.dirname(os.path.abspath(fastprof.__file__)) + os.sep

needs_remote_exec = pytest.mark.skipif(
    not hasattr(sys, "remote_exec"),
    reason="fastprof attach needs Python 3.14+ (sys.remote_exec, PEP 768)")


def target_env(own_fastprof):
    """The target's environment: with or without fastprof importable."""
    env = cli_env() if own_fastprof else dict(os.environ)
    if not own_fastprof:
        env.pop("PYTHONPATH", None)
    return env


class Target:
    """attach_target.py running in the background."""

    def __init__(self, tmp_path, own_fastprof=False, block_main=False, env=None, args=()):
        self.control = tmp_path / ("control-%d" % time.monotonic_ns())
        self.control.mkdir()
        cmd = [sys.executable] + list(args) + [TARGET, str(self.control)]
        self.main_blocked = self.control / "main-blocked"
        if block_main:  # its main thread waits in one C call until wake_main()
            os.mkfifo(str(self.main_blocked), 0o600)
            cmd += ["--block-main", str(self.main_blocked)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env if env is not None else target_env(own_fastprof),
                                     cwd=str(tmp_path), text=True)
        self.pid = self.proc.pid
        wait_for(lambda: (self.control / "ready").exists() or self.proc.poll() is not None)
        assert self.proc.poll() is None, self.proc.communicate()

    def finish(self, status):
        (self.control / "stop.tmp").write_text(str(status))
        os.replace(str(self.control / "stop.tmp"), str(self.control / "stop"))
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err

    def wake_main(self):
        """Let the main thread of a block_main target go on: write a byte
        to the named pipe it waits on (once it has it open)."""
        def opened():
            try:
                return os.open(str(self.main_blocked), os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: the target has not opened it yet
                return None
        fd = None
        t0 = time.monotonic()
        while fd is None:
            assert self.proc.poll() is None and time.monotonic() - t0 < 60, "the target never waited"
            fd = opened()
            if fd is None:
                time.sleep(0.02)
        os.write(fd, b"x")
        os.close(fd)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def wait_for(cond, timeout=30.0):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def attach(pid, *args, tmpdir=None, timeout=120):
    """Run ``fastprof attach PID args``; return (status, stdout, stderr)."""
    env = cli_env()
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    r = subprocess.run([sys.executable, "-m", "fastprof.cli", "attach", str(pid)] + list(args),
                       capture_output=True, text=True, env=env, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture
def baseline(tmp_path_factory):
    """The target's output and status with nobody attached."""
    t = Target(tmp_path_factory.mktemp("baseline"))
    return t.finish(3)


def check_profile(path, threads=True):
    data = load_profile(str(path))
    names = {key[2]: value for key, value in data.stats.items()}
    # the workers' known work is there, with counts
    for func in ("worker_step", "square_sum"):
        assert func in names, sorted(names)
        assert names[func][1] > 0
    # nothing of fastprof's helper (its thread is left out entirely)
    for key in data.stats:
        assert not key[0].startswith(FASTPROF_DIR), key
        assert os.path.basename(key[0]) != "inject.py", key
        assert "disable" not in key[2] and "enable" not in key[2], key
    # nothing negative, in the table or on any caller edge
    for key, (cc, nc, tt, ct, callers) in data.stats.items():
        assert min(cc, nc) >= 0 and min(tt, ct) >= 0 and ct >= tt - 1e-9, (key, cc, nc, tt, ct)
        for edge in callers.values():
            assert min(edge) >= 0, (key, edge)
    if threads:
        thread_names = sorted(t["name"] for t in data.threads)
        assert thread_names == ["MainThread", "worker-0", "worker-1", "worker-2"], thread_names
        for t in data.threads:
            if t["name"].startswith("worker"):
                calls = {k[2]: v[1] for k, v in t["stats"].items()}
                assert calls["square_sum"] > 0
                # a worker already inside worker_step at the start counts its square_sum only
                assert 0 <= calls["square_sum"] - calls["worker_step"] <= 1, calls
    return data


@needs_remote_exec
@pytest.mark.parametrize("own_fastprof", [False, True],
                         ids=["fastprof-from-attacher", "fastprof-in-target-env"])
def test_attach_twice_and_the_target_is_unchanged(tmp_path, baseline, own_fastprof):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    t = Target(tmp_path, own_fastprof=own_fastprof)
    try:
        for i in (1, 2):
            out = tmp_path / ("attach%d.prof" % i)
            status, stdout, stderr = attach(t.pid, "--duration", "1", "-o", str(out), tmpdir=tmp)
            assert status == 0, stderr
            data = check_profile(out)
            summary = stderr.strip().splitlines()[-1]
            head = "fastprof attach: profiled process %d for " % t.pid
            assert summary.startswith(head), summary
            # the target's own clock: at least the 1 s asked (more on a loaded machine)
            assert float(summary[len(head):].split("s", 1)[0]) >= 1.0, summary
            assert ": 4 threads, %d functions" % len(data.stats) in summary, summary
            assert "wrote %s" % out in summary
            assert list(tmp.iterdir()) == []  # the private directory is gone
        # detached: the process runs on as before, profiled by nobody
        assert t.proc.poll() is None
        result = t.finish(3)
    finally:
        t.kill()
    assert result == baseline
    assert result[0] == 3
    assert "profiler slot: None" in result[1]
    assert "fastprof modules: []" in result[1] and "sys.path unchanged: True" in result[1]
    assert "work done: True exact: True" in result[1]


@needs_remote_exec
def test_no_threads_and_a_format_by_extension(tmp_path):
    t = Target(tmp_path)
    try:
        out = tmp_path / "main.prof"
        status, _, stderr = attach(t.pid, "--duration", "0.5", "--no-threads", "-o", str(out))
        assert status == 0, stderr
        data = load_profile(str(out))
        names = {key[2] for key in data.stats}
        # the main thread only: it polls for its stop file, it never runs the workers
        assert "exists" in names and "worker_step" not in names, sorted(names)
        assert ": 1 thread, " in stderr
        html = tmp_path / "live.html"
        status, _, stderr = attach(t.pid, "--duration", "0.5", "-o", str(html))
        assert status == 0, stderr
        assert html.read_text().lstrip().lower().startswith("<!doctype html")
        assert "square_sum" in html.read_text()
        # call paths: every profiled thread's tree, merged, the helper's left out
        paths = tmp_path / "paths.prof"
        status, _, stderr = attach(t.pid, "--duration", "0.5", "--callpaths", "-o", str(paths))
        assert status == 0, stderr
        data = check_profile(paths)
        cp = data.callpaths
        chain = {cp.functions[f][2]: cp.functions[cp.nodes[p][1]][2] if p >= 0 else None
                 for p, f, *_ in cp.nodes}
        assert chain["square_sum"] == "worker_step", chain
        assert not any(f[0].startswith(FASTPROF_DIR) for f in cp.functions)
        assert min(n[2] for n in cp.nodes) >= 0 and min(min(n[3], n[4]) for n in cp.nodes) >= 0
        # without -o: the table, as python -m fastprof prints it
        status, stdout, stderr = attach(t.pid, "--duration", "0.5", "-s", "tottime")
        assert status == 0, stderr
        assert "Ordered by: internal time" in stdout and "square_sum" in stdout
        assert "profiled process %d" % t.pid in stderr and "wrote" not in stderr
    finally:
        result = t.finish(0)
    assert result[0] == 0, result


@needs_remote_exec
def test_ctrl_c_stops_and_writes(tmp_path):
    t = Target(tmp_path)
    proc = None
    try:
        out = tmp_path / "ctrlc.prof"
        proc = subprocess.Popen([sys.executable, "-m", "fastprof.cli", "attach", str(t.pid),
                                 "-o", str(out)], env=cli_env(), stderr=subprocess.PIPE, text=True)
        lines = OutputLines(proc.stderr)
        # Ctrl-C once profiling runs in the target (the command says so: attaching
        # takes seconds under ASan on a busy machine), then a while of profiling
        lines.wait_for("profiling process %d until Ctrl-C" % t.pid, timeout=180)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        stderr = lines.text()
        assert proc.returncode == 0, stderr
        assert "until Ctrl-C" in stderr and "stopping (Ctrl-C)" in stderr
        check_profile(out)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        result = t.finish(0)
    assert result[0] == 0 and "profiler slot: None" in result[1], result


@needs_remote_exec
def test_target_exits_during_the_profile(tmp_path, baseline):
    t = Target(tmp_path)
    out = tmp_path / "exit.prof"
    proc = subprocess.Popen([sys.executable, "-m", "fastprof.cli", "attach", str(t.pid),
                             "--duration", "30", "-o", str(out)], env=cli_env(),
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = OutputLines(proc.stderr)
        lines.wait_for("profiling process %d for 30s" % t.pid, timeout=180)
        time.sleep(1.0)  # a while of profiling, then the target exits
        result = t.finish(3)
        proc.wait(timeout=120)
        stderr = lines.text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        t.kill()
    # what was collected up to the exit is kept
    assert proc.returncode == 0, stderr
    assert "(the process exited)" in stderr
    check_profile(out)
    # its status and results are its own (it printed its state while still profiled)
    assert result[0] == baseline[0] and result[2] == baseline[2] == ""
    assert result[1].splitlines()[0] == baseline[1].splitlines()[0]


# how long the target's main thread stays blocked in one C call: longer than the
# attach command takes to start (seconds under ASan on a busy machine) and then
# wait out its --timeout, so that it is still blocked when the command gives up
@needs_remote_exec
def test_blocked_main_thread_gives_up_and_nothing_starts_later(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    t = Target(tmp_path, block_main=True)
    try:
        out = tmp_path / "never.prof"
        t0 = time.monotonic()
        status, _, stderr = attach(t.pid, "--duration", "1", "--timeout", "2", "-o", str(out),
                                   tmpdir=tmp)
        # it waited its 2 s and gave up, the main thread still blocked
        assert time.monotonic() - t0 >= 2
        assert status == 2, stderr
        lines = stderr.strip().splitlines()
        assert len(lines) == 2, lines
        assert lines[0].startswith("fastprof attach: waiting for process %d's main thread" % t.pid)
        assert lines[1].startswith("fastprof attach: error: gave up after 2s")
        assert "withdrawn" in lines[1]
        assert not out.exists()
        # the request waits in a private directory the target will read: owner-only
        (private,) = tmp.iterdir()
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        for f in private.iterdir():
            assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
        # the main thread wakes, runs the withdrawn request: it only cleans up
        t.wake_main()
        wait_for(lambda: not private.exists(), timeout=60)
        time.sleep(0.5)
        result = t.finish(4)
    finally:
        t.kill()
    assert result[0] == 4, result
    assert "profiler slot: None" in result[1], result
    assert "fastprof modules: []" in result[1] and "sys.path unchanged: True" in result[1]
    assert result[2] == ""  # nothing printed by the interpreter about the script
    assert list(tmp.iterdir()) == [] and not out.exists()


def start_attach(pid, *args, tmpdir=None):
    """``fastprof attach PID args`` in the background (stderr piped)."""
    env = cli_env()
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.Popen([sys.executable, "-m", "fastprof.cli", "attach", str(pid)] + list(args),
                            env=env, stderr=subprocess.PIPE, text=True)


@needs_remote_exec
def test_ctrl_c_while_waiting_withdraws_the_request(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    t = Target(tmp_path, block_main=True)
    try:
        proc = start_attach(t.pid, "-o", str(tmp_path / "never.prof"), tmpdir=tmp)
        lines = OutputLines(proc.stderr)
        lines.wait_for("waiting for process %d" % t.pid)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        stderr = lines.text().strip().splitlines()
        assert proc.returncode == 2, stderr
        assert stderr[0].startswith("fastprof attach: waiting for process %d" % t.pid), stderr
        assert stderr[1:] == ["fastprof attach: error: interrupted before profiling started; "
                              "the request is withdrawn"], stderr
        # the target woke, cleaned up
        t.wake_main()
        wait_for(lambda: list(tmp.iterdir()) == [], timeout=60)
        result = t.finish(0)
    finally:
        t.kill()
    assert result[0] == 0 and result[2] == "" and "profiler slot: None" in result[1], result
    assert not (tmp_path / "never.prof").exists()


@needs_remote_exec
def test_attacher_killed_the_target_stops_by_itself(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    t = Target(tmp_path)
    try:
        proc = start_attach(t.pid, "-o", str(tmp_path / "lost.prof"), tmpdir=tmp)
        OutputLines(proc.stderr).wait_for("profiling process %d until Ctrl-C" % t.pid, timeout=180)
        proc.kill()
        proc.wait()
        # the helper sees its attacher gone: profiler off, directory removed
        wait_for(lambda: list(tmp.iterdir()) == [], timeout=60)
        time.sleep(0.2)
        result = t.finish(0)
    finally:
        t.kill()
    assert result[0] == 0 and result[2] == "" and "profiler slot: None" in result[1], result
    assert "fastprof modules: []" in result[1]


CPROFILE_TARGET = """\
import cProfile, os, sys, time
prof = cProfile.Profile()
prof.enable()
open(sys.argv[1], "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
prof.disable()
print("slot after:", sys.monitoring.get_tool(sys.monitoring.PROFILER_ID))
print("cProfile kept its stats:", any(k[2] == "exists" for k in __import__("pstats").Stats(prof).stats))
"""


@needs_remote_exec
def test_refuses_a_target_already_profiled(tmp_path):
    script = tmp_path / "under_cprofile.py"
    script.write_text(CPROFILE_TARGET)
    ready, go = tmp_path / "ready", tmp_path / "go"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, str(script), str(ready), str(go)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=target_env(False))
    try:
        wait_for(ready.exists)
        status, _, stderr = attach(proc.pid, "--duration", "1", tmpdir=tmp)
        assert status == 2
        assert stderr.strip() == (
            "fastprof attach: error: process %d is already being profiled (cProfile holds "
            "sys.monitoring's profiler slot): not attaching; stop that profiler first" % proc.pid)
        go.touch()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert err == "" and "slot after: None" in out and "cProfile kept its stats: True" in out
    assert list(tmp.iterdir()) == []


def one_error_line(result, *parts):
    """*result* of attach(): exit status 2 and one line on stderr, with *parts*."""
    status, stdout, stderr = result
    assert status == 2 and stdout == "", result
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("fastprof attach: error: "), lines[0]
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


def dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@needs_remote_exec
def test_bad_pids(tmp_path):
    one_error_line(attach("abc"), "bad PID 'abc'")
    one_error_line(attach("0"), "bad PID 0")
    pid = dead_pid()
    one_error_line(attach(pid), "no such process: %d" % pid)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        one_error_line(attach(sleeper.pid, "--duration", "1"),
                       "process %d is not a Python %d.%d process" % ((sleeper.pid,) + sys.version_info[:2]))
    finally:
        sleeper.kill()
        sleeper.wait()


def installed_python(version):
    """An interpreter of *version* on this machine (pyenv, or the 3.14+ cache
    of scripts/install-python.sh), or None."""
    candidates = [os.path.expanduser("~/.pyenv/versions/%s" % v) for v in
                  sorted(os.listdir(os.path.expanduser("~/.pyenv/versions")))
                  if v.startswith(version + ".")] if os.path.isdir(
                      os.path.expanduser("~/.pyenv/versions")) else []
    cache = os.environ.get("FASTPROF_PYTHONS_DIR", os.path.expanduser("~/.cache/fastprof/pythons"))
    candidates.append(os.path.join(cache, version, "usr"))
    for root in candidates:
        exe = os.path.join(root, "bin", "python" + version)
        if os.access(exe, os.X_OK):
            return exe
    return None


@needs_remote_exec
@pytest.mark.parametrize("version", ["3.12", "other 3.14+"])
def test_a_target_on_another_python(tmp_path, version):
    ours = "%d.%d" % sys.version_info[:2]
    if version != "3.12":
        version = "3.15" if ours == "3.14" else "3.14"
    exe = installed_python(version)
    if exe is None:
        pytest.skip("no Python %s on this machine" % version)
    proc = subprocess.Popen([exe, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                            env=target_env(False), stdout=subprocess.PIPE, text=True)
    try:
        OutputLines(proc.stdout).wait_for("ready", timeout=60)  # its runtime is up
        if version == "3.12":
            one_error_line(attach(proc.pid), "process %d is not a Python %s process" % (proc.pid, ours))
        else:
            one_error_line(attach(proc.pid), "process %d runs Python %s, this is %s" % (
                proc.pid, version, ours), "python%s -m fastprof.cli attach %d" % (version, proc.pid))
    finally:
        proc.kill()
        proc.wait()


def test_bootstrap_refuses_a_copy_of_fastprof_for_another_abi(tmp_path):
    """A target that cannot import fastprof gets the attacher's copy only if
    its Python would load that copy's C module: else one line, and nothing
    added to sys.path."""
    from fastprof.modes import attach_agent
    directory = tmp_path / "private"
    directory.mkdir(mode=0o700)
    script = directory / "inject.py"
    script.write_text(attach_agent.BOOTSTRAP % {
        "directory": str(directory), "fastprof_parent": os.path.dirname(FASTPROF_DIR.rstrip(os.sep)),
        "abi": [[3, 99], "cpython-399", ".cpython-399-x86_64-linux-gnu.so"], "options": {},
        "agent": "attach_agent"})
    check = "exec(open(%r).read()); import sys; print(%r in sys.path, 'fastprof' in sys.modules)" % (
        str(script), os.path.dirname(FASTPROF_DIR.rstrip(os.sep)))
    r = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                       env=target_env(False), cwd=str(tmp_path))
    assert r.returncode == 0 and r.stderr == "", r
    assert r.stdout.split() == ["False", "False"]
    error = (directory / "error").read_text()
    assert "fastprof is not installed in process" in error and "differs from the attaching one" in error
    assert (directory / "claim").exists()


@needs_remote_exec
@pytest.mark.parametrize("how", ["env", "-X"])
def test_remote_debugging_disabled_in_the_target(tmp_path, how):
    env = target_env(False)
    args = ()
    if how == "env":
        env["PYTHON_DISABLE_REMOTE_DEBUG"] = "1"
    else:
        args = ("-X", "disable_remote_debug")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    t = Target(tmp_path, env=env, args=args)
    try:
        line = one_error_line(attach(t.pid, "--duration", "1", tmpdir=tmp),
                              "remote debugging is disabled in process %d" % t.pid)
        assert ("PYTHON_DISABLE_REMOTE_DEBUG" if how == "env" else "-X disable_remote_debug") in line
        result = t.finish(0)
    finally:
        t.kill()
    assert result[0] == 0 and "profiler slot: None" in result[1]
    assert list(tmp.iterdir()) == []


@needs_remote_exec
def test_unwritable_output_is_refused_before_attaching(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    t = Target(tmp_path)
    try:
        one_error_line(attach(t.pid, "-o", str(tmp_path / "no" / "such" / "dir.prof"), tmpdir=tmp),
                       "cannot write", "does not exist")
        one_error_line(attach(t.pid, "-o", str(tmp_path), tmpdir=tmp), "it is a directory")
        assert list(tmp.iterdir()) == []  # refused before anything was sent
        result = t.finish(0)
    finally:
        t.kill()
    assert result[0] == 0 and "profiler slot: None" in result[1]


@pytest.mark.skipif(hasattr(sys, "remote_exec"), reason="the error of an interpreter before 3.14")
def test_older_attaching_interpreter_says_so():
    one_error_line(attach(os.getpid()), "needs Python 3.14 or later",
                   "this is %d.%d" % sys.version_info[:2])


def test_help_lists_attach():
    env = cli_env()
    out = subprocess.run([sys.executable, "-m", "fastprof.cli", "--help"], capture_output=True,
                         text=True, env=env).stdout
    assert "attach" in out and "running Python 3.14+ process" in out
    out = subprocess.run([sys.executable, "-m", "fastprof", "--help"], capture_output=True,
                         text=True, env=env).stdout
    assert "fastprof attach PID" in out
    r = subprocess.run([sys.executable, "-m", "fastprof.cli", "attach", "--help"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0
    for option in ("--duration", "--timeout", "--no-threads", "-o", "--clock", "--callpaths"):
        assert option in r.stdout


# -- --lines, --only, --fast in the target ----------------------------------------

SQUARE_SUM_N = 200  # attach_target.square_sum(200): its loop runs 200 times a call


@needs_remote_exec
def test_lines_of_a_function_in_the_target(tmp_path):
    t = Target(tmp_path)
    try:
        out = tmp_path / "lines.prof"
        # the script answers to its file's stem, as under python -m fastprof
        # the CPU clock: a worker's line waiting for the GIL at the stop
        # does not run on, so every line's time is of finished runs
        status, _, stderr = attach(t.pid, "--duration", "1", "--clock", "cpu",
                                   "--lines", "attach_target:square_sum",
                                   "--lines", "attach_target:no_such", "-o", str(out))
        assert status == 0, stderr
        assert ("fastprof attach: --lines attach_target:no_such: no function that ran "
                "matches it") in stderr.splitlines()
        data = check_profile(out)
        (key,) = data.lines
        assert key[2] == "square_sum"
        with open(TARGET) as f:
            first = f.read().splitlines().index("def square_sum(n):") + 1
        assert key[1] == first
        hits = {n: h for n, (h, _t) in data.lines[key].items()}
        start, loop, body, ret = first + 1, first + 2, first + 3, first + 4
        assert set(hits) == {start, loop, body, ret}, hits
        # known loop counts, up to the calls that were running when profiling
        # started or stopped (at most one per worker thread, at each end)
        calls = data.stats[key][1]
        assert calls > 10 and abs(hits[start] - calls) <= 6 and abs(hits[ret] - calls) <= 6
        assert abs(hits[body] - SQUARE_SUM_N * hits[start]) <= 6 * SQUARE_SUM_N
        assert abs(hits[loop] - (SQUARE_SUM_N + 1) * hits[start]) <= 6 * (SQUARE_SUM_N + 1)
        # own time per line: no call on these lines, so own = time, the runs
        # of the calls already running when the attach began included (their
        # callees are the calls that returned to an empty stack); another
        # thread's line open at the stop is in neither (a CPU clock's
        # reading of it is not at hand: docs/lines.md)
        own = data.lines_own[key]
        for n in (start, loop, body, ret):
            assert own[n] == pytest.approx(data.lines[key][n][1], rel=1e-9, abs=1e-12), (n, own)
        # without -o: the listing after the table
        status, stdout, stderr = attach(t.pid, "--duration", "0.5", "--lines",
                                        "attach_target:square_sum")
        assert status == 0, stderr
        assert "Line by line" in stdout and "total += i * i" in stdout
        # --lines-from: the hottest function of that first profile
        from fastprof.recording.line_profiling import top_functions
        (top,) = top_functions(str(out), 1)
        again = tmp_path / "again.prof"
        status, _, stderr = attach(t.pid, "--duration", "0.5", "--lines-from", "%s:1" % out,
                                   "-o", str(again))
        assert status == 0, stderr
        assert list(load_profile(str(again)).lines) == [top]
    finally:
        result = t.finish(0)
    assert result[0] == 0 and "profiler slot: None" in result[1], result


@needs_remote_exec
def test_only_records_the_named_function(tmp_path):
    t = Target(tmp_path)
    try:
        out = tmp_path / "only.prof"
        status, _, stderr = attach(t.pid, "--duration", "1", "--only",
                                   "attach_target:worker_step", "-o", str(out))
        assert status == 0, stderr
        scoped = load_profile(str(out))
        assert scoped.only == ["attach_target:worker_step"]  # the file says what it leaves out
        stats = scoped.stats
        # worker_step calls square_sum only (out of scope): no other row
        assert [k[2] for k in stats if k[2] != "<gc>"] == ["worker_step"], sorted(stats)
        (cc, nc, tt, ct, _callers), = [v for k, v in stats.items() if k[2] == "worker_step"]
        assert nc > 10 and tt == pytest.approx(ct, rel=0.01)  # square_sum's time is its own
        # the printed table says what it leaves out, as python -m fastprof's does
        status, stdout, stderr = attach(t.pid, "--duration", "0.5", "--only",
                                        "attach_target:worker_step")
        assert status == 0, stderr
        assert stdout.startswith("Only attach_target:worker_step: calls into other Python code")
    finally:
        result = t.finish(0)
    assert result[0] == 0, result


@needs_remote_exec
def test_fast_records_python_functions_only(tmp_path):
    t = Target(tmp_path)
    try:
        out = tmp_path / "fast.prof"
        status, _, stderr = attach(t.pid, "--duration", "1", "--fast", "-o", str(out))
        assert status == 0, stderr
        data = check_profile(out)
        assert [k for k in data.stats if k[0] == "~" and k[2] != "<gc>"] == []  # a collection may come
        assert data.fast is True
    finally:
        result = t.finish(0)
    assert result[0] == 0 and "profiler slot: None" in result[1], result


@needs_remote_exec
def test_scope_option_errors_before_attaching(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    t = Target(tmp_path)
    try:
        one_error_line(attach(t.pid, "--fast", "--only", "x", tmpdir=tmp),
                       "--fast cannot be combined with --only (not supported yet)")
        one_error_line(attach(t.pid, "--lines", "bad:", tmpdir=tmp),
                       "--lines: bad function pattern")
        one_error_line(attach(t.pid, "--lines-from", str(tmp_path / "none.prof"), tmpdir=tmp),
                       "--lines-from:")
        assert list(tmp.iterdir()) == []  # refused before anything was sent
        result = t.finish(0)
    finally:
        t.kill()
    assert result[0] == 0 and "profiler slot: None" in result[1]


def test_summary_line_counts_in_words():
    from fastprof.data.profile_file import ProfileData
    from fastprof.modes.attach import _summary_line
    one = ProfileData({("a.py", 1, "f"): (1, 1, 0.1, 0.1, {})})
    two = ProfileData({("a.py", 1, "f"): (2, 2, 0.1, 0.1, {}), ("a.py", 5, "g"): (1, 1, 0.1, 0.1, {})})
    assert _summary_line(7, one, {"duration": 1.0, "threads": 1}, None) == \
        "profiled process 7 for 1.00s: 1 thread, 1 function, 1 call"
    assert _summary_line(7, two, {"duration": 2.0, "threads": 2, "reason": "exit"}, "p.prof") == \
        "profiled process 7 for 2.00s (the process exited): 2 threads, 2 functions, 3 calls; wrote p.prof"


@needs_remote_exec
def test_memory_of_a_running_process(tmp_path):
    t = Target(tmp_path)
    try:
        out = tmp_path / "mem.prof"
        status, _, stderr = attach(t.pid, "--duration", "1", "--memory", "-o", str(out))
        assert status == 0, stderr
        data = check_profile(out)
        # worker_step's sums: allocated and freed again; nothing of the agent's own thread
        (row,) = [r for k, r in data.memory.items() if k[2] == "worker_step"]
        assert row.allocations > 100 and row.allocated > 100 * 28, row
        assert row.freed <= row.allocated and row.net < row.allocated, row
        assert data.memory_totals["allocations"] >= row.allocations, data.memory_totals
        assert not [k for k in data.memory if "attach_agent" in k[0]], sorted(data.memory)
        status, stdout, stderr = attach(t.pid, "--duration", "0.5", "--memory")
        assert status == 0, stderr
        printed = stdout.splitlines()
        (totals,) = [line for line in printed if line.startswith("memory: ")]
        header = printed.index(next(line for line in printed if line.split()[:2] == ["allocated", "incl"]))
        assert any("worker_step" in line for line in printed[header + 1:]), stdout
    finally:
        result = t.finish(0)
    assert result[0] == 0, result  # the allocators handed back: the target goes on and exits as asked
