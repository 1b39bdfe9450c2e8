"""What ``fastprof attach`` runs inside the target process (3.14+).

Two parts, both here so everything the target runs is in one place:

- ``BOOTSTRAP``: the text of the script handed to ``sys.remote_exec``.  The
  interpreter runs it on the target's main thread when that thread next
  checks for pending work, in a fresh namespace.  It claims the request
  (or sees it withdrawn and removes its directory), makes fastprof
  importable if it must, and calls ``start()``.
- ``start()`` and ``Session``: enable fastprof for all threads and start a
  helper thread that stops it, writes the profile to the private directory
  and cleans up.  ``start()`` returns at once: the main thread is not held.

The private directory (made by the attaching side with ``tempfile.mkdtemp``,
mode 0700) is the only channel; its files, each written atomically:

    inject.py  the bootstrap script          (attacher)
    claim      created O_EXCL by whichever side comes first: the bootstrap
               (the request is taken) or the attacher (the request is
               withdrawn: the bootstrap then does nothing)
    started    profiling is on                (helper)
    stop       stop now (Ctrl-C)              (attacher)
    profile.prof, done   the profile, then its summary (helper)
    error / busy         one line to report   (bootstrap, start, helper)
"""

import os
import sys

from . import package_parent
from .process_alive import alive as _alive

# The bootstrap's code; %(...)r fields are filled by the attaching side.
# Everything is inside a function, so the namespace the interpreter runs
# it in keeps nothing.
BOOTSTRAP = '''\
def _fastprof_attach(directory, fastprof_parent, abi, options):
    import os, sys

    def note(name, text):
        tmp = os.path.join(directory, name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(directory, name))

    try:
        fd = os.open(os.path.join(directory, "claim"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        # withdrawn by the attaching command: remove the directory, do nothing
        for name in os.listdir(directory):
            os.unlink(os.path.join(directory, name))
        os.rmdir(directory)
        return
    except OSError:
        return  # the directory is gone: nobody is waiting
    os.close(fd)
    added = None
    modules_before = set(sys.modules)
    try:
        import importlib.util
        if importlib.util.find_spec("fastprof") is None:
            import importlib.machinery
            here = [list(sys.version_info[:2]), sys.implementation.cache_tag,
                    importlib.machinery.EXTENSION_SUFFIXES[0]]
            if here != abi:
                note("error", "fastprof is not installed in process %%d's environment and its "
                     "Python (%%s) differs from the attaching one (%%s): install fastprof there "
                     "(pip install fastprof)" %% (os.getpid(), here, abi))
                return
            sys.path.append(fastprof_parent)
            added = fastprof_parent
        from fastprof.modes import %(agent)s as agent
    except BaseException as exc:
        note("error", "cannot import fastprof in process %%d: %%s: %%s" %% (
            os.getpid(), type(exc).__name__, exc))
        if added is not None:
            sys.path.remove(added)
            sys.path_importer_cache.pop(added, None)
        for name in set(sys.modules) - modules_before:
            if name == "fastprof" or name.startswith("fastprof."):
                del sys.modules[name]
        return
    agent.start(directory, options, added, modules_before)


_fastprof_attach(%(directory)r, %(fastprof_parent)r, %(abi)r, %(options)r)
'''


def abi_tag():
    """What must match for this fastprof's C module to load in another
    process: the Python version, its bytecode tag and extension suffix
    (which tells free-threaded and debug builds apart)."""
    import importlib.machinery
    return [list(sys.version_info[:2]), sys.implementation.cache_tag,
            importlib.machinery.EXTENSION_SUFFIXES[0]]


def bootstrap_text(directory, options, agent="attach_agent"):
    """The bootstrap script for *directory* with profiler *options*; it
    calls start() of *agent*, a module of fastprof.modes (this one, or
    top_agent for ``fastprof top``)."""
    return BOOTSTRAP % {"directory": directory, "agent": agent,
                        "fastprof_parent": package_parent(),
                        "abi": abi_tag(), "options": options}


def note(directory, name, text):
    """Write file *name* in *directory* atomically, owner-only."""
    tmp = os.path.join(directory, name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(directory, name))


