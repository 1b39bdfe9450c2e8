"""``python -m fastprof``: cProfile's command line, on fastprof.

    python -m fastprof [options] script.py [args ...]
    python -m fastprof [options] -m module [args ...]
    python -m fastprof [options] app.pyz | directory [args ...]

The profiled program sees what it sees under ``python -m cProfile`` of the
same Python version (``sys.argv``, ``__name__``, ``__file__``,
``sys.path[0]``), and, on every version, ``sys.modules['__main__']`` is its
own module, so what it defines pickles (multiprocessing works).  Its exit
status is kept (cProfile exits 0 after ``sys.exit(n)``), and the stats are
printed or written however it ends.

Nothing is imported before the program starts that ``python -m cProfile``
does not import too (optparse, pstats, runpy), and no import cache is
warmed: the program's own imports cost what they cost under cProfile.

Usage errors (missing script or module, bad option, unwritable output
file) are reported on one line, before the program runs, with exit
status 2.
"""

import io
import os
import sys

from ..data import arguments, formats
from . import run_options
from .interrupts import CtrlC
from .run_options import UsageError

# --threads is on by default on the command line (run_options.RUN_OPTIONS)
DEFAULT_THREADS = True

# cProfile's own default for -s on this Python: -1 (stdname) up to 3.10,
# 2 (cumulative) from 3.11 on
DEFAULT_SORT = 2 if sys.version_info >= (3, 11) else -1

PROG = "python -m fastprof"

USAGE = ("%s [-o FILE] [--to FORMAT] [-s SORT] [--threads | --no-threads] [--per-thread] "
         "[--clock {%s}] [--coroutines {%s}] [--callpaths] "
         "[--max-depth N] [--no-builtins] [--fast] [--lines PATTERN] [--lines-from OLD.prof[:N]] "
         "[--only PATTERN] [--signal SIG [--idle]] [--subprocesses] "
         "(-m module | script.py | app.pyz | directory) [args ...]"
         % (PROG, ",".join(arguments.CLOCKS), ",".join(arguments.COROUTINE_MODES)))

DESCRIPTION = """\
Run a Python script or module under fastprof, then print its profile (a
pstats table, as python -m cProfile prints) or write it to a file.
Everything after the script name or -m module goes to the program. A
directory or zip archive with a __main__.py runs as python runs it."""

EXAMPLES = """\
examples:
  python -m fastprof myscript.py arg1 arg2
  python -m fastprof -s tottime myscript.py
  python -m fastprof -o out.prof -m mypackage.tool --verbose
  python -m fastprof --callpaths -o flame.html myscript.py
  python -m fastprof --per-thread --clock cpu server.py
  python -m fastprof --memory -o mem.prof myscript.py
  fastprof view mem.prof --memory -s peak  # bytes per function, biggest call first
  python -m fastprof --subprocesses -o all.prof pool_job.py
  fastprof view all.prof --process 12345   # one process of it
  python -m fastprof -o out.prof app.pyz
  python -m fastprof --signal USR1 --idle -o app.prof app.py &
  kill -USR1 %1; sleep 30; kill -USR1 %1   # profile 30 s of it, into app.prof
  python -m pstats out.prof            # browse a written profile
  fastprof view out.prof               # or look at it with fastprof's tools
  fastprof attach PID -o live.prof     # profile a running 3.14+ process

The program's exit status is passed through (sys.exit(3) exits 3, an
uncaught exception exits 1 after its traceback); the profile is printed or
written in every case. Usage errors exit 2 before the program runs."""

# the fastprof command's subcommands, mistyped as python -m fastprof's script
_TOOL_COMMANDS = ("view", "diff", "merge", "convert", "attach")


def sort_keys():
    """The valid -s values: pstats' sort keys, plus -1 (cProfile's 'stdname')."""
    return run_options.cprofile_sort_keys()


