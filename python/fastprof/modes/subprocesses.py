"""``python -m fastprof --subprocesses``: follow the program's Python children.

The parent makes a private directory (``tempfile.mkdtemp``: mode 0700, an
unguessable name) and tells its children about it through the environment:

- ``FASTPROF_SUBPROCESSES`` (JSON): the directory, the profiler options,
  where fastprof is installed and which Python (version, ABI) it was built
  for;
- ``PYTHONPATH`` starts with ``DIR/boot``, which holds only a
  ``sitecustomize.py``.  The parent's own ``sys.path`` is already set, so
  this reaches children only.  Every child started by exec'ing a Python
  (``subprocess``, multiprocessing's spawn and forkserver) imports it at
  startup: if it is the same Python, it starts a fresh profiler, then
  imports the ``sitecustomize`` it hides, if any.

Forked children (multiprocessing's fork, the forkserver's workers,
``os.fork``) inherit the parent's profiler and its stats: an
``os.register_at_fork`` handler drops that one and starts a fresh one, so
nothing of the parent is counted twice.

Each child writes ``DIR/PID.prof`` (atomically: a temporary name, then
``os.replace``, so a child killed while writing leaves no half file) when
it ends: at exit (atexit), or, for multiprocessing workers, which end with
``os._exit`` after their ``Process._bootstrap``, when that returns; a child
that calls ``os._exit`` itself writes it then (``exit_hook``).  SIGTERM
(``Pool.terminate()``, so leaving ``with Pool()``) is handled where it
would kill the child (its handler is SIG_DFL, or ours inherited through a
fork): the signal module's handler, which runs Python at a safe point of
the main thread, writes the profile, then the child dies of SIGTERM by the
default action, as it would have.  A handler the program set is left
alone.  The handler's write is bounded (``SIGTERM_WRITE_LIMIT``): a write
stuck on a lock the interrupted code held ends in the same death, without
the profile.

Each profiled child also leaves ``DIR/PID.started`` when it starts: at
the parent's end :meth:`Follower.finish` sums the profiles into the
parent's (merge.ProfileSum, one file at a time), names each child that
started but left no profile (SIGKILL, still running), and removes DIR.

multiprocessing's helper processes (the forkserver itself, the resource
tracker) live as long as the parent: they are not profiled (their profile
would come too late), but the forkserver's workers are.
"""

import atexit
import json
import os
import re
import shutil
import sys
import tempfile
import time

from ..recording import exit_hook
from . import package_parent
from .process_alive import alive

ENV = "FASTPROF_SUBPROCESSES"

# beside DIR/PID.prof: the --lines/--only lines that child would report
_UNMATCHED_SUFFIX = ".unmatched"

# the per-process profiles are kept beside the output, in OUTPUT + this
PROCESSES_SUFFIX = ".processes"

_PROFILE_NAME = re.compile(r"^(\d+)\.prof$")

# beside DIR/PID.prof: left by each profiled child when it starts, so that
# the parent can name a child that left no profile
_STARTED_SUFFIX = ".started"
_STARTED_NAME = re.compile(r"^(\d+)\.started$")

# seconds a child's write on SIGTERM may take before it dies of the signal
# anyway (a write stuck on a lock the interrupted code holds)
SIGTERM_WRITE_LIMIT = 30.0

# multiprocessing's helper processes, by the code they are started with
_HELPER_MARKERS = ("from multiprocessing.forkserver import main",
                   "from multiprocessing.resource_tracker import main")

BOOTSTRAP = '''\
# Written by fastprof --subprocesses for the children of a profiled program;
# removed when it ends. Profiles this process, then runs the sitecustomize
# this one hides, if any.
import os as _os
import sys as _sys


def _fastprof_follow():
    here = _os.path.dirname(_os.path.abspath(__file__))
    _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    try:
        import json
        cfg = json.loads(_os.environ[%(env)r])
        if cfg["python"] != [_sys.implementation.name, _sys.hexversion,
                             getattr(_sys, "abiflags", "")]:
            return  # another Python: fastprof's C module is not for it
        added = cfg["path"] not in _sys.path
        if added:
            _sys.path.append(cfg["path"])
        try:
            from fastprof.modes import subprocesses
        finally:
            if added:
                _sys.path.remove(cfg["path"])
        subprocesses.start_child(cfg)
    except Exception as exc:
        _sys.stderr.write("fastprof: not profiling child process %%d: %%s: %%s\\n"
                          %% (_os.getpid(), type(exc).__name__, exc))


_fastprof_follow()
del _fastprof_follow
_fastprof_boot = _sys.modules.pop("sitecustomize")
try:
    import sitecustomize  # noqa: F401  (the one on the rest of sys.path)
except ImportError as exc:
    if exc.name != "sitecustomize":
        raise  # the hidden one failed: site reports it, as without fastprof
finally:
    # the import system takes the module back from sys.modules after this
    _sys.modules.setdefault("sitecustomize", _fastprof_boot)
''' % {"env": ENV}


