"""``python -m fastprof``: cProfile's command line, on fastprof.

    python -m fastprof [options] script.py [args ...]
    python -m fastprof [options] -m module [args ...]

The profiled program sees what it sees under ``python -m cProfile`` of the
same Python version (``sys.argv``, ``__name__``, ``__file__``, ``__spec__``,
``sys.path[0]``).  Its exit status is kept (cProfile exits 0 after
``sys.exit(n)``), and the stats are printed or written however it ends.

Usage errors (missing script or module, bad option, unwritable or unknown
output file) are reported on one line, before the program runs, with exit
status 2.
"""

import argparse
import io
import os
import sys
import traceback

# --threads is on by default on the command line: one switch to flip
DEFAULT_THREADS = True

# cProfile's own default for -s on this Python: -1 (stdname) up to 3.10,
# 2 (cumulative) from 3.11 on
DEFAULT_SORT = 2 if sys.version_info >= (3, 11) else -1

# -o names that mean "pstats" when fastprof.exports does not claim them:
# cProfile writes pstats whatever the name; these are the names people use
_PSTATS_EXTENSIONS = frozenset(("", ".prof", ".pstats", ".pstat", ".cprof", ".cprofile",
                                ".profile", ".stats", ".out", ".dat", ".data", ".bin"))

PROG = "python -m fastprof"

USAGE = ("%s [-o FILE] [-s SORT] [--threads | --no-threads] [--per-thread] "
         "[--clock {wall,cpu}] [--coroutines {call,wall}] [--callpaths] "
         "[--max-depth N] [--no-builtins] (-m module | script.py) [args ...]" % PROG)

DESCRIPTION = """\
Run a Python script or module under fastprof, then print its profile (a
pstats table, as python -m cProfile prints) or write it to a file.
Everything after the script name or -m module goes to the program."""

EPILOG = """\
output formats (-o, chosen by the file name):
  .prof, .pstats, no extension   pstats, as cProfile writes (pstats,
                                 snakeviz, gprof2dot, tuna read it)
  .callgrind, callgrind.out.*    KCachegrind / QCachegrind
  .speedscope.json               https://www.speedscope.app
  .collapsed, .folded            folded stacks for flamegraph.pl / inferno
  .html                          one self-contained HTML report

examples:
  python -m fastprof myscript.py arg1 arg2
  python -m fastprof -s tottime myscript.py
  python -m fastprof -o out.prof -m mypackage.tool --verbose
  python -m fastprof --callpaths -o flame.html myscript.py
  python -m fastprof --per-thread --clock cpu server.py
  python -m pstats out.prof            # browse a written profile

The program's exit status is passed through (sys.exit(3) exits 3, an
uncaught exception exits 1 after its traceback); the profile is printed or
written in every case. Usage errors exit 2 before the program runs."""