def _optparse():
    # optparse, as python -m cProfile uses: argparse would be one more module
    # (and its re/shutil use) in the program's sys.modules and caches
    import optparse

    class Formatter(optparse.IndentedHelpFormatter):
        def format_usage(self, usage):
            return "usage: %s\n" % usage

    class Parser(optparse.OptionParser):
        def error(self, msg):
            raise UsageError(msg)

        def format_epilog(self, formatter):
            return "\n" + self.epilog  # as written, not re-wrapped

    return optparse, Parser, Formatter


def build_parser():
    optparse, Parser, Formatter = _optparse()
    p = Parser(prog=PROG, usage=USAGE, description=DESCRIPTION, formatter=Formatter(),
               epilog=formats.formats_help() + "\n" + EXAMPLES, add_help_option=True)
    p.disable_interspersed_args()
    p.add_option("-o", "--outfile", metavar="FILE",
                 help="write the profile to FILE instead of printing it; the format "
                      "follows the file name (see below), pstats for any name not "
                      "listed. Nothing is printed then but what the program prints.")
    p.add_option("--to", metavar="FORMAT",
                 help="with -o, write this format whatever the name: one of %s"
                      % ", ".join(formats.FORMATS))
    p.add_option("-s", "--sort", metavar="SORT",
                 help="sort order of the printed table: one of %s, or several "
                      "separated by commas (default: %s, as cProfile on this Python). %s"
                      % (", ".join(sort_keys()),
                         "cumulative" if DEFAULT_SORT == 2 else "-1 (stdname)",
                         run_options.SORT_NOTE))
    p.add_option("-m", dest="module", action="store_true", default=False,
                 help="profile a library module, as python -m runs it "
                      "(-m module [args ...])")
    p.add_option("--per-thread", action="store_true", default=False,
                 help="print one table per thread instead of one merged table; threads "
                      "named alike (Thread-1, Thread-2...) share one "
                      "(the threads are in the -o .prof file anyway)")
    run_options.add_run_options(p.add_option, argparse_style=False)
    p.add_option("--signal", metavar="SIG",
                 help="each signal SIG (a name, SIGUSR1 or USR1, or a number) toggles "
                      "profiling; each stop writes the profile collected so far "
                      "(all on-periods together) to the -o FILE, which is required, "
                      "replacing it atomically; the program's end writes the final one. "
                      "The program may not set its own handler for SIG. Linux only.")
    p.add_option("--idle", action="store_true", default=False,
                 help="with --signal: start unprofiled; the first signal starts "
                      "profiling (without --idle it starts profiled and the first "
                      "signal stops it)")
    p.add_option("--subprocesses", action="store_true", default=False,
                 help="also profile the program's Python child processes (multiprocessing "
                      "with fork, spawn or forkserver, ProcessPoolExecutor, subprocess "
                      "running this Python), each from its start to its exit, and merge "
                      "their profiles into the output; with -o FILE, each process's own "
                      "profile is kept in FILE.processes/PID.prof (fastprof view FILE "
                      "--process PID); with --memory, every process's bytes summed. A "
                      "child ended by SIGTERM (Pool.terminate()) or os._exit writes its "
                      "profile first; one killed outright (SIGKILL) loses only its "
                      "own, and is named on stderr.")

    return p


# options that take a value, for splitting argv at the program's name
_VALUE_SHORT = ("-o", "-s")
_VALUE_LONG = ("--outfile", "--to", "--sort", "--signal") + run_options.RUN_VALUE_OPTIONS


def split_argv(argv):
    """Split argv into (our options, program argv).

    Our options end at the first argument that is not an option (the
    script, or the module when -m was given) or at ``--``; everything from
    there belongs to the program, as with cProfile (interspersed options
    are not ours).  ``-mNAME`` is taken as ``-m NAME``, as python does.
    """
    opts = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return opts, argv[i + 1:]
        if a.startswith("--"):
            name = a.partition("=")[0]
            opts.append(a)
            if name in _VALUE_LONG and "=" not in a and i + 1 < len(argv):
                opts.append(argv[i + 1])
                i += 1
        elif a.startswith("-") and a != "-":
            if a[:2] in _VALUE_SHORT:
                opts.append(a)
                if len(a) == 2 and i + 1 < len(argv):
                    opts.append(argv[i + 1])
                    i += 1
            elif a[:2] == "-m" and len(a) > 2:
                opts.append("-m")
                return opts, [a[2:]] + argv[i + 1:]
            else:
                opts.append(a)
        else:
            return opts, argv[i:]
        i += 1
    return opts, []


