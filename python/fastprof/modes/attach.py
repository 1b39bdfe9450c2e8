"""``fastprof attach PID``: profile a running Python 3.14+ process.

The way in is the interpreter's own, ``sys.remote_exec`` (PEP 768): it
needs the rights a debugger needs (same user, ptrace allowed) and opens no
socket or port.  The script it runs in the target (attach_agent.BOOTSTRAP)
starts fastprof there on all threads and a helper thread that stops it and
writes the profile; the two sides talk only through files in a private
directory (``tempfile.mkdtemp``: mode 0700, an unpredictable name).  See
attach_agent for the files.

The target runs the script when its main thread next checks for pending
work: a main thread blocked in C delays the start.  After ``--timeout``
the request is withdrawn (the ``claim`` file); the script still runs when
the main thread wakes, sees that, removes the directory and does nothing.

Ctrl-C is noted, not raised (interrupts.CtrlC), from the start of the
command to its last line: wherever it lands, the session stops where it
can (before the request: nothing sent; while waiting for the target:
withdrawn, or stopped as soon as it started; while profiling: stopped),
collects and writes what was profiled, and says "stopping (Ctrl-C)".  A
second Ctrl-C gives up waiting for the profile.
"""

import os
import sys
import time

from ..data import formats
from ..data.model import pstats_of, sort_args
from ..data.profile_file import load_profile
from . import attach_agent, run_options
from .interrupts import CtrlC
from .process_alive import alive as _alive
from .run_options import UsageError

PROG = "fastprof attach"

# seconds before saying we wait for the target's main thread
WAIT_NOTICE = 1.5
# seconds to wait for the profile once stopped (a big one takes a while)
COLLECT_TIMEOUT = 120.0
POLL = 0.05


class AttachError(Exception):
    """Attaching failed: one line on stderr, exit status 2."""


def add_parser(sub, formatter_class):
    """The ``attach`` subcommand's parser, on argparse subparsers *sub*."""
    p = sub.add_parser(
        "attach", help="profile a running Python 3.14+ process for a while (sys.remote_exec)",
        description="Start fastprof inside running process PID (Python 3.14+, through the "
                    "interpreter's own remote execution, PEP 768: the rights of a debugger, "
                    "no socket), profile all its threads for --duration seconds or until "
                    "Ctrl-C, then stop, write the profile and detach. The process runs on "
                    "unchanged and can be attached again.",
        epilog=formats.formats_help() + "\nexamples:\n"
               "  fastprof attach 12345 --duration 10 -o service.prof\n"
               "  fastprof attach 12345 -o service.html        # until Ctrl-C\n"
               "  fastprof attach 12345 --duration 10 --lines-from service.prof:5\n"
               "  fastprof attach 12345 --duration 10 --only 'myapp.*' -o mine.prof\n"
               "  python3.15 -m fastprof.cli attach 12345 -o out.prof   # a 3.15 target\n",
        formatter_class=formatter_class)
    p.add_argument("pid", metavar="PID", help="the process to profile")
    p.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                   help="profile for SECONDS, then detach (default: until Ctrl-C)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the profile to FILE, format by its name (see below); "
                        "without it the table is printed")
    p.add_argument("--to", metavar="FORMAT",
                   help="with -o, write this format whatever the name: one of %s"
                        % ", ".join(formats.FORMATS))
    p.add_argument("-s", "--sort", default="cumulative", metavar="SORT",
                   help="without -o: sort order of the printed table, cProfile's keys "
                        "(default: cumulative)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="give up (and withdraw the request) if the target's main thread "
                        "has not run Python code within SECONDS (default 30)")
    run_options.add_run_options(p.add_argument, argparse_style=True)
    return p


# -- checks before attaching -------------------------------------------------

def check_interpreter():
    if not hasattr(sys, "remote_exec"):
        raise AttachError(
            "needs Python 3.14 or later (sys.remote_exec, PEP 768); this is %d.%d: run it "
            "with the target's python (pythonX.Y -m fastprof.cli attach PID), or start the "
            "program under python -m fastprof" % sys.version_info[:2])