class _State:
    """What this process does for --subprocesses (parent or child)."""

    def __init__(self, cfg, prof, child):
        self.cfg = cfg
        self.prof = prof      # the profiler running in this process
        self.child = child    # write DIR/PID.prof at the end (not the parent)
        self.pid = os.getpid()
        self.written = False
        self.writing = False       # a write of DIR/PID.prof is running
        self.term_pending = None   # a SIGTERM that came during it: died of once done
        self.sigterm_handler = None  # the SIGTERM handler installed here, if any
        self.sigterm_started = False   # a run of it is writing (the backstop waits)
        self.backstop = False      # the backstop runs (see _on_sigterm)
        self.watch_fds = None      # (read, write) of the watcher's pipe (the wakeup fd)
        self.main_ident = None     # the main thread, where the backstop sends SIGTERM


_state = None


# -- parent side ---------------------------------------------------------------

class Follower:
    """The parent's side: set up before the program runs, finish() after."""

    def __init__(self, prof, options, main_alias=None):
        """*options*: cmdline.profile_options(), which the children's
        profilers are made with too; *main_alias*: the script's stem."""
        global _state
        self.started = time.time()
        self.dir = tempfile.mkdtemp(prefix="fastprof-children-")
        boot = os.path.join(self.dir, "boot")
        os.mkdir(boot, 0o700)
        with open(os.path.join(boot, "sitecustomize.py"), "w") as f:
            f.write(BOOTSTRAP)
        here = package_parent()
        self.children_unmatched = []  # per child: the lines of unmatched_patterns()
        cfg = {"dir": self.dir, "options": dict(options), "main_alias": main_alias, "path": here,
               "python": [sys.implementation.name, sys.hexversion, getattr(sys, "abiflags", "")]}
        self._saved_env = {k: os.environ.get(k) for k in (ENV, "PYTHONPATH")}
        os.environ[ENV] = json.dumps(cfg)
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = boot + (os.pathsep + old if old else "")
        _state = _State(cfg, prof, child=False)
        os.register_at_fork(after_in_child=_after_fork)

    def _restore_env(self):
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def finish(self, own, outfile, prog):
        """The parent's profile *own* (ProfileData) plus its children's; the
        per-process profiles are kept in OUTFILE.processes/ when *outfile*
        is a file."""
        from ..data.profile_file import ProfileFileError, load_profile, write_profile  # (deferred)
        from ..tools.merge import ProfileSum  # (deferred: nothing in a child before its program)
        # multiprocessing joins its children at exit (its atexit hook): do
        # it now, so that their profiles are there to merge
        util = sys.modules.get("multiprocessing.util")
        if util is not None:
            try:
                util._exit_function()
            except Exception:
                pass
        self._restore_env()
        keep = None
        if outfile is not None and outfile != "-":
            keep = outfile + PROCESSES_SUFFIX
            try:
                _clear_processes_dir(keep)
                write_profile(os.path.join(keep, "%d.prof" % os.getpid()), own)
            except OSError as exc:
                print("%s: cannot keep the per-process profiles in %s: %s"
                      % (prog, keep, exc.strerror or exc), file=sys.stderr)
                keep = None
        total = ProfileSum(pair_installs=False)  # one run: one install
        total.add(own)
        pids = [os.getpid()]
        skipped = set()
        for pid in sorted(_child_pids(self.dir)):
            path = os.path.join(self.dir, "%d.prof" % pid)
            try:
                total.add(load_profile(path))
            except ProfileFileError as exc:
                print("%s: child process profile skipped: %s" % (prog, exc), file=sys.stderr)
                skipped.add(pid)
                continue
            pids.append(pid)
            self.children_unmatched.append(_read_unmatched(path[:-len(".prof")] + _UNMATCHED_SUFFIX))
            if keep is not None:
                shutil.copyfile(path, os.path.join(keep, "%d.prof" % pid))
        lost = self._lost_children(set(pids) | skipped)
        shutil.rmtree(self.dir, ignore_errors=True)
        merged = total.result()
        _name_threads_by_pid(merged, pids)
        n = len(pids) - 1
        print("%s: merged %d child process%s%s%s" % (
            prog, n, "" if n == 1 else "es",
            ", %d lost" % len(lost) if lost else "",
            " (one profile per process in %s)" % keep if keep else ""), file=sys.stderr)
        for line in lost:
            print("%s: %s" % (prog, line), file=sys.stderr)
        return merged

    def _lost_children(self, merged):
        """One line per child that started profiling but whose profile is
        not among *merged* (pids): which process, and why it is missing."""
        lines = []
        for pid in sorted(_pids_named(self.dir, _STARTED_NAME)):
            if pid in merged:
                continue
            info = _read_started(os.path.join(self.dir, "%d%s" % (pid, _STARTED_SUFFIX)))
            what = info.get("what") or "a child"
            at = info.get("time")
            if isinstance(at, (int, float)) and at >= self.started:
                what += ", started %.2fs into the run" % (at - self.started)
            if alive(pid):
                why = ("was still running when the program ended (not joined): "
                       "what it ran is not in the profile")
            else:
                why = ("left no profile: what it ran is not in the profile (it was killed "
                       "before it could write one: SIGKILL, or a signal other than "
                       "SIGTERM that kills; or it exec'd another program)")
            lines.append("child process %d (%s) %s" % (pid, what, why))
        return lines


    def unmatched_everywhere(self, lines):
        """Of *lines* (the parent's unmatched_patterns()), those every child
        merged by finish() reported too."""
        return [ln for ln in lines
                if all(child is None or ln in child for child in self.children_unmatched)]