# -- early checks --------------------------------------------------------------

def _find_quietly(modname):
    """True if *modname* (and for a package, its __main__) can be found
    without running any package's ``__init__``: parents are looked up in
    their ``__path__`` as the import system would, but not imported."""
    import importlib.util  # runpy imports it anyway
    parts = modname.split(".")
    name = parts[0]
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    for part in parts[1:] + ["__main__"]:
        if spec is None:
            return False
        if spec.submodule_search_locations is None:
            return part == "__main__"  # a plain module: runpy runs it
        name = name + "." + part
        mod = sys.modules.get(name)
        if mod is not None:
            spec = getattr(mod, "__spec__", None)
            continue
        path = list(spec.submodule_search_locations)
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            try:
                spec = find(name, path)
            except (ImportError, ValueError):
                spec = None
            if spec is not None:
                break
    return spec is not None and spec.submodule_search_locations is None


def check_module(modname):
    """Raise UsageError if ``python -m modname`` would not find the module.

    The usual case is decided without importing anything, so that the
    packages of a dotted name are imported (and profiled) when the module
    runs, as with cProfile; only when that says no does runpy itself look
    (importing the parent packages) for a definite answer and its message.
    The path finders the look made are dropped again, so that the
    program's first imports find the import system as cProfile leaves it.
    """
    finders = dict(sys.path_importer_cache)
    try:
        if _find_quietly(modname):
            return
    finally:
        sys.path_importer_cache.clear()
        sys.path_importer_cache.update(finders)
    import runpy
    try:
        runpy._get_module_details(modname)  # what runpy.run_module itself uses
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    except AttributeError:  # pragma: no cover - a Python without it
        return
    except SyntaxError:
        pass  # reported with its traceback when the module runs, as python does


def _is_zip(path):
    import zipimport  # imported by the interpreter at startup
    try:
        zipimport.zipimporter(path)
    except (zipimport.ZipImportError, OSError):
        return False
    return True


def _has_main(path):
    """True if directory or zip archive *path* holds a ``__main__`` module."""
    if os.path.isdir(path):
        return any(os.path.isfile(os.path.join(path, "__main__" + ext))
                   for ext in (".py", ".pyc"))
    import zipimport
    importer = zipimport.zipimporter(path)
    find_spec = getattr(importer, "find_spec", None)  # 3.10+
    if find_spec is not None:
        return find_spec("__main__") is not None
    return importer.find_module("__main__") is not None  # pragma: no cover - 3.9


def check_script(progname):
    """Raise UsageError if *progname* cannot be run; return what it is:
    'script', or 'main' for a directory or zip archive run by its __main__."""
    if not os.path.exists(progname):
        hint = ""
        if progname in _TOOL_COMMANDS:
            hint = " (to %s a profile, use the fastprof command: fastprof %s ...)" % (
                progname, progname)
        raise UsageError("can't open file %r: No such file or directory%s" % (progname, hint))
    if os.path.isdir(progname) or _is_zip(progname):
        if not _has_main(progname):
            raise UsageError("can't find '__main__' module in %r" % progname)
        return "main"
    return "script"


# -- running -------------------------------------------------------------------

# the module that was __main__ before the program's replaced it (fastprof's
# own __main__, whose code is still running)
_our_main = None


class _ScriptModule(type(sys)):
    # The program's module before 3.14: its namespace holds just the names
    # cProfile puts there; these answer as a fresh module's would (spawn
    # and forkserver read __main__.__spec__)
    __spec__ = None
    __loader__ = None