def parse_pid(text):
    try:
        pid = int(text)
    except ValueError:
        raise AttachError("bad PID %r: not a number" % text) from None
    if pid <= 0:
        raise AttachError("bad PID %d: must be positive" % pid)
    if pid == os.getpid():
        raise AttachError("PID %d is this command itself" % pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise AttachError("no such process: %d" % pid) from None
    except PermissionError:
        raise AttachError("permission denied: process %d belongs to another user "
                          "(attach as that user)" % pid) from None
    return pid


def _proc_text(pid, name):
    try:
        with open("/proc/%d/%s" % (pid, name), "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return None


def check_remote_debug_allowed(pid):
    """AttachError if the target turned remote debugging off.  The
    interpreter checks too, but not every build honours -X
    disable_remote_debug: the target's wish is read here and kept."""
    env = _proc_text(pid, "environ") or []
    for item in env:
        if item.startswith(b"PYTHON_DISABLE_REMOTE_DEBUG=") and item.partition(b"=")[2]:
            raise AttachError("remote debugging is disabled in process %d "
                              "(PYTHON_DISABLE_REMOTE_DEBUG is set in its environment): restart "
                              "it without it to attach" % pid)
    argv = _proc_text(pid, "cmdline") or []
    for i, arg in enumerate(argv):
        if arg in (b"-Xdisable_remote_debug", b"-X") and (
                arg != b"-X" or argv[i + 1:i + 2] == [b"disable_remote_debug"]):
            raise AttachError("remote debugging is disabled in process %d (started with "
                              "-X disable_remote_debug): restart it without it to attach" % pid)


def _remote_exec_error(pid, exc):
    """One line for what sys.remote_exec raised."""
    text = str(exc)
    if isinstance(exc, PermissionError) or "Operation not permitted" in text:
        return ("permission denied attaching to process %d: it must run as your user and "
                "the system must allow ptrace (kernel.yama.ptrace_scope 0 or 1, or "
                "CAP_SYS_PTRACE in a container)" % pid)
    if "not enabled in the remote process" in text:
        return ("remote debugging is disabled in process %d (PYTHON_DISABLE_REMOTE_DEBUG, "
                "-X disable_remote_debug, or a Python built without it): restart it without "
                "that setting to attach" % pid)
    if "Can't send commands from" in text:
        import re
        m = re.search(r"to a Python (\d+\.\d+)", text)
        theirs = m.group(1) if m else "X.Y"
        return ("process %d runs Python %s, this is %d.%d: attach with its version "
                "(python%s -m fastprof.cli attach %d; fastprof must be installed for it)"
                % ((pid, theirs) + sys.version_info[:2] + (theirs, pid)))
    if "PyRuntime" in text or "debug offsets" in text or "not a Python" in text.lower():
        return ("process %d is not a Python %d.%d process (no Python %d.%d runtime found in it); "
                "an older Python cannot be attached: start the program under python -m fastprof"
                % ((pid,) + sys.version_info[:2] * 2))
    if isinstance(exc, ProcessLookupError):
        return "no such process: %d" % pid
    return "cannot attach to process %d: %s" % (pid, text or type(exc).__name__)


# -- the session ---------------------------------------------------------------

def _exists(directory, name):
    return os.path.exists(os.path.join(directory, name))


def read_agent_file(directory, name):
    """The text of the agent's file *name* in *directory*, "" if it cannot be read."""
    try:
        with open(os.path.join(directory, name)) as f:
            return f.read()
    except OSError:
        return ""


def _withdraw(directory):
    """Withdraw the request: True if done (the target will do nothing), False
    if the target's script claimed it first (profiling is starting)."""
    try:
        fd = os.open(os.path.join(directory, "claim"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def _problem(directory, pid):
    """The error or busy marker's line, if either was written."""
    if _exists(directory, "busy"):
        return ("process %d is already being profiled (%s holds sys.monitoring's profiler "
                "slot): not attaching; stop that profiler first" % (pid, read_agent_file(directory, "busy")))
    if _exists(directory, "error"):
        return read_agent_file(directory, "error").strip()
    return None


def _wait_started(directory, pid, timeout, say, ctrl_c=None):
    """Wait until profiling runs in the target; AttachError if it does not,
    KeyboardInterrupt if *ctrl_c* (a CtrlC) notes a press first."""
    t0 = time.monotonic()
    noticed = False
    while True:
        if ctrl_c is not None and ctrl_c.pressed:
            raise KeyboardInterrupt
        problem = _problem(directory, pid)
        if problem:
            raise AttachError(problem)
        if _exists(directory, "started"):
            return
        claimed = _exists(directory, "claim")
        if not _alive(pid):
            raise AttachError("process %d exited before profiling started" % pid)
        waited = time.monotonic() - t0
        if not claimed and not noticed and waited >= WAIT_NOTICE:
            say("waiting for process %d's main thread to run Python code (it may be blocked "
                "in a C call: select, a lock, a long computation); giving up after %gs"
                % (pid, timeout))
            noticed = True
        if waited >= timeout:
            if not claimed and _withdraw(directory):
                raise AttachError(
                    "gave up after %gs: process %d's main thread did not run Python code; the "
                    "request is withdrawn (nothing will start when it wakes)" % (timeout, pid))
            if waited >= timeout + COLLECT_TIMEOUT:
                raise AttachError("process %d took the request but profiling did not start"
                                  % pid)
        time.sleep(POLL)


def _wait_done(directory, pid, duration, say, ctrl_c):
    """Profile for *duration* seconds (None: until Ctrl-C, noted by
    *ctrl_c*), then stop; return the done marker's summary dict."""
    t0 = time.monotonic()
    while not _exists(directory, "done") and not ctrl_c.pressed:
        if _exists(directory, "error"):
            raise AttachError(read_agent_file(directory, "error").strip())
        if not _alive(pid):
            break
        if duration is not None and time.monotonic() - t0 >= duration + 5.0:
            break  # the helper stops itself at its duration; this is a backstop
        time.sleep(POLL)
    if ctrl_c.news():
        say("stopping (Ctrl-C): collecting the profile from process %d" % pid)
    # the helper may still run: ask it to stop, then wait for its profile
    if not _exists(directory, "done"):
        ask_agent_to_stop(directory)
        stop_at = time.monotonic()
        while not _exists(directory, "done"):
            if _exists(directory, "error"):
                raise AttachError(read_agent_file(directory, "error").strip())
            if not _alive(pid):
                if _exists(directory, "done"):
                    break
                raise AttachError("process %d exited during the profile; nothing was written"
                                  % pid)
            if time.monotonic() - stop_at > COLLECT_TIMEOUT:
                raise AttachError("process %d did not write its profile within %gs"
                                  % (pid, COLLECT_TIMEOUT))
            try:
                time.sleep(POLL)
            except KeyboardInterrupt:  # a second Ctrl-C: give up
                raise AttachError("interrupted while process %d wrote its profile" % pid) from None
    import ast
    return ast.literal_eval(read_agent_file(directory, "done"))


def ask_agent_to_stop(directory):
    """Ask the agent to stop: its "stop" file (a failure is left to the wait's timeout)."""
    try:
        fd = os.open(os.path.join(directory, "stop"), os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
    except OSError:
        pass


def remove_agent_files(directory):
    """Remove the session's private directory and what the agent left in it."""
    import shutil
    shutil.rmtree(directory, ignore_errors=True)


def start_agent(directory, pid, agent_options, timeout, say, agent="attach_agent", ctrl_c=None):
    """Run the bootstrap in process *pid* with *agent_options* and wait until
    profiling runs there; the agent talks through *directory* (made with
    tempfile.mkdtemp).  *agent*: the module of fastprof.modes whose start()
    the bootstrap calls.  AttachError on failure; its ``keep`` attribute is
    True when the directory must be left for the target (a request it still
    holds: it removes the directory itself when its main thread wakes).
    *ctrl_c*: the command's CtrlC; a press noted before profiling runs
    withdraws the request, or, if the target took it already, stops
    profiling as soon as it started (the caller then collects)."""
    if ctrl_c is not None and ctrl_c.pressed:
        raise AttachError("interrupted before profiling started; nothing was sent to "
                          "process %d" % pid)
    script = os.path.join(directory, "inject.py")
    attach_agent.note(directory, "inject.py",
                      attach_agent.bootstrap_text(directory, agent_options, agent))
    try:
        sys.remote_exec(pid, script)
    except Exception as exc:
        raise AttachError(_remote_exec_error(pid, exc)) from None
    try:
        _wait_started(directory, pid, timeout, say, ctrl_c)
    except KeyboardInterrupt:
        if _withdraw(directory):
            err = AttachError("interrupted before profiling started; the request is withdrawn")
            err.keep = True  # the target reads inject.py when it wakes, then removes all
            raise err from None
        # the target took the request already: let it start, then stop at once
        _wait_started(directory, pid, timeout, say)
        ask_agent_to_stop(directory)
    except AttachError as err:
        # withdrawn while the target still holds the request: it reads
        # the script when its main thread wakes, then removes the directory
        err.keep = _exists(directory, "claim") and not _exists(directory, "started") \
            and _alive(pid) and not _problem(directory, pid)
        raise


def attach(pid, options, duration, timeout, say, ctrl_c):
    """Profile process *pid*; return (ProfileData, summary dict).  AttachError
    on failure.  *options*: Profile's keyword arguments; *ctrl_c*: the
    command's CtrlC (a press stops the profile, which is still collected)."""
    import tempfile

    directory = tempfile.mkdtemp(prefix="fastprof-attach-")  # 0700, unpredictable name
    keep = False
    try:
        agent_options = dict(options, duration=duration, attacher_pid=os.getpid())
        try:
            start_agent(directory, pid, agent_options, timeout, say, ctrl_c=ctrl_c)
        except AttachError as err:
            keep = getattr(err, "keep", False)
            raise
        say("profiling process %d%s" % (pid, " for %gs" % duration if duration is not None
                                       else " until Ctrl-C"))
        summary = _wait_done(directory, pid, duration, say, ctrl_c)
        data = load_profile(os.path.join(directory, "profile.prof"))
        return data, summary
    finally:
        if not keep:
            remove_agent_files(directory)


def _summary_line(pid, data, summary, output):
    calls = sum(int(v[1]) for v in data.stats.values())
    how = {"exit": " (the process exited)", "stopped": "", "duration": ""}.get(
        summary.get("reason"), "")
    threads, functions = summary.get("threads", 1), len(data.stats)
    return ("profiled process %d for %.2fs%s: %d thread%s, %d function%s, %s call%s%s"
            % (pid, summary.get("duration", 0.0), how, threads, "" if threads == 1 else "s",
               functions, "" if functions == 1 else "s", "{:,}".format(calls),
               "" if calls == 1 else "s", "; wrote %s" % output if output else ""))


def run(args):
    """``fastprof attach`` with parsed *args*; return the exit status."""
    def say(text):
        print("%s: %s" % (PROG, text), file=sys.stderr, flush=True)

    # from here to the last line, Ctrl-C is noted: it stops the profile,
    # which is collected and written all the same; a second one gives up
    ctrl_c = CtrlC().start()
    try:
        return _run(args, say, ctrl_c)
    except KeyboardInterrupt:
        run_options.report(PROG, "interrupted again (Ctrl-C): stopped without the profile")
        return 130
    finally:
        ctrl_c.stop()


def _run(args, say, ctrl_c):
    try:
        check_interpreter()
        pid = parse_pid(args.pid)
        if args.duration is not None and not args.duration > 0:
            raise UsageError("--duration must be more than 0, not %g" % args.duration)
        if not args.timeout > 0:
            raise UsageError("--timeout must be more than 0, not %g" % args.timeout)
        run_options.check_run_options(args)
        if args.to is not None and args.output is None:
            raise UsageError("--to needs -o FILE")
        fmt = None
        sort = None
        if args.output is not None:
            fmt = run_options.output_format(args.output, args.to)
            run_options.check_output_path(args.output)
        else:
            sort = run_options.parse_cprofile_sort(args.sort)
        check_remote_debug_allowed(pid)
        options = run_options.profile_options(args, args.callpaths or fmt in formats.TREE_FORMATS)
        # refused here as the target would refuse it (same Python version):
        # --fast where it is unavailable, bad patterns
        probe = run_options.new_profile(options)
        data, summary = attach(pid, options, args.duration, args.timeout, say, ctrl_c)
    except (AttachError, UsageError) as exc:
        run_options.report(PROG, exc)
        return 2
    if ctrl_c.news():  # once the profile had ended (its duration, the target's exit)
        say("stopping (Ctrl-C): writing the profile collected from process %d" % pid)
    for line in summary.get("unmatched", ()):
        say(line)
    if args.output is not None:
        try:
            run_options.write_output(data, args.output, fmt, title="process %d" % pid,
                                 min_percent=args.min_percent)
        except OSError as exc:
            run_options.report(PROG, "cannot write %s: %s" % (args.output, exc.strerror or exc))
            return 2
    else:
        if probe.scope_note() is not None:  # --only: what the table leaves out
            print(probe.scope_note())
        pstats_of(data.stats).strip_dirs().sort_stats(*sort_args(sort)).print_stats()
        run_options.print_line_listings(data.lines, data.stats, data.qualnames, own=data.lines_own,
                                        memory=data.lines_memory)
        if data.memory is not None:
            run_options.print_memory(data.memory, data.memory_totals, data.qualnames)
        sys.stdout.flush()
    say(_summary_line(pid, data, summary, args.output))
    if ctrl_c.news():
        say("stopping (Ctrl-C): the profile was written first")
    return 0