def _read_unmatched(path):
    """The set of lines a child wrote, or None if unreadable (not known:
    it does not keep a pattern from being reported)."""
    try:
        with open(path) as f:
            return set(json.load(f))
    except (OSError, ValueError):
        return None


def _child_pids(directory):
    return _pids_named(directory, _PROFILE_NAME)


def _pids_named(directory, pattern):
    out = []
    for name in os.listdir(directory):
        m = pattern.match(name)
        if m:
            out.append(int(m.group(1)))
    return out


def _read_started(path):
    """What a child wrote in its DIR/PID.started ({} if unreadable)."""
    try:
        with open(path) as f:
            info = json.load(f)
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _clear_processes_dir(path):
    """Make *path* a directory holding no PID.prof of an earlier run."""
    os.makedirs(path, exist_ok=True)
    for pid in _child_pids(path):
        os.remove(os.path.join(path, "%d.prof" % pid))


def _name_threads_by_pid(data, pids):
    # ProfileSum names each input's threads "NAME [input N]": say which process
    for t in data.threads:
        m = re.match(r"^(.*) \[input (\d+)\]$", str(t.get("name", "")))
        if m and 1 <= int(m.group(2)) <= len(pids):
            t["name"] = "%s [process %d]" % (m.group(1), pids[int(m.group(2)) - 1])


def process_profiles(outfile):
    """{pid: path} of the per-process profiles kept beside *outfile*."""
    directory = outfile + PROCESSES_SUFFIX
    if not os.path.isdir(directory):
        return {}
    return {pid: os.path.join(directory, "%d.prof" % pid) for pid in _child_pids(directory)}


# -- child side ----------------------------------------------------------------

def _command_line():
    orig = getattr(sys, "orig_argv", None)  # 3.10+
    if orig is not None:
        return orig
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0")]
    except OSError:
        return list(sys.argv)


def _is_helper():
    return any(marker in arg for arg in _command_line() for marker in _HELPER_MARKERS)


def _exec_description():
    """What a child started by exec is, for the parent's lines about it."""
    args = _command_line()[1:]
    if "--multiprocessing-fork" in args:
        return "a multiprocessing spawn child"
    text = " ".join(["python"] + args)
    return text if len(text) <= 60 else text[:57] + "..."


