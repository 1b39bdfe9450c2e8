"""``os._exit`` while a run mode records: the profile is still written.

A program that leaves through ``os._exit`` (mypy does on every run,
multiprocessing's forked workers do) skips atexit and everything after its
``exec``: without this its profile would be lost.  While installed,
``os._exit(status)`` is a C callable (the profiler's ``_toggle_with``, so no
frame of fastprof's is recorded) that stops the profiler, runs the run
mode's *on_exit* (write or print the profile), then the real ``os._exit``
with the program's status.  If *on_exit* fails, one line on stderr says
why there is no profile.  Only the process that installed the hook runs
it: an inherited hook in a fork child just exits (a run mode that follows
children installs its own there).

    exit_hook.install(prof, on_exit)   # on_exit(status, error): error = the profiler's failure or None
    ...                                # the program runs
    exit_hook.remove()                 # before the run mode's normal end
"""

import os
import sys

_real_exit = None  # the os._exit replaced, while installed


def install(prof, on_exit) -> None:
    """os._exit(status) runs ``prof``'s stop, then ``on_exit(status, error)``,
    then the real os._exit, in this process (see the module doc)."""
    global _real_exit
    if _real_exit is None:
        _real_exit = os._exit
    os._exit = prof.toggled_by(_leave, on_exit, os.getpid())


def remove() -> None:
    """The real os._exit back (no-op when not installed)."""
    global _real_exit
    if _real_exit is not None:
        os._exit = _real_exit
        _real_exit = None


def installed() -> bool:
    return _real_exit is not None


def _leave(error, _was_enabled, on_exit, pid, status=0):
    real = _real_exit if _real_exit is not None else os._exit
    remove()  # an os._exit from on_exit (or a second thread) leaves at once
    if os.getpid() == pid:
        try:
            on_exit(status, error)
        except BaseException as exc:
            try:
                sys.stderr.write("fastprof: no profile written: the program left by os._exit(%r) "
                                 "and writing it then failed: %s: %s\n" % (status, type(exc).__name__, exc))
            except BaseException:
                pass
        # what on_exit printed (os._exit flushes nothing); not in an
        # inherited hook: a fork child would print its parent's buffers again
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except BaseException:
                pass
    real(status)
