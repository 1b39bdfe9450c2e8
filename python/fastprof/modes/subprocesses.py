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
``os.replace``) when it ends: at exit (atexit), or, for multiprocessing
workers, which end with ``os._exit`` after their ``Process._bootstrap``,
when that returns; a child that calls ``os._exit`` itself writes it then
(``exit_hook``).  A child killed before it writes (SIGKILL, SIGTERM from
``Pool.terminate()``, so leaving ``with Pool()``) loses its own profile only:
writing from a signal handler at an arbitrary point of a forked worker is
not safe (it hung a CI run once), so a killed child dies as it would
without fastprof.  At the
parent's end :meth:`Follower.finish` sums the files into the parent's
profile (merge.ProfileSum, one file at a time) and removes DIR.

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

from ..recording import exit_hook
from . import package_parent

ENV = "FASTPROF_SUBPROCESSES"

# beside DIR/PID.prof: the --lines/--only lines that child would report
_UNMATCHED_SUFFIX = ".unmatched"

# the per-process profiles are kept beside the output, in OUTPUT + this
PROCESSES_SUFFIX = ".processes"

_PROFILE_NAME = re.compile(r"^(\d+)\.prof$")

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


_state = None


# -- parent side ---------------------------------------------------------------

class Follower:
    """The parent's side: set up before the program runs, finish() after."""

    def __init__(self, prof, options, main_alias=None):
        """*options*: cmdline.profile_options(), which the children's
        profilers are made with too; *main_alias*: the script's stem."""
        global _state
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
        for pid in sorted(_child_pids(self.dir)):
            path = os.path.join(self.dir, "%d.prof" % pid)
            try:
                total.add(load_profile(path))
            except ProfileFileError as exc:
                print("%s: child process profile skipped: %s" % (prog, exc), file=sys.stderr)
                continue
            pids.append(pid)
            self.children_unmatched.append(_read_unmatched(path[:-len(".prof")] + _UNMATCHED_SUFFIX))
            if keep is not None:
                shutil.copyfile(path, os.path.join(keep, "%d.prof" % pid))
        shutil.rmtree(self.dir, ignore_errors=True)
        merged = total.result()
        _name_threads_by_pid(merged, pids)
        n = len(pids) - 1
        print("%s: merged %d child process%s%s" % (
            prog, n, "" if n == 1 else "es",
            " (one profile per process in %s)" % keep if keep else ""), file=sys.stderr)
        return merged


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
    out = []
    for name in os.listdir(directory):
        m = _PROFILE_NAME.match(name)
        if m:
            out.append(int(m.group(1)))
    return out


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


def start_child(cfg):
    """Called by the bootstrap in a child started by exec: profile it."""
    global _state
    _state = _State(cfg, None, child=True)
    os.register_at_fork(after_in_child=_after_fork)
    atexit.register(_write_child_profile)
    if not _is_helper():
        _state.prof = _new_profiler(cfg)
        exit_hook.install(_state.prof, _write_at_os_exit)
        _state.prof.enable()


def _new_profiler(cfg):
    from .run_options import new_profile  # (deferred: nothing in a child before its program)
    return new_profile(cfg["options"], main_alias=cfg.get("main_alias"))


def _after_fork():
    """A fork child: drop the inherited profiler (the parent's stats), start a fresh one."""
    state = _state
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
    state.prof.enable()


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
        try:
            return original(self, *args, **kwargs)
        finally:
            _write_child_profile()

    _bootstrap._fastprof_wrapped = True
    mp.BaseProcess._bootstrap = _bootstrap


def _write_child_profile():
    """Write DIR/PID.prof once, atomically; never raise."""
    state = _state
    if state is None or not state.child or state.written or state.prof is None:
        return
    if os.getpid() != state.pid:
        return
    state.written = True
    # a SIGTERM now (Pool.terminate() racing the worker's own exit) would
    # kill the process in the middle of the write: it waits for the end
    import signal
    try:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    except (AttributeError, OSError, ValueError):
        blocked = None
    try:
        _write(state)
    finally:
        if blocked is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _write(state):
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
        sys.stderr.write("fastprof: the profile of child process %d is lost: %s: %s\n"
                         % (state.pid, type(exc).__name__, exc))