def profiler_in_use():
    """The name of the profiling tool already running here, or None."""
    mon = getattr(sys, "monitoring", None)
    if mon is not None:
        name = mon.get_tool(mon.PROFILER_ID)
        if name is not None:
            return name
        for tool in range(mon.PROFILER_ID + 1, 6):  # fastprof falls back to 3 and 4
            if mon.get_tool(tool) == "fastprof":
                return "fastprof"
    hook = sys.getprofile()
    if hook is not None:
        return type(hook).__name__
    return None


# the modules the helper needs later, imported before profiling starts (and
# before the sys.path entry the bootstrap may have added is removed)
_NEEDED = ("fastprof.recording.profiler", "fastprof.data.profile_file", "fastprof.data.names",
           "fastprof.recording.thread_names", "fastprof.tools.merge", "fastprof.data.model",
           "fastprof.modes.run_options") + (
    ("fastprof.recording.func_patterns",) if sys.version_info < (3, 11) else ())  # (qualnames_of_codes)


def start(directory, options, added_path=None, modules_before=(), session_class=None,
          needed=()):
    """Start profiling this process for the attaching command; return at once.
    *session_class*: a Session subclass (``fastprof top``'s), *needed*: the
    modules it imports later, imported here with _NEEDED."""
    try:
        busy = profiler_in_use()
        if busy is not None:
            note(directory, "busy", busy)
            _forget(added_path, modules_before)
            return
        import importlib
        for name in _NEEDED + tuple(needed):
            importlib.import_module(name)
        session = (session_class or Session)(directory, options, added_path, modules_before)
    except BaseException as exc:
        note(directory, "error", "cannot start fastprof in process %d: %s: %s"
             % (os.getpid(), type(exc).__name__, exc))
        _forget(added_path, modules_before)
        return
    finally:
        if added_path is not None and added_path in sys.path:
            # other threads' imports must not find the attacher's packages
            sys.path.remove(added_path)
            sys.path_importer_cache.pop(added_path, None)
    session.begin()


def _forget(added_path, modules_before):
    """Unload the fastprof modules this attach imported, so the target is
    left as it was (if it could not import fastprof before, it cannot after)."""
    for name in set(sys.modules) - set(modules_before):
        if name == "fastprof" or name.startswith("fastprof."):
            del sys.modules[name]


