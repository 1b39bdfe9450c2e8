"""Names of profiled threads, and groups of them for the views.

The C profiler knows a thread by its record id, ``ident`` and native id;
the names come from ``threading``'s Thread objects, which may be gone by
the time the stats are read (a server's short-lived request threads).
``name_records`` is the matching, kept here so ``Profile`` stays small.

Programs start hundreds of threads that differ only in a number
(``Thread-12 (process_request_thread)``): ``thread_pattern`` names the
group (``Thread-N (process_request_thread)``), and the views and
``--per-thread`` show one line or table per group.
"""

import sys
from _weakref import ref as _ref

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


# -- names recorded when threads start --------------------------------------
#
# A server's request threads end long before the stats are read, and their
# Thread objects are gone with them.  So, while a profiler that follows all
# threads is on, each new thread's (ident, native id, name) is written down
# as it starts, by code the profiler never records (it runs as a profile or
# monitoring callback, where the interpreter reports no events):
#
# - 3.12+: a sys.monitoring tool of our own with one local event, the return
#   of ``Thread._set_native_id`` (``_set_ident`` if the platform has no
#   native ids), which every new thread runs first thing in
#   ``_bootstrap_inner``: the Thread is the caller frame's ``self``.
# - 3.9-3.11: the C profiler already hooks new threads through
#   ``threading.setprofile``; that hook is wrapped by one that writes the
#   name down first (the thread is in ``threading._active`` by then).
#
# Nothing of the program changes: no Thread method is replaced, and a
# program's own threading.setprofile hook (which the C profiler replaces
# while profiling anyway) is left as it was found.

_MONITORING = getattr(sys, "monitoring", None)
_TOOL_NAME = "fastprof thread names"
_logs = []                  # weak references to the armed StartLogs
_tool = None                # our sys.monitoring tool id while installed
# (ident, native_id, name) of each thread started while some log is armed;
# each log remembers where its part begins.  The callbacks only append: on
# 3.12+ their time is charged to Thread._set_native_id (a few µs a thread).
_started = []


def _start_code():
    threading = _threading()
    method = getattr(threading.Thread, "_set_native_id", None) or threading.Thread._set_ident
    return method.__code__


def _write_down(thread):
    _started.append((thread.ident, getattr(thread, "native_id", None), thread.name))


def _on_start_returned(code, offset, retval):
    thread = sys._getframe(1).f_locals.get("self")
    threading = _threading()
    if threading is not None and isinstance(thread, threading.Thread):
        _write_down(thread)


def _install_monitoring():
    global _tool
    if _tool is not None:
        return True
    mon = _MONITORING
    free = [t for t in (4, 3, 2) if mon.get_tool(t) is None]
    if len(free) < 2:
        return False  # leave the profiler itself an id (it takes one of 2-4)
    for tool in (4, 3):  # the ids sys.monitoring leaves free (0-2, 5 are named)
        if mon.get_tool(tool) is None:
            try:
                mon.use_tool_id(tool, _TOOL_NAME)
            except ValueError:
                continue
            mon.register_callback(tool, mon.events.PY_RETURN, _on_start_returned)
            mon.set_local_events(tool, _start_code(), mon.events.PY_RETURN)
            _tool = tool
            return True
    return False  # every free tool id is taken: names come from threading only


def _uninstall_monitoring():
    global _tool
    if _tool is None:
        return
    mon = _MONITORING
    if mon.get_tool(_tool) == _TOOL_NAME:
        mon.set_local_events(_tool, _start_code(), 0)
        mon.register_callback(_tool, mon.events.PY_RETURN, None)
        mon.free_tool_id(_tool)
    _tool = None


class _StarterHook:
    """3.9-3.11: ``threading._profile_hook`` while profiling: writes the new
    thread's name down, then hands over to the C profiler's hook."""

    def __init__(self, log):
        self.log = _ref(log)
        self.starter = None  # the C profiler's hook, set by StartLog.started

    def __call__(self, frame, event, arg):
        log = self.log()
        if log is None or not log.active() or self.starter is None:
            sys.setprofile(None)  # profiling ended: leave this thread alone
            threading = _threading()
            if threading._profile_hook is self:
                threading._profile_hook = None
            return None
        _write_down(_threading().current_thread())
        return self.starter(frame, event, arg)


