"""``fastprof top PID``: a live view of a running Python 3.14+ process.

It attaches as ``fastprof attach`` does (modes.attach: sys.remote_exec, the
rights of a debugger, no socket; the same private directory as the only
channel) with top_agent's session, which writes a snapshot of each
thread's cumulative stats every interval.  The difference of two
consecutive snapshots is the interval's exact numbers (interval_rows):
calls, own time and cumulative time of every function that returned in
it.  ``q`` (or Ctrl-C, SIGTERM, SIGHUP) stops the profiler in the target
and removes the directory; a viewer killed outright is noticed by the
target's helper, which does the same by itself.  The three signals are
noted, not raised (interrupts.CtrlC), from the start of the command to
its end: wherever one lands, the session ends where it can, ``--batch
-o`` still writes the session's profile, and the command says so.

The screen is drawn by curses (standard library), from lines made by
frame_lines(), which the ``--batch`` mode prints as they are.
"""

import json
import os
import signal
import sys
import time

from ..data import cost_note
from ..data.model import match_key
from ..data.names import readable_name
from ..tools.view import format_bytes, format_count, format_time, micro_sign
from . import attach, run_options
from .attach import AttachError
from .interrupts import CtrlC
from .process_alive import alive as _alive
from .run_options import UsageError

PROG = "fastprof top"

POLL = 0.05          # seconds between looks at the directory and the keyboard
STOP_TIMEOUT = 10.0  # seconds to wait for the target to stop profiling

# sort keys: name -> (column title, value of a Row)
SORTS = {
    "own": ("own time", lambda r: r.own),
    "cum": ("cumulative time", lambda r: r.cum),
    "calls": ("calls", lambda r: r.calls),
    "alloc": ("bytes allocated", lambda r: r.allocated),  # (--memory)
}
SORT_KEYS = {"o": "own", "c": "cum", "n": "calls", "m": "alloc"}

# the table's row: own, own %, cumulative, calls, calls/s, function; with
# --memory, the bytes allocated before the function
ROW = "%8s %6s %8s %9s %9s  %s"
ROW_WIDTH = 8 + 6 + 8 + 9 + 9 + 4 + 2
ALLOC = "%9s "
HELP_LINE = "q quit  o/c/n sort  t/T thread  p pause  w write  a total  j/k scroll"
HELP_LINE_MEMORY = "q quit  o/c/n/m sort  t/T thread  p pause  w write  a total  j/k scroll"


class Row:
    """One function's numbers over a period."""

    __slots__ = ("key", "calls", "pcalls", "own", "cum", "allocated")

    def __init__(self, key, calls, pcalls, own, cum, allocated=0):
        self.key, self.calls, self.pcalls, self.own, self.cum = key, calls, pcalls, own, cum
        self.allocated = allocated  # bytes it allocated itself (--memory)

    def astuple(self):
        return (self.key, self.calls, self.pcalls, self.own, self.cum, self.allocated)

    def __repr__(self):
        return "Row%r" % (self.astuple(),)


# -- the arithmetic (no terminal, no process: tests/test_top.py) ---------------

def _add(out, keys, rows, sign=1):
    for fn, nc, rc, tt, ct in rows:
        key = keys[fn]
        acc = out.get(key)
        if acc is None:
            out[key] = [sign * nc, sign * (nc - rc), sign * tt, sign * ct]
        else:
            acc[0] += sign * nc
            acc[1] += sign * (nc - rc)
            acc[2] += sign * tt
            acc[3] += sign * ct


def totals(snapshot, keys, thread=None):
    """{function key: [calls, primitive calls, tottime, cumtime]} of the
    snapshot's threads (the helper's rows taken off), or of the one whose id
    is *thread*; None if the snapshot has no rows of that thread."""
    out = {}
    if thread is None:
        _add(out, keys, snapshot["all"])
        _add(out, keys, snapshot["helper"], -1)
    else:
        one = snapshot.get("thread")
        if one is None or one[0] != thread:
            return None
        _add(out, keys, one[1])
    return out