def _main_module(script=None):
    """A fresh module registered as ``sys.modules['__main__']``, so that
    ``import __main__`` is the program and what it defines pickles.

    For a script, its namespace holds the names cProfile's CLI sets on
    this Python, but ``__spec__`` is None (as ``python script.py`` and
    cProfile from 3.14 give; cProfile 3.12-3.13 sets a spec, with which
    multiprocessing's spawn would not rerun the script in its workers).
    """
    global _our_main
    if script is None or sys.version_info >= (3, 14):
        module = type(sys)("__main__")
    else:
        module = _ScriptModule("__main__")
        module.__dict__.clear()
    if script is not None:
        names = {"__file__": script, "__name__": "__main__", "__package__": None}
        if sys.version_info < (3, 15):  # 3.15's cProfile drops __cached__
            names["__cached__"] = None
        if sys.version_info >= (3, 12):
            names["__spec__"] = None
        module.__dict__.update(names)
    if _our_main is None:
        _our_main = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    return module


def _prepare(options, args, kind="script"):
    """cProfile's main(): set sys.argv and sys.path, return (code, globals)."""
    import runpy
    sys.argv[:] = args
    if options.module or kind == "main":
        if kind == "main":  # as python runs a directory or zip archive
            sys.path.insert(0, os.path.abspath(args[0]))
            modname = "__main__"
        else:
            modname = args[0]
        # runpy's entry point for python -m: it runs the module in
        # sys.modules['__main__'], argv as cProfile leaves it
        _main_module()
        code = "_run_module_as_main(modname, False)"
        globs = {"_run_module_as_main": runpy._run_module_as_main, "modname": modname}
        return code, globs
    progname = args[0]
    sys.path.insert(0, os.path.dirname(progname))
    with io.open_code(progname) as fp:
        code = compile(fp.read(), progname, "exec")
    return code, _main_module(progname).__dict__


def _exit_status(exc):
    """The process exit status python gives an uncaught SystemExit."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _user_traceback(exc):
    """The traceback of *exc* without fastprof's and runpy's frames on top."""
    import runpy
    tb = exc.__traceback__
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # fastprof/
    skip = {os.path.abspath(runpy.__file__), "<frozen runpy>", "<string>"}
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if os.path.abspath(filename).startswith(package):
            tb = tb.tb_next
        elif filename in skip or os.path.abspath(filename) in skip:
            tb = tb.tb_next
        else:
            break
    return tb


def _report_exception(exc):
    tb = _user_traceback(exc)
    exc.__traceback__ = tb  # the default hook prints this one, not its argument
    try:
        sys.excepthook(type(exc), exc, tb)
    except Exception:
        import traceback
        traceback.print_exception(type(exc), exc, tb)


def _pending_threads():
    """The program's non-daemon threads still running: python waits for them."""
    import threading
    me = threading.current_thread()
    return [t for t in threading.enumerate()
            if t is not me and t is not threading.main_thread() and not t.daemon]


def _write_output(prof, options, fmt):
    # every format by the table's writer (pstats: profile_file.write_profile,
    # as dump_stats), replacing the file atomically
    run_options.write_output(prof.profile_data(), options.outfile, fmt,
                             min_percent=options.min_percent)


def _write_merged(data, options, fmt):
    """--subprocesses: the parent's profile plus its children's (a ProfileData)."""
    if options.outfile is not None:
        run_options.write_output(data, options.outfile, fmt, min_percent=options.min_percent)
        return
    _usable_stdout()
    from ..data.model import pstats_of, sort_args  # (deferred: nothing before the program)
    pstats_of(data.stats).strip_dirs().sort_stats(*sort_args(options.sort)).print_stats()
    if data.memory is not None:
        run_options.print_memory(data.memory, data.memory_totals, data.qualnames)
    sys.stdout.flush()
    _table_hint()


def _report_unmatched(prof, follower=None, prog=PROG):
    """--lines/--only patterns that named nothing (in any process, with
    --subprocesses): one line each."""
    lines = run_options.unmatched_patterns(prof)
    for line in follower.unmatched_everywhere(lines) if follower is not None else lines:
        print("%s: %s" % (prog, line), file=sys.stderr)


def _print_lines(prof):
    run_options.print_line_listings(prof.line_stats(), prof.stats, prof.qualnames,
                                 own=prof.line_own_stats(), memory=prof.line_memory_stats())