class Session:
    """One attach: the profiler, the helper thread, the way out."""

    POLL = 0.05  # seconds between looks at the stop marker

    def __init__(self, directory, options, added_path, modules_before):
        import _thread

        from .run_options import new_profile  # (deferred: imported by start(), see _NEEDED)
        self.directory = directory
        self.options = dict(options)
        self.added_path = added_path
        self.modules_before = modules_before
        self.attacher = self.options.pop("attacher_pid")
        self.duration = self.options.pop("duration")
        # --lines/--only: the program's script answers to its file's stem too
        # (as any Profile made in it does)
        self.prof = new_profile(self.options)
        self.helper_ident = None
        self.failed = False
        self.finished = False
        self.lock = _thread.allocate_lock()
        self.started_at = None
        self.pid = os.getpid()

    def begin(self):
        """On the main thread: start the helper, register the exit hooks,
        then enable, last: nothing after it here is recorded."""
        import _thread
        import atexit
        # at exit (the target ends while profiled): atexit calls the C
        # disable() itself (nothing recorded), then writes the profile
        atexit.register(self.at_exit)
        atexit.register(self.prof.disable)
        try:
            _thread.start_new_thread(self.helper, ())
            self.prof.enable()
        except BaseException as exc:
            self.failed = True
            self.finish("error: %s: %s" % (type(exc).__name__, exc))

    def helper(self):
        """The helper thread: wait for the duration or the stop marker, then
        finish.  Its own events are left out of the profile."""
        import _thread
        self.helper_ident = _thread.get_ident()
        try:
            self.watch()
        except BaseException as exc:  # never a traceback on the target's stderr
            self.finish("error: %s: %s" % (type(exc).__name__, exc))

    def watch(self):
        import time
        waited = 0.0
        while not (self.prof.enabled or self.failed or self.finished):
            time.sleep(0.001)
            waited += 0.001
            if waited > 30:
                return self.finish("error: profiling did not start")
        if self.failed or self.finished:
            return
        self.started_at = time.monotonic()
        note(self.directory, "started", repr({"pid": os.getpid()}))
        stop = os.path.join(self.directory, "stop")
        while not self.finished:
            if os.path.exists(stop):
                return self.finish("stopped")
            if self.duration is not None and time.monotonic() - self.started_at >= self.duration:
                return self.finish("duration")
            if not _alive(self.attacher):
                return self.finish("attacher gone")
            self.tick()
            time.sleep(self.POLL)

    def tick(self):
        """Called by the helper between its looks at the stop marker, while
        profiling runs (``fastprof top``'s session writes its snapshots here)."""

    def at_exit(self):
        self.finish("exit")

    def finish(self, reason):
        """Stop, write the profile and the done marker, leave nothing behind.
        Runs once, from the helper or at exit, whichever comes first."""
        with self.lock:
            if self.finished:
                return
            self.finished = True
            import atexit
            import time
            try:
                self.prof.disable()
            except Exception as exc:
                reason = "error: %s: %s" % (type(exc).__name__, exc)
            atexit.unregister(self.prof.disable)
            atexit.unregister(self.at_exit)
            if os.getpid() != self.pid:
                return  # a fork child exiting: the profile is the parent's to write
            duration = (time.monotonic() - self.started_at) if self.started_at else 0.0
            try:
                if reason.startswith("error"):
                    note(self.directory, "error", "fastprof in process %d: %s"
                         % (os.getpid(), reason[len("error: "):]))
                elif reason == "attacher gone":
                    _remove_dir(self.directory)  # nobody will collect it
                else:
                    self.write(duration, reason)
            except Exception as exc:
                try:
                    note(self.directory, "error", "fastprof in process %d could not write "
                         "the profile: %s: %s" % (os.getpid(), type(exc).__name__, exc))
                except OSError:
                    pass
            finally:
                self.prof = None
                _forget(self.added_path, self.modules_before)

    def write(self, duration, reason):
        from ..data.profile_file import write_profile  # (deferred: imported by start(), see _NEEDED)
        data = self.profile_data()
        tmp = os.path.join(self.directory, "profile.prof.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            write_profile(f, data)
        os.replace(tmp, os.path.join(self.directory, "profile.prof"))
        from .run_options import unmatched_patterns  # (deferred: imported by start(), see _NEEDED)
        note(self.directory, "done", repr({
            "duration": duration, "reason": reason,
            "threads": len(data.threads) if self.options.get("threads") else 1,
            "unmatched": unmatched_patterns(self.prof)}))

    def profile_data(self):
        """Profile.profile_data() without the helper thread's record."""
        from ..data.model import merge_stats  # (deferred: imported by start(), see _NEEDED)
        from ..data.profile_file import ProfileData  # (deferred: imported by start(), see _NEEDED)
        from ..recording.profiler import qualnames_of_codes  # (deferred: imported by start(), see _NEEDED)
        from ..tools.merge import merge_callpaths  # (deferred: imported by start(), see _NEEDED)
        prof = self.prof
        # the records listed stay as they are until the last one is read,
        # though threads go on ending (top's write while profiling)
        with prof.threads_held():
            kept = [t for t in prof.thread_records() if t["ident"] != self.helper_ident]
            codes = [e.code for t in kept for e in prof.getstats(t["id"])]
            data = ProfileData(merge_stats([t["stats"] for t in kept]),
                               clock=prof.clock_info().get("clock"),
                               qualnames=qualnames_of_codes(codes))
            if self.options.get("threads"):
                data.threads = kept
            if self.options.get("callpaths"):
                data.callpaths = merge_callpaths([prof.callpaths_file(t["id"]) for t in kept])
            prof.add_recording_details(data)
            if data.memory is not None:
                data.memory = prof.memory_stats(threads={t["id"] for t in kept})
        return data


def _remove_dir(directory):
    try:
        for name in os.listdir(directory):
            os.unlink(os.path.join(directory, name))
        os.rmdir(directory)
    except OSError:
        pass
