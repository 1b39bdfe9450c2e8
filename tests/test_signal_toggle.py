"""The signal toggle: ``python -m fastprof --signal SIG [--idle] -o FILE``
and ``fastprof.install_signal_toggle``.

Real signals (``os.kill``) go to a real child process. The child runs a
command loop on its stdin: the test sends a signal, then a command; the
child answers each command on stdout once it is done. A signal sent
before a command is handled before the command runs (it is pending in the
kernel before the child's read returns, and python runs the handler at
its next check), so the phases line up with the on- and off-periods
without sleeping. The child's other threads block the signal, so it is
always the main thread that receives it.
"""

import cProfile
import importlib.util
import marshal
import os
import pstats
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402
from fastprof.data.profile_file import load_profile  # noqa: E402
from helpers import cli_env  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
    pytest.mark.skipif(helpers.USING_CPROFILE, reason="the signal toggle is fastprof-only"),
]

PHASES = """\
def leaf_a(n):
    return n + 1

def phase_a():
    return sum(leaf_a(i) for i in range(50))

def leaf_b(n):
    return n * 2

def phase_b():
    t = 0
    for i in range(30):
        t += leaf_b(i)
    return sorted([3, 1, 2]), t

def leaf_c(x):
    return str(x)

def phase_c():
    return [leaf_c(i) for i in range(20)]

def thread_work():
    return [leaf_t(i) for i in range(10)]

def leaf_t(x):
    return -x

def many(n):
    # a larger profile: n distinct functions, each called once
    ns = {}
    exec("".join("def f%d(): return %d\\n" % (i, i) for i in range(n)), ns)
    for i in range(n):
        ns["f%d" % i]()
"""

# the command loop: one command a line, "ok" once it ran
LOOP = """\
import queue, signal, sys, threading
import phases

SIG = getattr(signal, sys.argv[1]) if len(sys.argv) > 1 else signal.SIGUSR1
jobs = queue.Queue()
done = queue.Queue()

def worker():
    signal.pthread_sigmask(signal.SIG_BLOCK, [SIG])  # the main thread gets it
    while True:
        job = jobs.get()
        if job is None:
            return
        job()
        done.put(1)

t = threading.Thread(target=worker, name="worker", daemon=True)
t.start()
%(setup)s
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "quit":
        break
    if cmd == "thread":
        jobs.put(phases.thread_work)
        done.get()
    elif cmd.startswith("many"):
        phases.many(int(cmd[4:]))
    elif cmd != "sync":
        getattr(phases, "phase_" + cmd)()
    sys.stdout.write("ok\\n")
    sys.stdout.flush()
jobs.put(None)
t.join()
"""