def start_child(cfg):
    """Called by the bootstrap in a child started by exec: profile it."""
    global _state
    _state = _State(cfg, None, child=True)
    os.register_at_fork(after_in_child=_after_fork)
    atexit.register(_write_child_profile)
    if not _is_helper():
        _state.prof = _new_profiler(cfg)
        exit_hook.install(_state.prof, _write_at_os_exit)
        _write_on_sigterm(_state)  # first: a child that says it started writes on SIGTERM
        _mark_started(_state, _exec_description())
        _state.prof.enable()


def _new_profiler(cfg):
    from .run_options import new_profile  # (deferred: nothing in a child before its program)
    return new_profile(cfg["options"], main_alias=cfg.get("main_alias"))


def _about_to_exec():
    """True in the child subprocess forks to run a preexec_fn: it execs
    the program at once (followed if it is this Python)."""
    try:
        caller = sys._getframe(2)  # the frame that forked: this runs from C, under _after_fork
    except ValueError:
        return False
    return caller.f_code.co_name == "_execute_child" and \
        caller.f_globals.get("__name__") == "subprocess"


def _after_fork():
    """A fork child: drop the inherited profiler (the parent's stats), start a fresh one."""
    if _about_to_exec():
        return
    state = _state
    _drop_inherited_watcher(state)
    old = state.prof
    if old is not None:
        try:
            old.disable()
        except Exception:
            pass
    if not state.child:
        atexit.register(_write_child_profile)
    state.child = True
    state.pid = os.getpid()
    state.written = False
    _patch_multiprocessing()
    state.prof = _new_profiler(state.cfg)
    exit_hook.install(state.prof, _write_at_os_exit)
    _write_on_sigterm(state)
    _mark_started(state, "forked from process %d" % os.getppid())
    state.prof.enable()


def _mark_started(state, what):
    """DIR/PID.started: this process is profiled, so the parent can say
    which one left no profile (a SIGKILL leaves no time to write it)."""
    path = os.path.join(state.cfg["dir"], "%d%s" % (state.pid, _STARTED_SUFFIX))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, json.dumps({"what": what, "time": time.time()}).encode())
        finally:
            os.close(fd)
    except OSError:
        pass  # the profile itself does not depend on it


# -- SIGTERM -------------------------------------------------------------------
#
# The signal module runs a Python handler at the main thread's next safe
# point.  Three things can keep that from ending the process:
#
# - a signal that comes just before the main thread starts a wait (a Pool
#   worker taking its queue's lock, which Pool.terminate() holds for good)
#   leaves it waiting: the handler never runs.  A watcher thread, told of
#   each signal through the signal module's wakeup fd (if the program set
#   none), sends SIGTERM again to the main thread, which ends the wait;
# - the safe point may be in the middle of an import: the write, whose
#   imports meet a half-made module, fails.  The handler then lets the
#   import go on and runs again when the signal is sent again;
# - the write may wait on a lock the interrupted code holds.
#
# The backstop (_backstop: the watcher, or a thread the handler starts)
# sends the signal again every 0.2 s until the handler runs the write, and
# kills the process outright (SIGKILL: its profile lost, named by the
# parent) if it has not ended SIGTERM_WRITE_LIMIT seconds after the signal.

def _write_on_sigterm(state):
    """Where SIGTERM would kill this process (SIG_DFL, or the handler
    installed here before a fork), handle it: write the profile, then die
    of it (``_on_sigterm``).  A handler the program set is left alone."""
    import _thread
    import signal
    try:
        current = signal.getsignal(signal.SIGTERM)
        if current is signal.SIG_DFL or (current is not None and current is state.sigterm_handler):
            # a C callable (Profile.toggled_by): it stops the profiler before
            # any Python code of ours runs, so no frame of it is recorded
            handler = state.prof.toggled_by(_on_sigterm)
            signal.signal(signal.SIGTERM, handler)  # ValueError off the main thread
            state.sigterm_handler = handler
            state.sigterm_started = False
            state.backstop = False
            state.main_ident = _thread.get_ident()
            _start_watcher(state)
    except (ValueError, OSError, AttributeError):
        pass