class UsageError(Exception):
    """A command-line mistake: reported on one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def sort_keys():
    """The valid -s values: pstats' sort keys, plus -1 (cProfile's 'stdname')."""
    import pstats
    return sorted(pstats.Stats.sort_arg_dict_default) + ["-1"]


def _parse_sort(text):
    keys = sort_keys()
    parts = [p.strip() for p in text.split(",")]
    for p in parts:
        if p not in keys:
            raise UsageError("unknown sort key %r; valid keys: %s" % (p, ", ".join(keys)))
    return tuple(-1 if p == "-1" else p for p in parts)


def build_parser():
    p = _Parser(prog=PROG, usage=USAGE, description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("-o", "--outfile", metavar="FILE",
                   help="write the profile to FILE instead of printing it; the format "
                        "follows the file name (see below). Nothing is printed then "
                        "but what the program prints.")
    p.add_argument("-s", "--sort", metavar="SORT",
                   help="sort order of the printed table: one of %s, or several "
                        "separated by commas (default: %s, as cProfile on this Python)"
                        % (", ".join(sort_keys()),
                           "cumulative" if DEFAULT_SORT == 2 else "-1 (stdname)"))
    p.add_argument("-m", dest="module", action="store_true",
                   help="profile a library module, as python -m runs it "
                        "(-m module [args ...])")
    p.add_argument("--threads", dest="threads", action="store_true",
                   default=DEFAULT_THREADS,
                   help="profile every thread of the program%s"
                        % (" (default)" if DEFAULT_THREADS else ""))
    p.add_argument("--no-threads", dest="threads", action="store_false",
                   help="profile only the main thread, as cProfile does%s"
                        % ("" if DEFAULT_THREADS else " (default)"))
    p.add_argument("--per-thread", action="store_true",
                   help="print one table per thread instead of one merged table "
                        "(the threads are in the -o .prof file anyway)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="wall: elapsed time (default); cpu: CPU time of each thread")
    p.add_argument("--coroutines", choices=("call", "wall"), default="call",
                   help="call: each resume of a generator/coroutine is a call, as in "
                        "cProfile (default); wall: one call from start to finish")
    p.add_argument("--callpaths", action="store_true",
                   help="also record the calling-context tree, stored in the .prof "
                        "trailer (implied by -o .html, .speedscope.json, .collapsed/.folded)")
    p.add_argument("--max-depth", type=int, default=128, metavar="N",
                   help="with --callpaths, cut call paths deeper than N (default 128)")
    p.add_argument("--no-builtins", dest="builtins", action="store_false",
                   help="do not profile C functions (len, list.append, ...)")
    return p


# options that take a value, for splitting argv at the program's name
_VALUE_SHORT = ("-o", "-s")
_VALUE_LONG = ("--outfile", "--sort", "--clock", "--coroutines", "--max-depth")


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

# -o formats drawn from the calling-context tree: --callpaths is implied
TREE_FORMATS = ("html", "speedscope", "collapsed")


def output_format(path):
    """The output format for -o PATH: 'pstats' or a fastprof.exports format."""
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1].lower()
    try:
        from fastprof import exports
    except ImportError as exc:
        if ext in _PSTATS_EXTENSIONS or ext[1:].isdigit():
            return "pstats"
        raise UsageError("cannot write %r: only pstats output (.prof) is available "
                         "here (%s)" % (name, exc))
    try:
        return exports.format_for_path(path)
    except ValueError:
        if ext in _PSTATS_EXTENSIONS or ext[1:].isdigit():
            return "pstats"
        raise UsageError("cannot tell the output format from %r; use .prof or .pstats "
                         "(pstats), .callgrind or callgrind.out.* (callgrind), "
                         ".speedscope.json, .collapsed or .folded, .html" % name)


def check_output_path(path):
    """Raise UsageError unless *path* can be written (checked, not created)."""
    if os.path.isdir(path):
        raise UsageError("cannot write %s: it is a directory" % path)
    parent = os.path.dirname(path) or "."
    if not os.path.exists(parent):
        raise UsageError("cannot write %s: directory %s does not exist" % (path, parent))
    if not os.path.isdir(parent):
        raise UsageError("cannot write %s: %s is not a directory" % (path, parent))
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise UsageError("cannot write %s: permission denied" % path)
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError("cannot write %s: directory %s is not writable" % (path, parent))


def _find_quietly(modname):
    """True if *modname* (and for a package, its __main__) can be found
    without running any package's ``__init__``: parents are looked up in
    their ``__path__`` as the import system would, but not imported."""
    import importlib.util
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
    """
    if _find_quietly(modname):
        return
    import runpy
    try:
        runpy._get_module_details(modname)  # what runpy.run_module itself uses
    except ImportError as exc:
        raise UsageError(str(exc))
    except AttributeError:  # pragma: no cover - a Python without it
        return
    except SyntaxError:
        pass  # reported with its traceback when the module runs, as python does


def check_script(progname):
    if not os.path.exists(progname):
        raise UsageError("can't open file %r: No such file or directory" % progname)
    if os.path.isdir(progname):
        raise UsageError("can't run %r: it is a directory (use -m for a package)"
                         % progname)


# -- running -------------------------------------------------------------------

def _prepare(options, args):
    """cProfile's main(): set sys.argv and sys.path, return (code, globals)."""
    import runpy
    sys.argv[:] = args
    if options.module:
        code = "run_module(modname, run_name='__main__')"
        globs = {"run_module": runpy.run_module, "modname": args[0]}
        return code, globs
    progname = args[0]
    sys.path.insert(0, os.path.dirname(progname))
    with io.open_code(progname) as fp:
        code = compile(fp.read(), progname, "exec")
    if sys.version_info >= (3, 12):
        import importlib.machinery
        spec = importlib.machinery.ModuleSpec(name="__main__", loader=None, origin=progname)
        globs = {"__spec__": spec, "__file__": spec.origin, "__name__": spec.name,
                 "__package__": None, "__cached__": None}
    else:
        globs = {"__file__": progname, "__name__": "__main__",
                 "__package__": None, "__cached__": None}
    return code, globs


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
    here = os.path.dirname(os.path.abspath(__file__))
    skip = {os.path.abspath(runpy.__file__), "<frozen runpy>", "<string>"}
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if os.path.dirname(os.path.abspath(filename)) == here:
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
        traceback.print_exception(type(exc), exc, tb)


