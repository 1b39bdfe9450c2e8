"""Names of profiled threads: written down as threads start, matched to
the C thread records (their groups for the views: thread_groups.py).

The C profiler knows a thread by its record id, ``ident`` and native id;
the names come from ``threading``'s Thread objects, which may be gone by
the time the stats are read (a server's short-lived request threads).
``name_records`` is the matching, kept here so ``Profile`` stays small.
"""

import sys

from ..data.thread_groups import folded_name, thread_pattern

# Imported by Profile.enable(), so before the program runs: nothing here may
# import what the program has not (threading, weakref, typing register ABCs
# or cost import time the program would see); threading is taken from
# sys.modules, where only the program puts it.


def _threading():
    """The threading module if the program imported it, else None."""
    return sys.modules.get("threading")

# -- naming the records ------------------------------------------------------


def live_thread_names():
    """(ident, native_id) -> name of the threads alive now."""
    out = {}
    threading = _threading()
    if threading is None:
        return out
    for t in threading.enumerate():
        if t.ident is not None:
            out[(t.ident, getattr(t, "native_id", None))] = t.name
    return out


def known_threads():
    """(ident, native_id, name, alive, thread) of the Thread objects still around.

    "alive" is membership in ``threading.enumerate()``, never
    ``Thread.is_alive()``: before 3.13 that call may release the thread's
    lock, and racing a ``join()`` in another thread it breaks the program's
    threading ("release unlocked lock", an AssertionError in ``_stop``).
    """
    threading = _threading()
    if threading is None:
        # no Thread object exists: only the main thread can have run Python
        import _thread
        main = getattr(_thread, "_get_main_thread_ident", _thread.get_ident)()
        return [(main, None, "MainThread", True, None)]
    live = set(threading.enumerate())
    threads = set(live)
    for _attempt in range(3):
        try:  # another thread may add to the WeakSet while we copy it
            threads.update(list(getattr(threading, "_dangling", ())))
            break
        except RuntimeError:
            continue
    out = []
    for t in threads:
        if t.ident is not None:
            out.append((t.ident, getattr(t, "native_id", None), t.name, t in live, t))
    return out


def ended_threads():
    """The Thread objects that have ended by now (weakly held)."""
    if _threading() is None:
        return ()  # none was ever made
    from _weakrefset import WeakSet  # threading imported it
    return WeakSet(k[4] for k in known_threads() if not k[3])


def name_records(records, names, names_at_enable, ended_before_start):
    """Name the profiled thread *records* ``(id, ident, native_id)`` into
    *names* (record id -> name), from the Thread objects ``threading`` knows.

    Besides the live threads, ``threading._dangling`` still holds every
    Thread object something references (a thread that was started and
    joined while profiling), and those keep their ident, native id and
    name after they end.  Idents get reused, so: a thread that had
    already ended when profiling started (*ended_before_start*) is no
    candidate; only the newest record of an ident may be a live thread;
    and a record that still matches ended threads of different names stays
    unnamed rather than named wrong.  Names are kept by record id, so they
    outlive the threads.
    """
    if all(r[0] in names for r in records):
        return
    before = ended_before_start or ()
    known = [k for k in known_threads() if k[4] is None or k[4] not in before]
    newest = {}
    for tid, ident, _native in records:
        newest[ident] = max(tid, newest.get(ident, tid))
    for tid, ident, native in records:
        if tid in names:
            continue
        # a native id of 0 or None means "unknown" (3.9/3.10 may not know it)
        cands = [(alive, name) for i, n, name, alive, _t in known
                 if i == ident and (not native or not n or n == native)]
        live = [name for alive, name in cands if alive]
        ended = {name for alive, name in cands if not alive}
        if not cands:
            ended = {name for (i, n), name in names_at_enable.items()
                     if i == ident and (not native or not n or n == native)}
        if live and newest[ident] == tid:
            names[tid] = live[0]
        elif len(ended) == 1:
            names[tid] = ended.pop()


def record_name(names, tid, ident):
    """The name of record *tid* (thread *ident*): the one *names* found, else
    ``"Thread-<ident> (ended)"`` (a thread that ended before it could be seen)."""
    name = names.get(tid)
    return name if name is not None else "Thread-%d (ended)" % ident


# -- groups: where the records of ended threads are folded -------------------
#
# The C profiler folds the records of ended threads, but the newest few,
# into one record per group (csrc/fpy_thread_fold.c); the group of a thread
# is the number its name's pattern (thread_groups.thread_pattern) gets here
# when the thread starts.

# Names that differ in more than numbers (a request id in hex) would make a
# group each: past this many, further ones share group 0 with the threads
# that had no name.
MAX_GROUPS = 256

OTHER_THREADS = "other threads"


class NameGroups:
    """The group numbers of thread name patterns (0: no name, or one
    pattern too many)."""

    def __init__(self):
        self.numbers = {}
        self.patterns = [OTHER_THREADS]

    def number(self, name):
        """The group of a thread named *name* (None: no name)."""
        if name is None:
            return 0
        pattern = thread_pattern(name)
        n = self.numbers.get(pattern)
        if n is None:
            if len(self.patterns) > MAX_GROUPS:
                return 0
            n = self.numbers[pattern] = len(self.patterns)
            self.patterns.append(pattern)
        return n

    def pattern(self, number):
        """The pattern of group *number*."""
        return self.patterns[number] if 0 <= number < len(self.patterns) else OTHER_THREADS

    def record(self, number, threads):
        """``(name, pattern)`` of the record that *threads* ended threads of
        group *number* were folded into."""
        pattern = self.pattern(number)
        return folded_name(pattern, threads), pattern


# -- names written down when threads start -----------------------------------
#
# A server's request threads end long before the stats are read, and their
# Thread objects are gone with them.  So the C profiler (threads=True) calls
# Profile._thread_started on each new thread's first event, from the thread
# itself, and the name is taken then from the Thread object at the bottom
# of its stack (``Thread._bootstrap``'s ``self``).  That call runs inside
# an event callback, where the interpreter reports no events: it is never
# recorded, and it works whenever the program imported threading.


def starting_thread_name():
    """The name of the threading.Thread running this code, found as the
    ``self`` of ``Thread._bootstrap`` at the bottom of the stack; None for
    a thread threading did not start."""
    threading = _threading()
    if threading is None:
        return None
    bootstrap = getattr(getattr(threading.Thread, "_bootstrap", None), "__code__", None)
    frame = sys._getframe(1)
    while frame.f_back is not None:
        frame = frame.f_back
    if frame.f_code is not bootstrap:
        return None
    thread = frame.f_locals.get("self")
    return thread.name if isinstance(thread, threading.Thread) else None