def _start_watcher(state):
    """The watcher thread, on a new pipe made the signal module's wakeup fd
    (not if the program set one)."""
    import _thread
    import collections
    import functools
    import itertools
    import select
    import signal
    _drop_inherited_watcher(state)
    try:
        r, w = os.pipe()  # non-inheritable: an exec'd program has neither end
        os.set_blocking(w, False)
    except OSError:
        return
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):
        old = None
    if old != -1:
        if old is not None:
            signal.set_wakeup_fd(old)  # the program's own: left to it
        os.close(r)
        os.close(w)
        return
    state.watch_fds = (r, w)
    # C calls only until a SIGTERM byte (or the pipe's end), then a second
    # (the handler's turn: it stops the profiler), then Python (what it
    # needs is at hand: no import then)
    term = bytes([signal.SIGTERM])
    after = functools.partial(_watch_after_sigterm, r, state, select.select,
                              functools.partial(_backstop, state, signal.pthread_kill,
                                                signal.SIGTERM, signal.SIGKILL))
    wait = itertools.chain(
        itertools.takewhile(term.__ne__, iter(functools.partial(os.read, r, 1), b"")),
        iter(functools.partial(time.sleep, 1.0), None),
        iter(after, None))
    try:
        _thread.start_new_thread(collections.deque, (wait, 0))
    except Exception:
        pass


def _drop_inherited_watcher(state):
    """A fork child: the watcher's pipe is its parent's (a signal here
    would wake the parent's watcher): take it out of the wakeup fd, close
    this process's copies."""
    import signal
    inherited, state.watch_fds = state.watch_fds, None
    if inherited is None:
        return
    try:
        old = signal.set_wakeup_fd(-1)
        if old != inherited[1]:
            signal.set_wakeup_fd(old)  # the program's since: left to it
    except (ValueError, OSError):
        pass
    for fd in inherited:
        try:
            os.close(fd)
        except OSError:
            pass


def _watch_after_sigterm(r, state, select, backstop):
    """The watcher, 1 s after a SIGTERM byte: the backstop, unless it was
    the pipe's end (the program closed it) or the handler started one."""
    try:
        if select([r], [], [], 0)[0] and os.read(r, 64) == b"":
            return
    except OSError:
        return
    if os.getpid() == state.pid and not state.backstop:
        state.backstop = True
        backstop(time.monotonic() + SIGTERM_WRITE_LIMIT - 1.0)


def _start_backstop(state, signum):
    """The backstop on a thread of its own (the handler's first run), unless
    the watcher runs it.  A bare _thread: a threading.Thread takes a lock
    the interrupted code may hold."""
    import _thread
    import signal
    if state.backstop:
        return
    state.backstop = True
    try:
        _thread.start_new_thread(_backstop, (state, signal.pthread_kill, signum, signal.SIGKILL,
                                             time.monotonic() + SIGTERM_WRITE_LIMIT))
    except Exception:
        pass


def _backstop(state, pthread_kill, signum, sigkill, deadline):
    """Until the process ends: send *signum* to the main thread again every
    0.2 s while no handler run is writing; past *deadline*, SIGKILL."""
    while os.getpid() == state.pid:
        if time.monotonic() > deadline:
            os.kill(os.getpid(), sigkill)
        if not state.sigterm_started:
            try:
                pthread_kill(state.main_ident, signum)
            except (OSError, ValueError):
                pass
        time.sleep(0.2)


def _on_sigterm(_error, _was_enabled, signum, _frame):
    """SIGTERM's handler (run by the signal module at a safe point of the
    main thread, the profiler stopped, and left stopped): write the
    profile, then die of the signal by its default action (the exit status
    the sender expects)."""
    import signal
    state = _state
    if state is not None and os.getpid() == state.pid:
        if state.sigterm_started:
            return False  # again (the backstop's, a second kill): the first run ends it
        state.sigterm_started = True
        _start_backstop(state, signum)
        if state.writing:
            state.term_pending = signum  # the write running ends the process once done
            return False
        if state.child and not state.written:
            try:  # a repeat waits in this thread until the end
                old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signum})
            except (AttributeError, ValueError, OSError):
                old_mask = None
            if not _write_child_profile(in_handler=True):
                # stopped in the middle of an import: the import goes on, the
                # backstop sends the signal again in a moment
                if old_mask is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
                state.sigterm_started = False
                return False
    _die_of(signum)
    return False