def _pending_threads():
    """The program's non-daemon threads still running: python waits for them."""
    import threading
    me = threading.current_thread()
    return [t for t in threading.enumerate()
            if t is not me and t is not threading.main_thread() and not t.daemon]


def _join_threads(threads):
    try:
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        pass


def _write_output(prof, options, fmt):
    if fmt == "pstats":
        prof.dump_stats(options.outfile)
    else:
        from fastprof import exports
        exports.export(prof.profile_data(), options.outfile)


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


def _print_output(prof, options):
    _usable_stdout()
    if not options.per_thread:
        prof.print_stats(options.sort)
        return
    prof.disable()
    for tid, ident, name, stats in prof.thread_stats():
        print("=== thread %s (id %d, ident %d) ===" % (name, tid, ident))
        prof.print_stats(options.sort, thread=tid)
    sys.stdout.flush()


def main(argv=None):
    """Run the command line; return the exit status."""
    if argv is None:
        argv = sys.argv[1:]
    argv = list(argv)
    parser = build_parser()
    try:
        opts, args = split_argv(argv)
        try:
            options = parser.parse_args(opts)
        except SystemExit as exc:  # --help
            return exc.code or 0
        if not args:
            if options.module:
                raise UsageError("-m needs a module name")
            parser.print_usage(sys.stderr)
            return 2
        options.sort = _parse_sort(options.sort) if options.sort is not None else DEFAULT_SORT
        if options.max_depth < 1:
            raise UsageError("--max-depth must be at least 1, not %d" % options.max_depth)
        fmt = None
        if options.outfile is not None:
            # the program may chdir: fix the path now, as cProfile does
            options.outfile = os.path.abspath(options.outfile)
            fmt = output_format(options.outfile)
            check_output_path(options.outfile)
        if options.module:
            check_module(args[0])
        else:
            check_script(args[0])
    except UsageError as exc:
        print("%s: error: %s" % (PROG, exc), file=sys.stderr)
        return 2

    from fastprof.profiler import Profile
    try:
        code, globs = _prepare(options, args)
    except SyntaxError as exc:
        traceback.print_exception(type(exc), exc, None)
        return 1
    except OSError as exc:
        print("%s: error: can't open file %r: %s" % (PROG, args[0], exc.strerror or exc),
              file=sys.stderr)
        return 2

    # formats that draw the call tree get exact call paths without asking
    callpaths = options.callpaths or fmt in TREE_FORMATS
    prof = Profile(builtins=options.builtins, threads=options.threads, clock=options.clock,
                   coroutines=options.coroutines, callpaths=callpaths,
                   max_depth=options.max_depth)
    failures = []
    status = run_program(prof, code, globs, options.threads, failures)
    for err in failures:
        print("%s: profiling stopped early: %s: %s; the profile is partial"
              % (PROG, type(err).__name__, err), file=sys.stderr)
        status = status or 1
    try:
        if options.outfile is not None:
            _write_output(prof, options, fmt)
        else:
            _print_output(prof, options)
    except BrokenPipeError as exc:
        # as cProfile: no "Exception ignored" at interpreter shutdown
        sys.stdout = None
        return exc.errno
    except OSError as exc:
        print("%s: error: cannot write %s: %s" % (PROG, options.outfile, exc.strerror or exc),
              file=sys.stderr)
        return status or 1
    return status


def run_program(prof, code, globs, wait_threads, failures):
    """Run the program under *prof*; return its exit status.

    Its exception, if any, is reported as python would report it; profiler
    failures go to *failures*.  With *wait_threads*, the program's
    non-daemon threads are waited for (still profiled), as python waits for
    them before it exits.
    """
    prof.enable()
    try:
        exec(code, globs, None)
    except BaseException as exc:
        error = exc
    else:
        error = None
    try:
        prof.disable()
    except Exception as err:
        failures.append(err)
    prof._remember_thread_names()
    status = 0
    if isinstance(error, SystemExit):
        status = _exit_status(error)
    elif error is not None:
        _report_exception(error)
        status = 130 if isinstance(error, KeyboardInterrupt) else 1
    error = None
    pending = _pending_threads() if wait_threads else []
    if pending:
        try:
            prof.enable()
        except Exception as err:  # the program left another profiler on
            failures.append(err)
            return status
        _join_threads(pending)
        try:
            prof.disable()
        except Exception as err:
            failures.append(err)
    return status