class Child:
    """A program under fastprof, driven through its stdin."""

    def __init__(self, tmp_path, args, setup="", script_args=(), wait=True):
        (tmp_path / "phases.py").write_text(PHASES)
        self.script = tmp_path / "loop.py"
        self.script.write_text(LOOP % {"setup": textwrap.dedent(setup)})
        self.proc = subprocess.Popen(
            [sys.executable] + list(args) + [str(self.script)] + list(script_args),
            cwd=str(tmp_path), env=cli_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True)
        if wait:
            self.do("sync")  # the loop runs: the toggle is installed

    def do(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if line != "ok\n":
            out, err = self.proc.communicate(timeout=60)
            raise AssertionError("child answered %r to %r; stderr:\n%s" % (line, cmd, err))

    def signal(self, sig=signal.SIGUSR1):
        os.kill(self.proc.pid, sig)
        self.do("sync")  # handled before this command ran

    def quit(self):
        if self.proc.poll() is not None:
            return self.proc.returncode, self.proc.stderr.read()
        out, err = self.proc.communicate("quit\n", timeout=120)
        return self.proc.returncode, err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def children():
    made = []
    yield made
    for c in made:
        c.kill()


def phases_module(tmp_path):
    """The child's phases.py, imported here under the same file name."""
    spec = importlib.util.spec_from_file_location("phases_%d" % id(tmp_path),
                                                  str(tmp_path / "phases.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cprofile_of(tmp_path, *phase_names):
    """cProfile's pstats dict for the same phases, run here."""
    mod = phases_module(tmp_path)
    pr = cProfile.Profile()
    for name in phase_names:
        pr.runcall(getattr(mod, "phase_" + name))
    pr.create_stats()
    return pr.stats


def phase_rows(stats, tmp_path):
    """{key: (cc, nc)} of phases.py's functions, and {(builtin, caller): calls}
    of the C functions they called."""
    here = str(tmp_path / "phases.py")
    # not the import of phases.py, which a profile from the start has
    own = {k: v[:2] for k, v in stats.items() if k[0] == here and k[2] != "<module>"}
    called = {}
    for k, v in stats.items():
        if k[0] == "~":
            for caller, cv in v[4].items():
                if caller in own:
                    called[(k[2], caller)] = cv[0]
    return own, called


def functions_of(stats, tmp_path):
    here = str(tmp_path / "phases.py")
    return {k[2] for k in stats if k[0] == here}


def assert_no_fastprof_rows(stats):
    import fastprof
    pkg = os.path.dirname(os.path.abspath(fastprof.__file__))
    ours = [k for k in stats if os.path.dirname(os.path.abspath(k[0])) == pkg]
    assert not ours, "fastprof's own frames in the profile: %r" % ours
    assert not [k for k in stats if "toggle" in k[2] or "_on_signal" in k[2]], stats.keys()


def leftovers(tmp_path):
    return sorted(p.name for p in tmp_path.iterdir() if ".tmp" in p.name)


# -- python -m fastprof --signal ---------------------------------------------------

def test_idle_two_signals_then_exit_profiles_only_the_on_periods(tmp_path, children):
    out = tmp_path / "app.prof"
    child = Child(tmp_path, ["-m", "fastprof", "--signal", "USR1", "--idle", "-o", str(out)])
    children.append(child)
    child.do("a")                       # off: not profiled
    assert not out.exists()
    child.signal()                      # on
    child.do("b")
    child.signal()                      # off: writes what the on-period collected
    first = load_profile(str(out)).stats
    assert functions_of(first, tmp_path) == {"phase_b", "leaf_b"}
    assert phase_rows(first, tmp_path) == phase_rows(cprofile_of(tmp_path, "b"), tmp_path)
    assert_no_fastprof_rows(first)
    child.do("a")                       # off again
    child.signal()                      # on: the profile is cumulative
    child.do("c")
    child.signal()                      # off
    second = load_profile(str(out)).stats
    assert functions_of(second, tmp_path) == {"phase_b", "leaf_b", "phase_c", "leaf_c"} | (
        {"<listcomp>"} if sys.version_info < (3, 12) else set())
    want = phase_rows(cprofile_of(tmp_path, "b", "c"), tmp_path)
    assert phase_rows(second, tmp_path) == want
    child.do("a")
    status, err = child.quit()
    assert status == 0, err
    final = pstats.Stats(str(out)).stats    # the end writes the final one
    assert phase_rows(final, tmp_path) == want
    assert_no_fastprof_rows(final)
    assert leftovers(tmp_path) == []
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


def test_without_idle_starts_profiled_and_first_signal_stops(tmp_path, children):
    out = tmp_path / "app.prof"
    child = Child(tmp_path, ["-m", "fastprof", "--signal", "SIGUSR2", "-o", str(out)],
                  script_args=["SIGUSR2"])
    children.append(child)
    child.do("a")                       # on from the start
    child.signal(signal.SIGUSR2)        # off: written
    assert functions_of(load_profile(str(out)).stats, tmp_path) >= {"phase_a", "leaf_a"}
    child.do("b")                       # off
    status, err = child.quit()
    assert status == 0, err
    final = load_profile(str(out)).stats
    assert "phase_b" not in functions_of(final, tmp_path)
    assert phase_rows(final, tmp_path) == phase_rows(cprofile_of(tmp_path, "a"), tmp_path)
    assert_no_fastprof_rows(final)


MEMORY_PHASE = """\
def phase_m():
    phases.kept = [bytearray(1000) for _ in range(200)]
phases.phase_m = phase_m
"""


def test_memory_counts_the_on_periods_only(tmp_path, children):
    out = tmp_path / "app.prof"
    child = Child(tmp_path, ["-m", "fastprof", "--signal", "USR1", "--idle", "--memory", "-o", str(out)],
                  setup=MEMORY_PHASE)
    children.append(child)

    def phase_m_bytes():
        data = load_profile(str(out))
        (row,) = [r for k, r in data.memory.items() if k[2] == "phase_m"]
        return row.allocated_incl
    child.do("m")                       # off: not counted
    child.signal()                      # on
    child.do("m")
    child.signal()                      # off: written, with memory
    assert 200 * 1000 <= phase_m_bytes() < 200 * 1300
    child.do("m")                       # off again: not counted
    status, err = child.quit()
    assert status == 0, err
    assert 200 * 1000 <= phase_m_bytes() < 200 * 1300


@pytest.mark.parametrize("threads", [True, False])
def test_all_threads_are_toggled(tmp_path, children, threads):
    out = tmp_path / "app.prof"
    args = ["-m", "fastprof", "--signal", str(int(signal.SIGUSR1)), "--idle", "-o", str(out)]
    if not threads:
        args.insert(2, "--no-threads")
    child = Child(tmp_path, args)
    children.append(child)
    child.do("thread")                  # off
    child.signal()
    child.do("thread")                  # on: the worker thread's calls
    child.do("b")
    child.signal()
    child.do("thread")                  # off again
    status, err = child.quit()
    assert status == 0, err
    data = load_profile(str(out))
    stats = data.stats
    want = {"phase_b", "leaf_b"}
    if threads:
        want |= {"thread_work", "leaf_t"} | (
            {"<listcomp>"} if sys.version_info < (3, 12) else set())
        assert stats[next(k for k in stats if k[2] == "leaf_t")][:2] == (10, 10)
    assert functions_of(stats, tmp_path) == want


def test_each_write_is_complete_and_atomic_for_a_polling_reader(tmp_path, children):
    out = tmp_path / "app.prof"
    child = Child(tmp_path, ["-m", "fastprof", "--signal", "USR1", "--idle", "-o", str(out)])
    children.append(child)
    seen = {}
    stop = threading.Event()
    errors = []

    def reader():
        while not stop.is_set():
            try:
                with open(str(out), "rb") as f:
                    blob = f.read()
            except FileNotFoundError:
                continue
            if blob not in seen:
                try:
                    seen[blob] = marshal.loads(blob)
                except Exception as exc:  # a partial file
                    errors.append("%d bytes: %s" % (len(blob), exc))

    r = threading.Thread(target=reader, daemon=True)
    r.start()
    try:
        for n in range(1, 7):
            child.signal()                  # on
            child.do("many%d" % (300 * n))  # a bigger profile each time
            child.signal()                  # off: written
            assert len(load_profile(str(out)).stats) >= 300 * n
            # the reader has had its look at this write before the next one
            # (a loaded machine may starve its thread; the check is on what it read)
            deadline = time.monotonic() + 60
            while len(seen) < n and time.monotonic() < deadline:
                time.sleep(0.01)
        # signals in a burst, during writes: whatever they come to, nothing breaks
        for _ in range(5):
            os.kill(child.proc.pid, signal.SIGUSR1)
        child.do("sync")
        child.do("b")
    finally:
        stop.set()
        r.join()
    status, err = child.quit()
    assert status == 0, err
    assert not errors, errors
    assert len(seen) >= 6
    assert leftovers(tmp_path) == []
    pstats.Stats(str(out))
    assert err == ""


def test_program_setting_its_own_handler_is_refused_with_its_line(tmp_path, children):
    out = tmp_path / "app.prof"
    setup = """
    prev = signal.signal(signal.SIGUSR2, lambda s, f: None)  # another signal: as usual
    assert prev == signal.SIG_DFL and isinstance(prev, signal.Handlers), prev
    assert signal.signal(signal.SIGUSR2, prev) is not None
    signal.signal(signal.SIGUSR1, lambda s, f: None)  # the toggle's
    """
    child = Child(tmp_path, ["-m", "fastprof", "--signal", "USR1", "-o", str(out)], setup=setup,
                  wait=False)
    children.append(child)
    status, err = child.quit()
    assert status == 1
    assert "ValueError: SIGUSR1 is fastprof's profiling toggle" in err
    assert "signal.signal(signal.SIGUSR1, lambda s, f: None)  # the toggle's" in err
    assert "loop.py" in err
    assert load_profile(str(out)).stats  # the profile is written anyway


@pytest.mark.parametrize("args, message", [
    (["--signal", "USR1"], "--signal needs -o FILE"),
    (["--signal", "USR1", "-o", "-", "--to", "pstats"], "--signal needs -o FILE"),
    (["--idle", "-o", "x.prof"], "--idle needs --signal"),
    (["--signal", "USR9", "-o", "x.prof"], "unknown signal 'USR9'"),
    (["--signal", "KILL", "-o", "x.prof"], "SIGKILL cannot be caught"),
    (["--signal", "999", "-o", "x.prof"], "not a valid signal number"),
    (["--signal", "INT", "-o", "x.prof"], "SIGINT already has a handler"),
])
def test_usage_errors(tmp_path, args, message):
    (tmp_path / "s.py").write_text("print('ran')\n")
    r = subprocess.run([sys.executable, "-m", "fastprof"] + args + ["s.py"], cwd=str(tmp_path),
                       env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert lines[0].startswith("python -m fastprof: error: ")


def test_help_describes_the_options():
    r = subprocess.run([sys.executable, "-m", "fastprof", "--help"], env=cli_env(),
                       stdout=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert "--signal=SIG" in r.stdout and "--idle" in r.stdout
    assert "kill -USR1 %1" in r.stdout


# -- fastprof.install_signal_toggle ------------------------------------------------

API_SETUP = """
import fastprof
assert "install_signal_toggle" in fastprof.__all__
toggle = fastprof.install_signal_toggle("SIGUSR1", "api.prof")
"""


def test_install_signal_toggle_from_inside_a_program(tmp_path, children):
    child = Child(tmp_path, [], setup=API_SETUP)
    children.append(child)
    out = tmp_path / "api.prof"
    child.do("a")                       # idle by default
    child.signal()
    child.do("b")
    child.signal()
    first = load_profile(str(out)).stats
    assert functions_of(first, tmp_path) == {"phase_b", "leaf_b"}
    child.signal()
    child.do("c")
    status, err = child.quit()          # the end writes the final one
    assert status == 0, err
    final = load_profile(str(out)).stats
    assert phase_rows(final, tmp_path) == phase_rows(cprofile_of(tmp_path, "b", "c"), tmp_path)
    assert_no_fastprof_rows(final)
    assert leftovers(tmp_path) == []


def test_install_refuses_an_existing_handler_and_uninstall_restores(tmp_path):
    script = tmp_path / "svc.py"
    script.write_text(textwrap.dedent("""\
        import signal, fastprof, _signal
        original = signal.signal

        def mine(s, f):
            pass

        signal.signal(signal.SIGUSR1, mine)
        try:
            fastprof.install_signal_toggle("USR1", "x.prof")
        except ValueError as exc:
            print("refused:", exc)
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        raw = _signal.signal
        t = fastprof.install_signal_toggle(10, "y.html", idle=False)
        try:
            signal.signal(signal.SIGUSR1, mine)
        except ValueError as exc:
            print("later:", exc)
        t.uninstall()
        assert _signal.signal is raw, "the guard is still in place"
        assert signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN
        signal.signal(signal.SIGUSR1, mine)     # the program's again
        t.uninstall()                           # twice: nothing
        print("written", t.writes)
        """))
    r = subprocess.run([sys.executable, str(script)], cwd=str(tmp_path), env=cli_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("refused: SIGUSR1 already has a handler, <function mine")
    assert "(defined at %s:4)" % script in lines[0]
    assert lines[1].startswith("later: SIGUSR1 is fastprof's profiling toggle")
    assert lines[2] == "written 1"
    assert "<html" in (tmp_path / "y.html").read_text()[:2000].lower()
    assert not (tmp_path / "x.prof").exists()


def test_parse_signal_accepts_names_and_numbers():
    from fastprof.modes.signal_toggle import parse_signal
    for spelling in ("SIGUSR1", "USR1", "usr1", " SIGusr1 ", str(int(signal.SIGUSR1)),
                     int(signal.SIGUSR1), signal.SIGUSR1):
        assert parse_signal(spelling) == signal.SIGUSR1
    for bad in ("SIGNOPE", "", "-1", True, 1.5):
        with pytest.raises(ValueError):
            parse_signal(bad)


SIGNAL_DURING_WRITE = """\
import os, signal, sys, fastprof
import phases

toggle = fastprof.install_signal_toggle("USR1", "w.prof")
write = toggle._write
during = []

def write_and_signal():
    # a signal that comes while the file is being written (sent to
    # ourselves: python runs its handler inside this write)
    write()
    if during:
        os.kill(os.getpid(), signal.SIGUSR1)
        during.append(toggle.profiler.enabled)

toggle._write = write_and_signal
os.kill(os.getpid(), signal.SIGUSR1)       # on
phases.phase_b()
during.append("armed")
os.kill(os.getpid(), signal.SIGUSR1)       # off: writes; the signal during it starts again
during.remove("armed")
assert during == [False], during           # not started in the middle of the write
assert toggle.profiler.enabled, "the signal during the write was lost"
phases.phase_c()
during.append("armed")
sys.exit(3)                                # the final write, with a signal during it too
"""


def test_a_signal_during_a_write_is_applied_after_it(tmp_path):
    (tmp_path / "phases.py").write_text(PHASES)
    (tmp_path / "w.py").write_text(SIGNAL_DURING_WRITE)
    r = subprocess.run([sys.executable, "w.py"], cwd=str(tmp_path), env=cli_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=60)
    assert r.returncode == 3, r.stderr
    assert r.stderr == ""
    stats = load_profile(str(tmp_path / "w.prof")).stats
    # b and c, each once: nothing of the writes, nothing lost
    assert phase_rows(stats, tmp_path) == phase_rows(cprofile_of(tmp_path, "b", "c"), tmp_path)
    assert_no_fastprof_rows(stats)
    assert leftovers(tmp_path) == []


def test_uninstall_while_profiling_adds_no_row(tmp_path):
    (tmp_path / "phases.py").write_text(PHASES)
    (tmp_path / "u.py").write_text(textwrap.dedent("""\
        import signal, fastprof, phases
        t = fastprof.install_signal_toggle("USR2", "u.prof", idle=False)
        phases.phase_a()
        t.uninstall()
        phases.phase_b()                # not profiled: uninstalled
        assert signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL
        assert t.writes == 1 and not t.installed and not t.profiler.enabled
        assert fastprof.modes.signal_toggle._active is None
        """))
    r = subprocess.run([sys.executable, "u.py"], cwd=str(tmp_path), env=cli_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    stats = load_profile(str(tmp_path / "u.prof")).stats
    assert phase_rows(stats, tmp_path) == phase_rows(cprofile_of(tmp_path, "a"), tmp_path)
    assert_no_fastprof_rows(stats)
    assert [k for k in stats if k[0] == "~" and "toggle" in k[2]] == []
    # only the program's own calls: phase_a and what it called
    assert {k[2] for k in stats if k[0] != "~"} == {"phase_a", "leaf_a", "<genexpr>"}


def test_a_failed_write_is_reported_and_the_program_goes_on(tmp_path):
    (tmp_path / "phases.py").write_text(PHASES)
    (tmp_path / "out").mkdir()
    (tmp_path / "f.py").write_text(textwrap.dedent("""\
        import os, signal, fastprof, phases
        fastprof.install_signal_toggle("USR1", "out/f.prof")
        os.kill(os.getpid(), signal.SIGUSR1)
        phases.phase_a()
        os.rename("out", "gone")                 # the next write cannot happen
        os.kill(os.getpid(), signal.SIGUSR1)
        os.rename("gone", "out")
        os.kill(os.getpid(), signal.SIGUSR1)
        phases.phase_b()
        print("went on")
        """))
    r = subprocess.run([sys.executable, "f.py"], cwd=str(tmp_path), env=cli_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "went on\n"
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fastprof: cannot write "), r.stderr
    assert "f.prof" in lines[0] and "No such file or directory" in lines[0]
    # nothing was lost: the final write has both on-periods
    stats = load_profile(str(tmp_path / "out" / "f.prof")).stats
    assert phase_rows(stats, tmp_path) == phase_rows(cprofile_of(tmp_path, "a", "b"), tmp_path)
    assert leftovers(tmp_path / "out") == [] and not (tmp_path / "gone").exists()


def test_uninstall_from_another_thread_is_refused_and_stops(tmp_path):
    (tmp_path / "phases.py").write_text(PHASES)
    (tmp_path / "t.py").write_text(textwrap.dedent("""\
        import signal, threading, fastprof, phases
        t = fastprof.install_signal_toggle("USR1", "t.prof", idle=False)
        phases.phase_a()
        errors = []

        def other():
            try:
                t.uninstall()
            except ValueError as exc:
                errors.append(str(exc))

        th = threading.Thread(target=other)
        th.start()
        th.join()
        assert errors == ["uninstall() must be called from the main thread"], errors
        assert not t.profiler.enabled and t.writes == 1 and t.installed
        t.uninstall()
        assert not t.installed and t.writes == 1
        """))
    r = subprocess.run([sys.executable, "t.py"], cwd=str(tmp_path), env=cli_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    stats = load_profile(str(tmp_path / "t.prof")).stats
    assert phase_rows(stats, tmp_path) == phase_rows(cprofile_of(tmp_path, "a"), tmp_path)