def _usable_stdout():
    """sys.stdout, or a new stream on fd 1 if the program closed or dropped
    it (``python -m json.tool`` closes it; cProfile then fails)."""
    out = sys.stdout
    if out is not None and not getattr(out, "closed", False):
        return
    try:
        sys.stdout = open(1, "w", closefd=False, errors="backslashreplace")
    except OSError:
        pass


TABLE_HINT = ("%s: the same with qualified names (Class.method) and readable times: "
              "-o out.prof, then fastprof view out.prof")


def _table_hint(prog=PROG):
    """After the cProfile-style table, on a terminal only: where the names
    are qualified.  On stderr, so stdout stays cProfile's output; not when
    stdout is a file or a pipe (a script reads it as it reads cProfile's)."""
    try:
        if sys.stdout is None or not sys.stdout.isatty():
            return
        sys.stdout.flush()
        print(TABLE_HINT % prog, file=sys.stderr)
    except (OSError, ValueError, AttributeError):  # streams the program replaced or closed
        pass


def _print_output(prof, options, prog=PROG):
    _usable_stdout()
    from ..data.cost_note import note  # (deferred: nothing before the program)
    prof.create_stats()  # stops it, as print_stats() would
    print(note(prof.compensation(prof.stats)))  # whether the profiler's cost is in the times
    if not options.per_thread:
        prof.print_stats(options.sort)
        _print_lines(prof)
        _print_memory(prof, options)
        _table_hint(prog)
        return
    prof.disable()
    # threads named alike (a server's request threads) share one table
    from ..data.model import pstats_of, sort_args  # (deferred: nothing before the program)
    from ..data.thread_groups import per_thread_tables  # (deferred: nothing before the program)
    for title, tid, stats in per_thread_tables(prof.thread_records()):
        print("=== %s ===" % title)
        if tid is not None:
            prof.print_stats(options.sort, thread=tid)
        else:
            pstats_of(stats).strip_dirs().sort_stats(*sort_args(options.sort)).print_stats()
    _print_memory(prof, options)
    sys.stdout.flush()
    _table_hint(prog)


def _print_memory(prof, options):
    if getattr(options, "memory", False):
        run_options.print_memory(prof.memory_stats(), prof.memory_totals(), prof.qualnames)