def _die_of(signum):
    """End this process by *signum*'s default action (the main thread)."""
    import signal
    try:
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    except (AttributeError, OSError, ValueError):
        pass
    os.kill(os.getpid(), signum)
    # still here: the default action is not death (not for SIGTERM)
    exit_hook.remove()
    os._exit(128 + signum)


def _mid_import():
    """True while some module is being imported (its spec says so): a
    write then may meet it half made."""
    for mod in list(sys.modules.values()):
        if issubclass(type(mod), type(sys)):  # a module (no import: this runs mid-import)
            spec = mod.__dict__.get("__spec__")
            if spec is not None and getattr(spec, "_initializing", False):
                return True
    return False


def _write_at_os_exit(_status, _error):
    """The child left by os._exit (exit_hook): write its profile now."""
    _write_child_profile()


def _patch_multiprocessing():
    """multiprocessing's fork and forkserver workers end with os._exit
    (no atexit) once Process._bootstrap returns: write the profile then."""
    mp = sys.modules.get("multiprocessing.process")
    if mp is None:
        return
    original = mp.BaseProcess._bootstrap
    if getattr(original, "_fastprof_wrapped", False):
        return

    def _bootstrap(self, *args, **kwargs):
        _watch_late()
        try:
            return original(self, *args, **kwargs)
        finally:
            _write_child_profile()

    _bootstrap._fastprof_wrapped = True
    mp.BaseProcess._bootstrap = _bootstrap


def _watch_late():
    """A forkserver's worker: the forkserver's wakeup fd, still in place at
    the fork (so no watcher then), is gone once the worker runs: start the
    watcher now, through a C callable (no frame of it is recorded)."""
    state = _state
    if (state is not None and state.watch_fds is None and state.sigterm_handler is not None
            and state.prof is not None and os.getpid() == state.pid):
        state.prof.toggled_by(_start_watcher_toggled, state)()


def _start_watcher_toggled(_error, was_enabled, state):
    import signal
    if signal.getsignal(signal.SIGTERM) is state.sigterm_handler:
        _start_watcher(state)
    if was_enabled:
        state.prof.prepare_enable()
    return was_enabled


def _write_child_profile(in_handler=False):
    """Write DIR/PID.prof once, atomically; never raise.  False only *in_handler*
    (SIGTERM's), when the write failed in the middle of an import: not
    written, to be tried again."""
    state = _state
    if state is None or not state.child or state.written or state.prof is None:
        return True
    if os.getpid() != state.pid:
        return True
    # a SIGTERM now (Pool.terminate() racing the worker's own exit) waits
    # for the end of the write: blocked in this thread, and if another
    # thread takes it, _on_sigterm leaves the end to this write (writing is
    # set first: no moment where the write is claimed but not seen running)
    state.writing = True
    state.written = True
    import signal
    try:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    except (AttributeError, OSError, ValueError):
        blocked = None
    try:
        done = _write(state, in_handler)
    finally:
        state.writing = False
        if blocked is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    if not done:
        state.written = False
        return False
    pending, state.term_pending = state.term_pending, None
    if pending is not None and not in_handler:
        import _thread
        if _thread.get_ident() == state.main_ident:
            _die_of(pending)
    return True


def _write(state, in_handler=False):
    """The write itself; False if it failed *in_handler* mid-import."""
    prof = state.prof
    try:
        prof.disable()
    except Exception:
        pass
    try:
        from ..data.profile_file import write_profile  # (deferred: nothing in a child before its program)
        from .run_options import unmatched_patterns  # (deferred: nothing in a child before its program)
        prof.take_thread_names()
        data = prof.profile_data()
        # first what this process's patterns missed (the parent reports a
        # pattern only if every process missed it), then the profile: the
        # parent takes a child whose PID.prof is there
        from ..data.atomic_file import write_atomically  # (deferred: nothing in a child before its program)
        missed = json.dumps(unmatched_patterns(prof)).encode()
        write_atomically(os.path.join(state.cfg["dir"], "%d%s" % (state.pid, _UNMATCHED_SUFFIX)),
                         lambda f: f.write(missed))
        write_profile(os.path.join(state.cfg["dir"], "%d.prof" % state.pid), data)
    except Exception as exc:
        if in_handler and _mid_import():
            return False
        sys.stderr.write("fastprof: the profile of child process %d is lost: %s: %s\n"
                         % (state.pid, type(exc).__name__, exc))
    return True
