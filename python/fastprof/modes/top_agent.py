"""What ``fastprof top`` runs inside the target process (3.14+).

attach_agent's session (the same bootstrap, private directory, start, stop,
exit and attacher-gone handling), with one more job for its helper thread:
every interval it writes a snapshot of the cumulative stats of each thread,
so the viewer (modes.top) gets a period's exact numbers as the difference
of two snapshots.  Files it adds to attach_agent's (all owner-only, in the
same private directory):

    functions        one JSON line per function, appended as functions are
                     first seen: [file, line, name, qualified name or null];
                     line k is function number k of the snapshots
    snapshot         replaced atomically each interval: a dict in marshal's
                     format (the viewer runs the target's Python version:
                     sys.remote_exec needs it; and marshal writes and reads
                     rows ten times faster than JSON):
                     "seq", "time" (the target's monotonic clock), "elapsed"
                     (since attach), "threads": [[id, name, running]] (not
                     the helper; running: False once the thread ended),
                     "all": the rows of all threads (the helper's included:
                     one getstats() is much cheaper than one per thread),
                     "helper": the helper's rows (the viewer subtracts them),
                     "thread": [id, rows] of the thread the viewer asked for
                     (the ``thread`` file), or None; "cost": the helper's
                     CPU seconds for this snapshot, the file written aside
                     (what it took from the target); "compensate", "removed":
                     whether the profiler takes its own cost out of the
                     times, and the seconds taken out so far (all threads);
                     "extra_events": the events charged so far that are
                     no call's start or end; with --memory, "memory": the
                     bytes each function allocated itself so far, its
                     threads' (not the helper's): [[file, line, name,
                     bytes]], and "thread_memory": [id, rows] of the
                     thread the viewer asked for (or None).
                     A row per function:
                     [function number, calls, recursive calls, tottime, cumtime],
                     cumulative since attach
    thread           the id of the thread the viewer shows (written by it)
    write            the viewer asks for the profile so far; its content N
    profile-N.prof   that profile (or profile-N.error: one line)

The functions file is appended before the snapshot that names a new
function is replaced, so any function number a snapshot holds is already
there.  On stop only the done marker is written (no profile): the viewer
already has what it shows, and the process is spared writing one.

Each snapshot is one ``getstats()`` of all threads (one more of the shown
thread, and the helper's own small one) and a loop over its entries
without calls the profiler records; its cost is in docs/top.md.
"""

import os
import sys

from . import attach_agent

# the modules the session imports later (imported at start: see attach_agent._NEEDED)
_NEEDED = ("json", "marshal")


def start(directory, options, added_path=None, modules_before=()):
    """The bootstrap's entry: attach_agent.start() with the top session."""
    attach_agent.start(directory, options, added_path, modules_before,
                       session_class=TopSession, needed=_NEEDED)