def allocated(snapshot, thread=None):
    """{function key: bytes it allocated itself} of the snapshot's threads
    (the helper's left out), or of the one whose id is *thread*; None if
    the snapshot has no memory (no --memory) or not that thread's."""
    if thread is None:
        rows = snapshot.get("memory")
    else:
        one = snapshot.get("thread_memory")
        rows = one[1] if one is not None and one[0] == thread else None
    if rows is None:
        return None
    out = {}
    for filename, line, name, nbytes in rows:
        key = match_key((filename, line, name))
        out[key] = out.get(key, 0) + nbytes
    return out


def interval_rows(before, after, keys, thread=None):
    """The rows of the period between two snapshots (*before* None: since
    attach) and its length in seconds: ``(rows, seconds)``; ``(None, 0.0)``
    if a snapshot lacks the thread's rows (the agent sends them from the
    snapshot after the viewer asked).

    *keys*: function number -> pstats key (match_key'd, so that C functions
    named with an address make one row).  Only functions with a call that
    returned in the period, or (--memory) bytes allocated in it, have a
    row; a function absent before starts from zero.  *thread*: a thread id
    (None: all)."""
    new = totals(after, keys, thread)
    old = totals(before, keys, thread) if before is not None else {}
    if new is None or old is None:
        return None, 0.0
    seconds = after["time"] - before["time"] if before is not None else after["elapsed"]
    new_bytes = allocated(after, thread) or {}
    old_bytes = (allocated(before, thread) or {}) if before is not None else {}
    rows = []
    for key in set(new) | set(new_bytes):
        nc, pc, tt, ct = new.get(key, (0, 0, 0.0, 0.0))
        o = old.get(key)
        if o is not None:
            nc, pc, tt, ct = nc - o[0], pc - o[1], tt - o[2], ct - o[3]
        nbytes = new_bytes.get(key, 0) - old_bytes.get(key, 0)
        if nc or tt or ct or nbytes:
            rows.append(Row(key, nc, pc, tt, ct, nbytes))
    return rows, seconds


def cost_line(before, after):
    """What the profiler took out of the times of the period (all threads,
    the agent's own included), in the views' words (cost_note: "profiler
    cost removed: 41 ns/event, 1.2 M events", or that times are raw);
    *before* None: since attach.  None when the snapshots do not say."""
    if after is None or "removed" not in after:
        return None
    removed, calls = after["removed"], sum(r[1] for r in after["all"])
    extra = after.get("extra_events", 0)
    if before is not None:
        if "removed" not in before:
            return None
        removed -= before["removed"]
        calls -= sum(r[1] for r in before["all"])
        extra -= before.get("extra_events", 0)
    return cost_note.note(cost_note.record(after["compensate"], removed, calls, extra))


def sort_rows(rows, sort):
    """*rows* by *sort* (a SORTS key), largest first, then by name."""
    value = SORTS[sort][1]
    return sorted(rows, key=lambda r: (-value(r), readable_name(r.key), str(r.key)))


def thread_list(snapshot, ended=False):
    """``[(id, name)]`` of the snapshot's running threads (with *ended*, of
    all its threads: the records of ended ones stay), by id."""
    return sorted((tid, name) for tid, name, running in snapshot["threads"] if running or ended)


# -- the lines on the screen -----------------------------------------------------

def function_text(key, qualnames):
    if key[0] == "~" and key[1] == 0:
        return readable_name(key)
    return "%s (%s:%d)" % (readable_name(key, qualnames), os.path.basename(key[0]), key[1])


def _fit(text, width):
    if len(text) <= width:
        return text
    return text[:max(0, width - 2)] + ".." if width >= 2 else text[:width]


def _rate(count, seconds):
    if seconds <= 0:
        return "-"
    r = count / seconds
    return format_count(round(r)) if r >= 10 or r == 0 else "%.1f" % r