def main(argv=None):
    """Run the command line; return the exit status.

    When the program leaves non-daemon threads running (and threads are
    profiled), the profile is written by an atexit callback, once python
    has waited for them as it does before it exits: main() is meant to be
    the last thing the process runs.
    """
    if argv is None:
        argv = sys.argv[1:]
    argv = list(argv)
    try:
        opts, args = split_argv(argv)
        parser = build_parser()
        try:
            options, extra = parser.parse_args(opts)
        except SystemExit as exc:  # --help
            return exc.code or 0
        if extra:  # pragma: no cover - split_argv leaves options only
            raise UsageError("unrecognized arguments: %s" % " ".join(extra))
        # before the program check, as cProfile's optparse checks -s first
        options.sort = (run_options.parse_cprofile_sort(options.sort)
                        if options.sort is not None else DEFAULT_SORT)
        if not args:
            if options.module:
                raise UsageError("-m needs a module name")
            if not opts:  # nothing at all: the usage, as cProfile prints it
                parser.print_usage(sys.stderr)
            raise UsageError("no program to profile: give a script.py, -m module, "
                             "directory or .pyz after the options")
        run_options.check_run_options(options)
        if options.to is not None and options.outfile is None:
            raise UsageError("--to needs -o FILE (or -o - for stdout)")
        signum = None
        if options.signal is not None:
            from .signal_toggle import parse_signal  # (deferred: nothing before the program)
            signum = parse_signal(options.signal)
            if options.outfile is None or options.outfile == run_options.STDOUT:
                raise UsageError("--signal needs -o FILE: each stop writes the profile there")
        elif options.idle:
            raise UsageError("--idle needs --signal SIG")
        if options.subprocesses and options.signal is not None:
            raise UsageError("--subprocesses and --signal cannot be used together")

        kind = "module"
        if options.module:
            check_module(args[0])
        else:
            kind = check_script(args[0])
        fmt = None  # the format's row: looked up once, passed on to the write
        if options.outfile is not None:
            fmt = run_options.output_row(options.outfile, options.to)
            run_options.check_output_path(options.outfile, [] if options.module else [args[0]])
            if options.outfile != run_options.STDOUT:
                # the program may chdir: fix the path now, as cProfile does
                options.outfile = os.path.abspath(options.outfile)
    except UsageError as exc:
        run_options.report(PROG, exc)
        return 2

    import fastprof.recording.profiler  # noqa: F401 - loaded before the program's __main__ is set up
    try:
        code, globs = _prepare(options, args, kind)
    except SyntaxError as exc:
        import traceback
        traceback.print_exception(type(exc), exc, None)
        return 1
    except OSError as exc:
        print("%s: error: can't open file %r: %s" % (PROG, args[0], exc.strerror or exc),
              file=sys.stderr)
        return 2

    # formats that draw the call tree get exact call paths without asking
    callpaths = options.callpaths or (fmt is not None and fmt.tree)
    kwargs = run_options.profile_options(options, callpaths)
    # the script answers to its file's stem too
    stem = (os.path.splitext(os.path.basename(args[0]))[0]
            if not options.module and kind == "script" else None)
    try:
        prof = run_options.new_profile(kwargs, main_alias=stem)
    except UsageError as exc:  # --fast where it is not available
        run_options.report(PROG, exc)
        return 2
    toggle = None
    if signum is not None:
        from .signal_toggle import SignalToggle  # (deferred: nothing before the program)
        toggle = SignalToggle(prof, signum, options.outfile, fmt, options.min_percent, PROG)
        try:
            toggle.install(start=not options.idle)
        except ValueError as exc:
            run_options.report(PROG, exc)
            return 2
    follower = None
    if options.subprocesses:
        from .subprocesses import Follower  # (deferred: nothing before the program)
        follower = Follower(prof, kwargs, main_alias=stem)
    pid = os.getpid()
    failures = []

    # Ctrl-C from the program's end to the profile's write is noted, not
    # raised: the profile is written whole, then the run says so
    ctrl_c = CtrlC()

    def at_os_exit(status, error):  # the program left by os._exit(status)
        if error is not None:
            failures.append(error)
        _finish(prof, options, fmt, failures, status, toggle, follower, ctrl_c)
    from ..recording import exit_hook  # (deferred: nothing before the program)
    exit_hook.install(prof, at_os_exit)
    try:
        status = run_program(prof, code, globs, options.threads, failures, toggle, ctrl_c)
    except KeyboardInterrupt:  # in the instant between the program's end and ctrl_c's start
        ctrl_c.start().pressed += 1
        status = 130
        try:
            prof.disable()
        except Exception as err:
            failures.append(err)
    if os.getpid() != pid:
        # a fork child that ran on to the script's end: the profile is the
        # parent's to write or print; the child exits as python would
        ctrl_c.stop()
        return status
    if prof.enabled:
        # The program's threads run on: python waits for them after we
        # return (threading's exit hooks first, then the join), and only
        # then runs the atexit callbacks. The profile is written from the
        # first of those, when the threads have ended.
        ctrl_c.stop()  # meanwhile Ctrl-C interrupts the wait, as python's
        import atexit
        atexit.register(_finish_at_exit, prof, options, fmt, failures, pid, toggle, follower,
                        ctrl_c)
        return status
    return _finish(prof, options, fmt, failures, status, toggle, follower, ctrl_c)


# after the profile, when Ctrl-C interrupted the program or its write
CTRL_C_NOTE = "%s: stopped by Ctrl-C: the profile holds what ran until then"