class TopSession(attach_agent.Session):
    """attach_agent's session, writing a snapshot every interval."""

    def __init__(self, directory, options, added_path, modules_before):
        options = dict(options)
        self.interval = float(options.pop("interval", 1.0))
        super().__init__(directory, options, added_path, modules_before)
        self.index = {}      # code object (str for C functions) -> function number
        self.seq = 0
        self.next_at = None  # monotonic time of the next snapshot
        self.new = []        # code objects first seen by this snapshot
        self.quiet = False   # the helper thread stopped recording itself

    def tick(self):
        import time
        if not self.quiet:
            # the helper's own work is not recorded from here on: its record
            # stays as it is, so all threads' rows minus it are exact (and
            # a snapshot costs less); with threads=False it is not recorded
            self.quiet = True
            with self.lock:
                if not self.finished and self.options.get("threads"):
                    self.prof.disable(this_thread=True)
        if os.path.exists(os.path.join(self.directory, "write")):
            self.write_so_far()
        now = time.monotonic()
        if self.next_at is None or now >= self.next_at:
            # on schedule, or from now when late (a target busy in C calls)
            self.next_at = now + self.interval if self.next_at is None or \
                now - self.next_at > self.interval else self.next_at + self.interval
            self.snapshot()

    def snapshot(self):
        """Write the functions file's new lines, then the snapshot."""
        import marshal
        import time
        with self.lock:
            if self.finished:
                return
            cpu = time.thread_time()
            prof = self.prof
            # the records listed stay until the last read, though the
            # target's threads go on ending (csrc/fpy_thread_fold.c)
            with prof.threads_held():
                prof.take_thread_names()
                self.new = []
                records = prof.threads()
                helper = max([tid for tid, ident, _n in records if ident == self.helper_ident],
                             default=None)
                # running: the newest record of each ident with a thread now
                # (the records of ended threads but the newest are folded
                # into their group's, ident 0)
                newest = {}
                for tid, ident, _n in records:
                    newest[ident] = max(tid, newest.get(ident, tid))
                now = sys._current_frames()
                threads = [[tid, prof.thread_name(tid, ident), ident in now and newest[ident] == tid]
                           for tid, ident, _n in records if tid != helper]
                wanted = self.wanted_thread()
                at = time.monotonic()
                every = self.rows(prof.getstats())
                own = self.rows(prof.getstats(helper)) if helper is not None else []
                compensation = prof.compensation_info()
                one = None
                if wanted is not None and any(t[0] == wanted for t in threads):
                    one = [wanted, self.rows(prof.getstats(wanted))]
                memory = one_memory = None
                if self.options.get("memory"):
                    memory = allocated_rows(prof.memory_stats(threads={t[0] for t in threads}))
                    if one is not None:
                        one_memory = [wanted, allocated_rows(prof.memory_stats(threads={wanted}))]
            if self.new:
                self.add_functions(self.new)
            self.seq += 1
            note_bytes(self.directory, "snapshot", marshal.dumps(
                {"seq": self.seq, "time": at, "elapsed": at - self.started_at,
                 "threads": threads, "all": every, "helper": own, "thread": one,
                 "compensate": compensation["compensate"], "removed": compensation["removed"],
                 "extra_events": compensation["extra_events"],
                 "memory": memory, "thread_memory": one_memory,
                 "cost": time.thread_time() - cpu}))

    def rows(self, entries):
        """[function number, calls, recursive calls, tottime, cumtime] of
        each getstats() entry; new functions numbered and kept in self.new."""
        index = self.index
        # new functions are rare after the first snapshots: no call (which
        # the profiler would record on this thread) per entry otherwise
        for entry in entries:
            if entry[0] not in index:
                index[entry[0]] = len(index)
                self.new.append(entry[0])
        return [[index[code], nc, rc, it, tt] for code, nc, rc, tt, it, _calls in entries]

    def wanted_thread(self):
        """The thread the viewer shows (the ``thread`` file), or None: all."""
        try:
            with open(os.path.join(self.directory, "thread")) as f:
                text = f.read().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def add_functions(self, codes):
        import json

        from ..data.names import label  # (deferred: imported by start(), see attach_agent._NEEDED)
        lines = []
        for code in codes:
            key = label(code)
            qual = getattr(code, "co_qualname", None)
            lines.append(json.dumps([key[0], key[1], key[2], qual if qual != key[2] else None]))
        fd = os.open(os.path.join(self.directory, "functions"),
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, ("\n".join(lines) + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    def write_so_far(self):
        """The viewer's write key: the profile so far, profiling going on."""
        from ..data.profile_file import write_profile  # (deferred: imported by start(), see attach_agent._NEEDED)
        request = os.path.join(self.directory, "write")
        try:
            with open(request) as f:
                n = int(f.read().strip() or 0)
            os.unlink(request)
        except (OSError, ValueError):
            return
        name = "profile-%d.prof" % n
        with self.lock:
            if self.finished:
                return
            try:
                data = self.profile_data()
                tmp = os.path.join(self.directory, name + ".tmp")
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as f:
                    write_profile(f, data)
                os.replace(tmp, os.path.join(self.directory, name))
            except Exception as exc:
                attach_agent.note(self.directory, "profile-%d.error" % n, "%s: %s"
                                  % (type(exc).__name__, exc))

    def write(self, duration, reason):
        """At the end (stopped, or the process exits): the done marker only."""
        self.index = {}  # the code objects are not kept a moment longer than the profiler
        attach_agent.note(self.directory, "done", repr({"duration": duration, "reason": reason}))


def allocated_rows(table):
    """[[file, line, name, bytes allocated itself]] of a memory table."""
    return [[key[0], key[1], key[2], row.allocated] for key, row in table.items() if row.allocated]


def note_bytes(directory, name, data):
    """attach_agent.note() for bytes: atomically, owner-only."""
    tmp = os.path.join(directory, name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(directory, name))