class StartLog:
    """The names of the threads started while one profiler is on, in start
    order: ``starts`` holds ``(ident, native_id, name)``."""

    def __init__(self, profiler):
        self.profiler = _ref(profiler)
        self.starts = []
        self._first = 0  # this log's part of _started
        self._hook = None

    def clear(self):
        """Forget the names written down so far."""
        del self.starts[:]
        self._first = len(_started)

    def _armed(self):
        return any(r() is self for r in _logs)

    def active(self):
        prof = self.profiler()
        return prof is not None and bool(prof.enabled)

    def arm(self):
        """Before the C enable(): start writing names down.  Returns the
        hook ``started`` must put in place (3.9-3.11), or None."""
        if _threading() is None:
            return None  # no thread can start before the program imports threading
        if not self._armed():
            self._first = len(_started)
            _logs.append(_ref(self))
        if _MONITORING is not None:
            _install_monitoring()
            return None
        self._hook = _StarterHook(self)
        return self._hook

    def disarm(self):
        """After disable(): stop (once no profiler needs it)."""
        if self.active() or not self._armed():
            return
        self.starts.extend(_started[self._first:])
        _logs[:] = [r for r in _logs if r() is not None and r() is not self]
        if not _logs:
            del _started[:]
        if _MONITORING is not None and not _logs:
            _uninstall_monitoring()
        elif self._hook is not None and _threading()._profile_hook is self._hook:
            _threading()._profile_hook = None
        self._hook = None


def name_from_starts(records, names, starts):
    """Name the *records* ``(id, ident, native_id)`` that threads started
    while profiling own, from *starts* (``StartLog.starts``).  The records of
    one (ident, native id) are in creation order, as the starts are: the
    last of them belong to the starts (earlier ones are older threads)."""
    by_pair = {}
    for ident, native, name in starts:
        by_pair.setdefault((ident, native or 0), []).append(name)
    mine = {}
    for tid, ident, native in sorted(records):
        mine.setdefault((ident, native or 0), []).append(tid)
    for pair, tids in mine.items():
        started = by_pair.get(pair)
        if not started:
            continue
        for tid, name in zip(tids[-len(started):], started[-len(tids):]):
            names.setdefault(tid, name)


# -- groups for the views ----------------------------------------------------

def thread_pattern(name):
    """The name with every number replaced by ``N``: ``Thread-12
    (process_request_thread)`` -> ``Thread-N (process_request_thread)``,
    ``ThreadPoolExecutor-0_3`` -> ``ThreadPoolExecutor-N_N``."""
    import re  # for the views only
    return re.sub(r"\d+", "N", name)


def _tottime(thread):
    return sum(v[2] for v in thread.get("stats", {}).values())


def group_threads(threads):
    """``(pattern, threads)`` per name pattern, busiest group first (summed
    tottime, then size); threads keep their order inside a group."""
    groups = {}
    for t in threads:
        groups.setdefault(thread_pattern(str(t.get("name"))), []).append(t)
    busy = {p: sum(_tottime(t) for t in ts) for p, ts in groups.items()}
    return sorted(groups.items(), key=lambda kv: (-busy[kv[0]], -len(kv[1]), kv[0]))


def merged_thread_stats(threads):
    """The pstats dict of several threads together (summed as merge does)."""
    from .merge import merge_stats
    return merge_stats([t["stats"] for t in threads])


def per_thread_tables(thread_stats):
    """``(title, id, stats)`` per table ``--per-thread`` prints, from
    ``Profile.thread_stats()``: one per thread, except that threads whose
    names differ only in numbers share one (``id`` None, stats summed), in
    the order their first thread appears."""
    groups = {}
    for tid, ident, name, stats in thread_stats:
        groups.setdefault(thread_pattern(str(name)), []).append((tid, ident, name, stats))
    out = []
    for pattern, members in groups.items():
        if len(members) == 1:
            tid, ident, name, stats = members[0]
            out.append(("thread %s (id %d, ident %d)" % (name, tid, ident), tid, stats))
            continue
        from .merge import merge_stats
        ids = [m[0] for m in members]
        out.append(("%d threads %s (ids %s), stats summed" % (
            len(members), pattern, _id_ranges(ids)), None, merge_stats([m[3] for m in members])))
    return out


def _id_ranges(ids):
    """``1-3, 7`` for [1, 2, 3, 7]."""
    ids = sorted(ids)
    parts = []
    start = prev = ids[0]
    for i in ids[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else "%d-%d" % (start, prev))
        if i is not None:
            start = prev = i
    return ", ".join(parts)