def _finish(prof, options, fmt, failures, status, toggle=None, follower=None, ctrl_c=None):
    """Stop profiling, report profiler failures, write or print the
    profile; return the exit status.  *ctrl_c*: the run's CtrlC, in place
    until the profile is out."""
    from ..recording import exit_hook  # (deferred: nothing before the program)
    exit_hook.remove()  # the profile is being written: an os._exit from now on leaves at once
    if ctrl_c is not None:
        ctrl_c.start()
    if toggle is not None:
        toggle.begin_exit()  # a signal from now on does not interrupt this
    try:
        return finish_profile(prof, options, fmt, failures, status, follower)
    finally:
        if toggle is not None:
            toggle.end_exit()
        if ctrl_c is not None:
            ctrl_c.stop()
            if ctrl_c.pressed:
                _say(CTRL_C_NOTE % PROG)


def _say(line):
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):  # a stderr the program closed or dropped
        pass


def finish_profile(prof, options, fmt, failures, status, follower=None, prog=PROG):
    """How a run ends, here and in %fastprof: stop profiling, report
    profiler *failures* and unmatched patterns (as *prog*), write the
    profile (*fmt*: a format's name or row) or print its table; return the
    exit status."""
    try:
        prof.disable()
    except Exception as err:
        failures.append(err)
    prof.take_thread_names()
    for err in failures:
        print("%s: profiling stopped early: %s: %s; the profile is partial"
              % (prog, type(err).__name__, err), file=sys.stderr)
        status = status or 1
    merged = None
    if follower is not None:
        merged = follower.finish(prof.profile_data(), options.outfile, prog)
    _report_unmatched(prof, follower, prog)
    try:
        if merged is not None:
            _write_merged(merged, options, fmt)
        elif options.outfile is not None:
            _write_output(prof, options, fmt)
        else:
            _print_output(prof, options, prog)
    except BrokenPipeError as exc:
        # as cProfile: no "Exception ignored" at interpreter shutdown
        sys.stdout = None
        return exc.errno
    except OSError as exc:
        print("%s: error: cannot write %s: %s" % (prog, options.outfile, exc.strerror or exc),
              file=sys.stderr)
        return status or 1
    return status


def _finish_at_exit(prof, options, fmt, failures, pid, toggle=None, follower=None, ctrl_c=None):
    """_finish() as an atexit callback, once python has waited for the
    program's threads. The exit status is decided by then: a failure is
    reported, but cannot change it."""
    if os.getpid() != pid:
        return  # a fork child made while python waited for the threads
    _finish(prof, options, fmt, failures, 0, toggle, follower, ctrl_c)


def run_program(prof, code, globs, threads, failures, toggle=None, ctrl_c=None):
    """Run the program under *prof*; return its exit status.

    Its exception, if any, is reported as python would report it; profiler
    failures go to *failures*.  The main thread stops being profiled when
    the program ends.  With *threads*, the program's non-daemon threads
    still running then are left running under the profiler (python waits
    for them before it exits): *prof* is still enabled on return; otherwise
    it is disabled.

    With a signal *toggle* (--signal), profiling starts only if it is not
    idle, and from the program's end on a signal may stop it, no longer
    start it.  *ctrl_c* (a CtrlC) is started once the profiler is off; a
    program ended by KeyboardInterrupt counts as a press.
    """
    if toggle is None or toggle.want_on:
        prof.enable()
    try:
        exec(code, globs, None)
    except BaseException as exc:
        error = exc
    else:
        error = None
    if toggle is not None:
        toggle.closing = True  # a store, not a call: nothing is recorded
    # first thing: nothing of fastprof's is recorded (but this call, as
    # cProfile records its disable())
    try:
        prof.disable(this_thread=True)
    except Exception as err:
        failures.append(err)
    if ctrl_c is not None:
        ctrl_c.start()
        if isinstance(error, KeyboardInterrupt):
            ctrl_c.pressed += 1
    if not (threads and prof.enabled and _pending_threads()):
        try:
            prof.disable()
        except Exception as err:
            failures.append(err)
    prof.take_thread_names()
    status = 0
    if isinstance(error, SystemExit):
        status = _exit_status(error)
    elif error is not None:
        _report_exception(error)
        status = 130 if isinstance(error, KeyboardInterrupt) else 1
    return status