def _clock(seconds):
    s = int(seconds)
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60) if s >= 3600 else \
        "%d:%02d" % (s // 60, s % 60)


class View:
    """What the screen shows: the two snapshots, the options the keys set."""

    def __init__(self, pid, sort="own", thread=None, total=False, micro="\u00b5", memory=False):
        self.pid = pid
        self.memory = memory      # --memory: the bytes column
        self.sort = sort
        self.thread = thread      # a thread id, or None: all
        self.total = total        # since attach instead of the last interval
        self.paused = False
        self.pending = None       # the newest snapshot taken in while paused
        self.scroll = 0
        self.status = ""
        self.micro = micro
        self.before = None
        self.after = None
        self.keys = []            # function number -> pstats key (match_key'd)
        self.qualnames = {}

    def add_functions(self, items):
        for filename, line, name, qual in items:
            key = match_key((filename, line, name))
            self.keys.append(key)
            if qual:
                self.qualnames[key] = qual

    def add_snapshot(self, snapshot):
        """A new snapshot; while paused the screen keeps its two."""
        if self.paused:
            self.pending = snapshot
            return
        self.before, self.after = self.after, snapshot

    def toggle_pause(self):
        self.paused = not self.paused
        if not self.paused:
            pending, self.pending = self.pending, None
            if pending is not None:
                self.add_snapshot(pending)

    def threads(self, ended=False):
        return thread_list(self.after, ended) if self.after is not None else []

    def next_thread(self, step=1):
        """t / T: the next (previous) thread, then all of them again."""
        ids = [None] + [tid for tid, _n in self.threads()]
        i = ids.index(self.thread) if self.thread in ids else 0
        self.thread = ids[(i + step) % len(ids)]
        self.scroll = 0

    def thread_label(self):
        if self.thread is None:
            return "all (%d)" % len(self.threads())
        for tid, name in self.threads(ended=True):
            if tid == self.thread:
                return "%s [%d]" % (name, tid)
        return "[%d] (ended)" % self.thread

    def rows(self):
        """(sorted rows, period seconds), or (None, 0) before the first period."""
        if self.after is None or (self.before is None and not self.total):
            return None, 0.0
        base = None if self.total else self.before
        rows, seconds = interval_rows(base, self.after, self.keys, self.thread)
        return (sort_rows(rows, self.sort) if rows is not None else None), seconds

    def lines(self, width, height):
        """The screen as *height* lines of at most *width* characters (the
        last one the key help)."""
        rows, seconds = self.rows()
        up = self.after["elapsed"] if self.after is not None else 0.0
        head = "fastprof top - process %d - up %s" % (self.pid, _clock(up))
        if self.paused:
            head += " - PAUSED"
        out = [head]
        period = ("since attach, %s" % format_time(seconds, self.micro)) if self.total \
            else "last %s" % format_time(seconds, self.micro)
        out.append("threads: %s - sort: %s - %s" % (self.thread_label(), SORTS[self.sort][0],
                                                    period))
        if rows is None:
            out.append("")
            out.append("collecting the first interval%s..."
                       % (" of this thread" if self.thread is not None else ""))
        else:
            calls = sum(r.calls for r in rows)
            own = sum(r.own for r in rows)
            out.append("%d functions ran, %s calls (%s/s), %s own time%s"
                       % (len(rows), format_count(calls), _rate(calls, seconds),
                          format_time(own, self.micro),
                          ", %s allocated" % format_bytes(sum(r.allocated for r in rows))
                          if self.memory else ""))
            cost = cost_line(None if self.total else self.before, self.after)
            if cost:
                out.append(cost)
            row = ROW.replace("  %s", "  " + ALLOC + "%s") if self.memory else ROW
            out.append(row % (("OWN", "OWN%", "CUM", "CALLS", "CALLS/S")
                              + (("ALLOC",) if self.memory else ()) + ("FUNCTION",)))
            room = max(0, height - len(out) - 2)
            self.scroll = max(0, min(self.scroll, len(rows) - room))
            name_width = max(10, width - ROW_WIDTH - (len(ALLOC % "") if self.memory else 0))
            for r in rows[self.scroll:self.scroll + room]:
                pct = "%5.1f%%" % (100.0 * r.own / seconds) if seconds > 0 else "-"
                calls = format_count(r.calls) if r.calls == r.pcalls else \
                    "%s/%s" % (format_count(r.calls), format_count(r.pcalls))
                out.append(row % (
                    (format_time(r.own, self.micro), pct, format_time(r.cum, self.micro),
                     calls, _rate(r.calls, seconds))
                    + ((format_bytes(r.allocated),) if self.memory else ())
                    + (_fit(function_text(r.key, self.qualnames), name_width),)))
        out = out[:max(0, height - 2)]
        out += [""] * (height - 2 - len(out)) + [self.status,
                                                 HELP_LINE_MEMORY if self.memory else HELP_LINE]
        return [_fit(line, width) for line in out[-height:]] if height > 0 else []


# -- the private directory -------------------------------------------------------

class Feed:
    """Reads the agent's snapshots and functions from *directory*."""

    def __init__(self, directory, view):
        self.directory = directory
        self.view = view
        self.seq = 0
        self.offset = 0  # how much of the functions file is read

    def poll(self):
        """True if a new snapshot was taken in."""
        import marshal  # the agent's format: see top_agent
        try:
            with open(os.path.join(self.directory, "snapshot"), "rb") as f:
                snapshot = marshal.loads(f.read())
        except OSError:
            return False
        if snapshot["seq"] == self.seq:
            return False
        self.seq = snapshot["seq"]
        self.read_functions()
        self.view.add_snapshot(snapshot)
        return True

    def read_functions(self):
        try:
            with open(os.path.join(self.directory, "functions"), "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return  # no function has returned yet
        end = data.rfind(b"\n") + 1  # a line still being appended waits
        if end:
            self.view.add_functions(json.loads(line) for line in data[:end].splitlines())
            self.offset += end


# stop the viewer the way q does: Ctrl-C, kill, the terminal closed
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Session:
    """One ``fastprof top``: attach, look, detach."""

    def __init__(self, pid, directory, view, say):
        self.pid = pid
        self.directory = directory
        self.view = view
        self.feed = Feed(directory, view)
        self.say = say
        self.writes = 0
        self.waiting = None  # (n, output) of a write the agent has not answered yet
        self.ended = None    # why the session ended on the target's side

    def check(self):
        """The target's side: a new snapshot (True), an end (self.ended)."""
        d = self.directory
        if os.path.exists(os.path.join(d, "error")):
            self.ended = "error: " + attach.read_agent_file(d, "error").strip()
            return False
        if os.path.exists(os.path.join(d, "done")) or not _alive(self.pid):
            self.ended = "process %d exited" % self.pid
            return False
        return self.feed.poll()

    def show_thread(self, thread):
        """Tell the agent which thread's rows to send (None: all threads')."""
        attach_agent_note(self.directory, "thread", "" if thread is None else str(thread))

    def request_write(self, output, fmt):
        if self.waiting is not None:
            self.view.status = "still writing %s" % self.waiting[1]
            return
        self.writes += 1
        attach_agent_note(self.directory, "write", str(self.writes))
        self.waiting = (self.writes, output, fmt)
        self.view.status = "writing %s..." % output

    def check_write(self):
        """Whether the profile asked for arrived; then write it out.  Returns
        the status text (None while waiting)."""
        if self.waiting is None:
            return None
        n, output, fmt = self.waiting
        path = os.path.join(self.directory, "profile-%d.prof" % n)
        error = os.path.join(self.directory, "profile-%d.error" % n)
        if os.path.exists(error):
            self.waiting = None
            text = attach.read_agent_file(self.directory, "profile-%d.error" % n).strip()
            os.unlink(error)
            return "could not write %s: %s" % (output, text)
        if not os.path.exists(path):
            return None
        self.waiting = None
        from ..data.profile_file import load_profile  # (deferred: only when written)
        try:
            data = load_profile(path)
            run_options.write_output(data, output, fmt, title="process %d" % self.pid)
        except OSError as exc:
            return "cannot write %s: %s" % (output, exc.strerror or exc)
        except Exception as exc:  # the screen stays; the status line says it
            return "cannot write %s: %s: %s" % (output, type(exc).__name__, exc)
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        calls = sum(int(v[1]) for v in data.stats.values())
        return "wrote %s: %d functions, %s calls so far" % (output, len(data.stats),
                                                            format_count(calls))

    def stop(self):
        """Stop profiling in the target and wait until it has (its helper
        writes the done marker once the profiler is off)."""
        attach.ask_agent_to_stop(self.directory)
        t0 = time.monotonic()
        while time.monotonic() - t0 < STOP_TIMEOUT:
            if os.path.exists(os.path.join(self.directory, "done")) or \
                    os.path.exists(os.path.join(self.directory, "error")) or not _alive(self.pid):
                return True
            time.sleep(POLL / 5)
        return False


def attach_agent_note(directory, name, text):
    from .attach_agent import note  # (deferred: the agent's writer, owner-only and atomic)
    note(directory, name, text)


# -- the terminal ------------------------------------------------------------------

def _curses_loop(session, args, fmt, ctrl_c):
    import curses
    import locale
    locale.setlocale(locale.LC_ALL, "")

    def loop(screen):
        try:
            curses.curs_set(0)
        except curses.error:
            pass
        screen.timeout(int(POLL * 1000))
        view = session.view
        dirty = True
        while not ctrl_c.pressed:
            if session.check():
                dirty = True
            if session.ended:
                return
            done = session.check_write()
            if done is not None:
                view.status = done
                dirty = True
            if dirty:
                height, width = screen.getmaxyx()
                screen.erase()
                for y, line in enumerate(view.lines(width - 1, height)):
                    try:
                        screen.addstr(y, 0, line, curses.A_REVERSE if y == height - 1 else 0)
                    except curses.error:
                        pass
                screen.refresh()
                dirty = False
            ch = screen.getch()
            if ch == -1:
                continue
            dirty = True
            if ch in (ord("q"), ord("Q")):
                return
            if ch in range(256) and chr(ch) in SORT_KEYS and (view.memory or chr(ch) != "m"):
                view.sort = SORT_KEYS[chr(ch)]
                view.scroll = 0
            elif ch in (ord("t"), ord("T")):
                view.next_thread(1 if ch == ord("t") else -1)
                session.show_thread(view.thread)
            elif ch in (ord("p"), ord(" ")):
                view.toggle_pause()
            elif ch == ord("a"):
                view.total = not view.total
            elif ch == ord("w"):
                session.request_write(args.output, fmt)
            elif ch in (ord("j"), curses.KEY_DOWN):
                view.scroll += 1
            elif ch in (ord("k"), curses.KEY_UP):
                view.scroll = max(0, view.scroll - 1)
            elif ch == curses.KEY_NPAGE:
                view.scroll += 10
            elif ch == curses.KEY_PPAGE:
                view.scroll = max(0, view.scroll - 10)

    curses.wrapper(loop)


def _batch_loop(session, args, ctrl_c):
    """--batch: print each interval's frame; stop after --iterations."""
    import shutil
    width = shutil.get_terminal_size((80, 24)).columns
    frames = 0
    while (args.iterations is None or frames < args.iterations) and not ctrl_c.pressed:
        if session.check():
            lines = session.view.lines(width, 2 + 3 + 2 + args.limit)
            if session.view.rows()[0] is not None:
                print("\n".join(line for line in lines[:-2] if line), flush=True)
                print(flush=True)
                frames += 1
        if session.ended:
            return
        time.sleep(POLL)


# -- the command -------------------------------------------------------------------

def add_parser(sub, formatter_class):
    """The ``top`` subcommand's parser, on argparse subparsers *sub*."""
    p = sub.add_parser(
        "top", help="a live view of a running Python 3.14+ process: functions by own time, "
                    "cumulative time, calls per second",
        description="Attach to running process PID (Python 3.14+, as fastprof attach does: "
                    "the rights of a debugger, no socket) and show, refreshed every interval, "
                    "the exact numbers of the last interval: each function's own time, "
                    "cumulative time, calls and calls per second, over all threads or one. "
                    "A call counts in the interval it returns in. q detaches and leaves the "
                    "process as it was.",
        epilog="keys:\n"
               "  o / c / n   sort by own time / cumulative time / calls\n"
               "  m           with --memory: sort by bytes allocated\n"
               "  t / T       next / previous thread (then all threads again)\n"
               "  a           since attach instead of the last interval (and back)\n"
               "  p, space    pause the screen (profiling goes on)\n"
               "  w           write the profile so far to -o FILE\n"
               "  j / k, arrows, PgUp / PgDn   scroll\n"
               "  q, Ctrl-C   detach (the profiler stops; the process runs on unchanged)\n"
               "\nexamples:\n"
               "  fastprof top 12345\n"
               "  fastprof top 12345 -s cum --thread worker-1 -o now.html\n"
               "  fastprof top 12345 --batch -n 5 -o five-seconds.prof   # no screen: 5 frames\n"
               "  fastprof top 12345 --memory -s alloc                  # who allocates\n"
               "  python3.15 -m fastprof.cli top 12345                  # a 3.15 target\n",
        formatter_class=formatter_class)
    p.add_argument("pid", metavar="PID", help="the process to watch")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="refresh every SECONDS (default 1)")
    p.add_argument("-s", "--sort", default="own", choices=list(SORTS),
                   help="the first sort order: own (time in the function itself, default), "
                        "cum (time including callees), calls, or alloc (bytes the function "
                        "allocated itself; with --memory)")
    p.add_argument("--thread", metavar="NAME",
                   help="start showing only this thread (its name or id; t changes it)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="where w writes the profile so far (format by its name, as "
                        "fastprof attach -o; default fastprof-top-PID.prof); with --batch, "
                        "the profile of the whole session, written at the end")
    p.add_argument("-b", "--batch", action="store_true",
                   help="no screen: print each interval's table to stdout (for logs and "
                        "scripts), until Ctrl-C or --iterations")
    p.add_argument("-n", "--iterations", type=int, default=None, metavar="N",
                   help="with --batch: stop after N intervals")
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="with --batch: print the first N rows of each interval (default 20)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="give up (and withdraw the request) if the target's main thread "
                        "has not run Python code within SECONDS (default 30)")
    run_options.add_run_options(p.add_argument, argparse_style=True)
    return p


def _thread_id(view, wanted, missing=UsageError):
    """--thread NAME|ID -> a thread id of the last snapshot; if none, *missing*
    (UsageError: raised)."""
    threads = view.threads(ended=True)
    for tid, name in threads:
        if name == wanted or str(tid) == wanted:
            return tid
    if missing is not UsageError:
        return missing
    raise UsageError("process %d has no thread %r; its threads: %s" % (
        view.pid, wanted, ", ".join("%s [%d]" % (n, t) for t, n in threads)))


def _for_top(text):
    return text.replace("fastprof.cli attach", "fastprof.cli top")


def check_args(args):
    """The checks before attaching: UsageError / AttachError."""
    if args.sort == "alloc" and not args.memory:
        raise UsageError("-s alloc needs --memory (the bytes each function allocates)")
    attach.check_interpreter()
    pid = attach.parse_pid(args.pid)
    if not args.interval > 0:
        raise UsageError("--interval must be more than 0, not %g" % args.interval)
    if not args.timeout > 0:
        raise UsageError("--timeout must be more than 0, not %g" % args.timeout)
    if args.iterations is not None and not args.batch:
        raise UsageError("-n/--iterations needs --batch")
    if args.iterations is not None and args.iterations <= 0:
        raise UsageError("-n/--iterations must be 1 or more, not %d" % args.iterations)
    if args.limit <= 0:
        raise UsageError("--limit must be 1 or more, not %d" % args.limit)
    if not args.batch and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("needs a terminal (stdin and stdout); without one use --batch")
    if not args.batch:
        try:
            import curses  # (not on every platform)
        except ImportError:
            raise UsageError("this Python has no curses module: use --batch") from None
        try:
            curses.setupterm()  # the terminal curses would draw on, known to terminfo
        except curses.error:
            raise UsageError("curses cannot drive this terminal (TERM=%s): set TERM (xterm, "
                             "screen, vt100...) or use --batch" % os.environ.get("TERM", "")) from None
    if args.output is None and not args.batch:
        args.output = "fastprof-top-%d.prof" % pid
    fmt = None
    if args.output is not None:
        fmt = run_options.output_format(args.output)
        run_options.check_output_path(args.output)
    run_options.check_run_options(args)
    attach.check_remote_debug_allowed(pid)
    return pid, fmt


def _signal_text(signum):
    return {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM",
            signal.SIGHUP: "SIGHUP"}.get(signum, "signal %s" % signum)


def run(args):
    """``fastprof top`` with parsed *args*; return the exit status."""
    def say(text):
        print("%s: %s" % (PROG, text), file=sys.stderr, flush=True)

    # from here to the end Ctrl-C, SIGTERM and SIGHUP are noted: the session
    # ends where it can; a second one stops waiting for the target
    ctrl_c = CtrlC(STOP_SIGNALS).start()
    try:
        return _run(args, say, ctrl_c)
    except KeyboardInterrupt:
        run_options.report(PROG, "interrupted again (%s): detached without waiting for "
                           "process %s" % (_signal_text(ctrl_c.last), args.pid))
        return 130
    finally:
        ctrl_c.stop()


def _run(args, say, ctrl_c):
    import tempfile
    try:
        pid, fmt = check_args(args)
    except (AttachError, UsageError) as exc:
        run_options.report(PROG, _for_top(str(exc)))
        return 2
    from ..data.formats import TREE_FORMATS  # (deferred: as the rest of the command)
    options = run_options.profile_options(args, args.callpaths or fmt in TREE_FORMATS)
    try:
        run_options.new_profile(options)  # refused here as the target would refuse it
    except UsageError as exc:
        run_options.report(PROG, exc)
        return 2
    options.update(duration=None, attacher_pid=os.getpid(), interval=args.interval)
    directory = tempfile.mkdtemp(prefix="fastprof-top-")  # 0700, unpredictable name
    keep = False
    view = View(pid, sort=args.sort, micro=micro_sign(sys.stdout), memory=bool(args.memory))
    session = Session(pid, directory, view, say)
    status = 0
    try:
        try:
            attach.start_agent(directory, pid, options, args.timeout, say, agent="top_agent",
                               ctrl_c=ctrl_c)
        except AttachError as err:
            keep = getattr(err, "keep", False)
            run_options.report(PROG, _for_top(str(err)))
            return 2
        try:
            if args.thread is not None:
                # the thread filter needs the threads' names, from a snapshot; a
                # thread is there once it ran after the attach: a few are read
                deadline = time.monotonic() + max(2.0, 3 * args.interval)
                while not session.ended and not ctrl_c.pressed:
                    if session.check() and _thread_id(view, args.thread, missing=None) is not None:
                        break
                    if time.monotonic() > deadline and view.after is not None:
                        break
                    time.sleep(POLL)
                if view.after is not None and not ctrl_c.pressed:
                    view.thread = _thread_id(view, args.thread)
                    session.show_thread(view.thread)
            if ctrl_c.pressed:
                pass
            elif args.batch:
                _batch_loop(session, args, ctrl_c)
            else:
                _curses_loop(session, args, fmt, ctrl_c)
        except UsageError as exc:
            run_options.report(PROG, exc)
            status = 2
        except BaseException:
            session.stop()  # whatever went wrong here, the target is left as it was
            raise
        if ctrl_c.news():
            say("stopping (%s): detaching from process %d%s" % (
                _signal_text(ctrl_c.last), pid,
                ", writing the profile to %s first" % args.output
                if args.batch and args.output is not None and status == 0 and not session.ended
                else ""))
        if session.ended:
            say(session.ended)
            if session.ended.startswith("error"):
                status = 2
            return status
        if args.batch and args.output is not None and status == 0:
            session.request_write(args.output, fmt)
            t0 = time.monotonic()
            while session.waiting is not None and time.monotonic() - t0 < 120 and _alive(pid):
                text = session.check_write()
                if text is not None:
                    say(text)
                time.sleep(POLL)
        if ctrl_c.news():
            say("stopping (%s): detaching from process %d" % (_signal_text(ctrl_c.last), pid))
        if not session.stop():
            say("process %d did not confirm the stop within %gs; its helper stops by "
                "itself once this command is gone" % (pid, STOP_TIMEOUT))
            status = 1
        else:
            say("detached from process %d" % pid)
        if ctrl_c.news():
            say("stopping (%s): already detached from process %d" % (_signal_text(ctrl_c.last), pid))
        return status
    finally:
        if not keep:
            attach.remove_agent_files(directory)
