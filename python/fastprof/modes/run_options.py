"""What the command lines share: ``python -m fastprof`` (run_cli.py),
``fastprof`` (cli.py, attach.py), %fastprof and the pytest plugin declare
and check the run options, report usage errors, choose output formats,
check output paths and describe the formats the same way, from the tables
below.

``python -m fastprof`` imports this before the profiled program runs: it
must import nothing the program could notice (os and sys only).
"""

import os
import sys

from ..data import arguments, formats


class UsageError(ValueError):
    """A command-line mistake: reported on one line, exit status 2."""


def report(prog, exc):
    """Print a usage error as one line: ``PROG: error: message``."""
    print("%s: error: %s" % (prog, exc), file=sys.stderr)


# -- the run options -----------------------------------------------------------

# The options of a profiling run, declared once for python -m fastprof
# (optparse), fastprof attach (argparse) and %fastprof (python -m fastprof's
# parser); the pytest plugin declares the few it takes itself (see there):
# (flags, dest, action, type, default, metavar, help).  The help is plain
# text: add_run_options escapes '%' for argparse.
RUN_OPTIONS = (
    (("--threads",), "threads", "store_true", None, True, None,
     "profile every thread of the program (default)"),
    (("--no-threads",), "threads", "store_false", None, True, None,
     "profile only the main thread, as cProfile does"),
    # --clock and --coroutines are checked by check_run_options, by the checks Profile uses
    (("--clock",), "clock", "store", None, "wall", "CLOCK",
     "wall: elapsed time (default); cpu: CPU time of each thread"),
    (("--coroutines",), "coroutines", "store", None, "call", "MODE",
     "call: each resume of a generator/coroutine is a call, as in cProfile (default); "
     "wall: one call from start to finish"),
    (("--callpaths",), "callpaths", "store_true", None, False, None,
     "also record the calling-context tree, stored in the .prof trailer (implied when -o "
     "or --to asks for a format drawn from it: %s)" % formats.said(formats.TREE_FORMATS, "or")),
    (("--max-depth",), "max_depth", "store", int, 128, "N",
     "with --callpaths, cut call paths deeper than N (default 128)"),
    (("--no-builtins",), "builtins", "store_false", None, None, None,
     "do not profile C functions (len, list.append, ...)"),
    (("--fast",), "fast", "store_true", None, False, None,
     "Python functions only, through a frame evaluator (PEP 523): much cheaper, counts "
     "as cProfile with builtins=False; C functions' time is their callers' own time "
     "(implies --no-builtins; --coroutines call only; not with --lines or --only)"),
    (("--min-percent",), "min_percent", "store", float, None, "P",
     "%s output: fold call paths below P%% of the total time into their callers "
     "(default 0.01; 0 keeps all)" % formats.said(formats.FOLDED_FORMATS, "or")),
    (("--lines",), "lines", "append", None, [], "PATTERN",
     "line by line: each line's hits and time in the functions PATTERN names: "
     "MODULE[:QUALNAME] with shell wildcards (myapp: the package and all its submodules; "
     "myapp.db:Query.*; the script answers to its "
     "file's stem: prog:hot) or a file path glob (src/app/*.py). Repeatable. Printed after "
     "the table; with -o, stored in the .prof (fastprof view FILE --lines)"),
    (("--lines-from",), "lines_from", "store", None, None, "OLD.prof[:N]",
     "line by line for the N functions (default 10) with the most own time in an earlier "
     "profile OLD.prof"),
    (("--only",), "only", "append", None, [], "PATTERN",
     "record only the functions PATTERN names (the --lines syntax: myapp is the package "
     "myapp and all its submodules) and the C functions "
     "they call; the time of calls into other Python code stays in the caller's own "
     "time. Repeatable"),
    (("--gc",), "gc", "store_true", None, True, None,
     "record garbage collections as calls of <gc> from the function running when each "
     "started (default)"),
    (("--no-gc",), "gc", "store_false", None, True, None,
     "leave collection pauses in the allocating function's time, as cProfile does"),
    (("--memory",), "memory", "store_true", None, False, None,
     "also count what each function allocates through Python's allocators (bytes itself "
     "and with its callees, still alive at the end, the peak of one call, its share of "
     "the process's peak): printed after the table; with -o FILE.prof, kept in the file "
     "(fastprof view FILE --memory)"),
    (("--no-compensate",), "compensate", "store_false", None, True, None,
     "raw times, as cProfile's: leave the profiler's own cost in them (by default it is "
     "measured and taken out of every time, and the header says how much)"),
)

# the default of each run option, by dest
RUN_DEFAULTS = {dest: default for _f, dest, _a, _t, default, _m, _h in RUN_OPTIONS}

# the run options that take a value (for splitting a command line)
RUN_VALUE_OPTIONS = tuple(flags[-1] for flags, _d, action, *_ in RUN_OPTIONS
                          if action in ("store", "append"))


def add_run_options(add, argparse_style):
    """Declare the run options with *add*: optparse's ``add_option``, or
    argparse's ``add_argument`` with *argparse_style* (whose help is a %-format)."""
    for flags, dest, action, kind, default, metavar, text in RUN_OPTIONS:
        kwargs = {"dest": dest, "action": action,
                  "default": list(default) if isinstance(default, list) else default,
                  "help": text.replace("%", "%%") if argparse_style else text}
        if metavar is not None:
            kwargs["metavar"] = metavar
        if kind is not None:
            kwargs["type"] = kind if argparse_style else kind.__name__
        add(*flags, **kwargs)


def check_run_options(options):
    """The run options (--clock, --coroutines, --max-depth, --min-percent,
    --lines, --lines-from, --only, --fast) that Profile and the exports check
    too, by the same functions (arguments.py): UsageError with their message.
    python -m fastprof, fastprof attach and %fastprof parse them all (the
    pytest plugin its few: check_scope_options).  Sets ``options.line_keys``:
    --lines-from's functions."""
    try:
        arguments.check_choice("--clock", options.clock, arguments.CLOCKS)
        arguments.check_choice("--coroutines", options.coroutines, arguments.COROUTINE_MODES)
        arguments.check_max_depth("--max-depth", options.max_depth)
        if options.min_percent is not None:
            arguments.check_percent("--min-percent", options.min_percent)
        if getattr(options, "fast", False) and options.coroutines == "wall":
            raise ValueError("--fast supports --coroutines call only")
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    check_scope_options(options)


def check_scope_options(options, name=lambda option: option):
    """Check --lines, --lines-from, --only and --fast (*name*: how an option
    is spelled here); set ``options.line_keys``, --lines-from's pstats keys."""
    options.line_keys = []
    if options.fast and (options.lines or options.lines_from is not None or options.only):
        used = ("--lines" if options.lines else "--lines-from"
                if options.lines_from is not None else "--only")
        raise UsageError("%s cannot be combined with %s (not supported yet)"
                         % (name("--fast"), name(used)))
    _check_patterns(name("--lines"), options.lines)
    _check_patterns(name("--only"), options.only)
    if options.lines_from is None:
        return
    from ..data.profile_file import ProfileFileError  # (deferred: nothing before the program)
    from ..recording.line_profiling import parse_lines_from, top_functions  # (deferred: nothing before the program)
    try:
        path, n = parse_lines_from(options.lines_from)
        keys = top_functions(path, n)
    except (ValueError, ProfileFileError) as exc:
        raise UsageError("%s: %s" % (name("--lines-from"), exc)) from None
    if not keys:
        raise UsageError("%s: %s has no Python functions" % (name("--lines-from"), path))
    options.line_keys = keys


def _check_patterns(option, patterns):
    if not patterns:
        return  # (func_patterns imports fnmatch: not without the option)
    from ..recording.func_patterns import parse_pattern  # (deferred: nothing before the program)
    for text in patterns:
        try:
            parse_pattern(text)
        except ValueError as exc:
            raise UsageError("%s: %s" % (option, exc)) from None


def profile_options(options, callpaths):
    """Profile's keyword arguments for the parsed run options (a dict: the
    attach agent gets it as text), --lines-from's functions under
    ``line_keys``; new_profile() makes the profiler."""
    return {"builtins": options.builtins, "threads": options.threads,
            "clock": options.clock, "coroutines": options.coroutines,
            "callpaths": callpaths, "max_depth": options.max_depth, "gc": options.gc,
            "lines": options.lines if options.lines or options.line_keys else None,
            "only": options.only or None, "fast": options.fast,
            "compensate": getattr(options, "compensate", True),
            "memory": getattr(options, "memory", False),
            "line_keys": list(options.line_keys)}


def new_profile(kwargs, main_alias=None):
    """The Profile profile_options() describes; *main_alias*: the name
    ``__main__`` also answers to in the patterns (the script's stem;
    default: the running ``__main__``'s, func_patterns.script_stem).
    UsageError if the Profile refuses them (--fast where unavailable)."""
    from ..recording.profiler import Profile  # (deferred: nothing before the program)
    kwargs = dict(kwargs)
    line_keys = kwargs.pop("line_keys", ())
    try:
        prof = Profile(**kwargs)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    if main_alias is not None:  # (else the Profile's own: the running script's stem)
        prof.set_main_alias(main_alias)
    prof.add_line_keys(line_keys)
    return prof


def unmatched_patterns(prof, name=lambda option: option):
    """One line for each --lines or --only pattern that named no function
    that ran, and for --lines-from's functions that did not run (a typo
    must not pass for a function that never ran)."""
    out = ["%s %s: no function that ran matches it" % (name("--lines"), text)
           for text in prof.unmatched_line_patterns()]
    out += ["%s %s: no function that ran matches it" % (name("--only"), text)
            for text in prof.unmatched_only_patterns()]
    missed, count = prof.unmatched_line_keys()
    if missed:
        out.append("%s: %d of its %d functions did not run: %s" % (
            name("--lines-from"), len(missed), count,
            ", ".join("%s:%d(%s)" % (os.path.basename(f), n, fn) for f, n, fn in missed[:3])
            + (", ..." if len(missed) > 3 else "")))
    return out


def print_line_listings(lines, stats, qualnames, own=None, memory=None):
    """Print the --lines listings after the table (nothing without them);
    *own*: the lines' own times where known; *memory*: their bytes."""
    if not lines:
        return
    from ..tools.line_view import listings  # (deferred: nothing before the program)
    from ..tools.view import micro_sign  # (deferred: nothing before the program)
    out = listings(lines, stats, qualnames, micro=micro_sign(sys.stdout), own=own, memory=memory)
    print("\nLine by line (time of a line: from its start to the next line or the "
          "function's exit, callees included; own: less them%s)\n"
          % ("; alloc: bytes allocated meanwhile, callees included; net: the change of live "
             "bytes" if memory else ""))
    print("\n".join(out))


def print_memory(rows, totals, qualnames):
    """Print the memory table after the time table (--memory): the
    process's traced bytes, then the functions that allocated most."""
    from ..tools.memory_view import memory_table, totals_line  # (deferred: nothing before the program)
    print(totals_line(totals))
    print()
    print("\n".join(memory_table(rows, qualnames=qualnames) if rows else ["no function allocated anything"]))


# -- output formats ------------------------------------------------------------

# The formats are fastprof.data.formats' table (its ValueErrors become usage errors here).

# "-o -": the profile goes to stdout (the format must then be given)
STDOUT = "-"


def check_format(fmt):
    """*fmt* if it is a known format name; UsageError otherwise."""
    return _row(fmt).name


def _row(fmt):
    try:
        return formats.check_format(fmt)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def output_row(path, to=None):
    """The row of the format to write *path* in: *to* if given, else from
    the name, else pstats (pass it to write_output: looked up once)."""
    if to is not None:
        return _row(to)
    if path == STDOUT:
        raise UsageError("writing to stdout ('-o -') needs --to FORMAT (one of %s)"
                         % ", ".join(formats.FORMATS))
    return formats.row_for_name(path) or formats.BY_NAME["pstats"]


def output_format(path, to=None):
    """The name of the format to write *path* in (output_row)."""
    return output_row(path, to).name


# -- output paths ----------------------------------------------------------------

def same_file(a, b):
    """True if paths *a* and *b* name the same existing file."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_output_path(path, inputs=()):
    """UsageError unless *path* can be written (a file created beside it and
    removed: nothing is left, an existing *path* is untouched) and is none of
    *inputs* (the profile read, or the script being profiled)."""
    if path == STDOUT:
        return
    for other in inputs:
        if other is not None and same_file(path, other):
            raise UsageError("refusing to overwrite the input file %s" % other)
    if os.path.isdir(path):
        raise UsageError("cannot write %s: it is a directory" % path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(parent):
        raise UsageError("cannot write %s: directory %s does not exist" % (path, parent))
    if not os.path.isdir(parent):
        raise UsageError("cannot write %s: %s is not a directory" % (path, parent))
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise UsageError("cannot write %s: permission denied" % path)
        if not os.path.isfile(path):
            return  # a device or FIFO (/dev/stdout): written in place
    # what the write will do (atomic_file.py): create a file beside it,
    # tried now and removed (os.access says yes to root, and to /proc or /sys)
    from ..data.atomic_file import create_beside  # (deferred: nothing before the program)
    try:
        tmp, f = create_beside(path)
    except OSError as exc:
        raise UsageError("cannot write %s: %s" % (path, exc.strerror or exc)) from None
    f.close()
    try:
        os.unlink(tmp)
    except OSError:
        pass


def write_output(data, path, fmt, title=None, min_percent=None):
    """Write profile *data* (a ProfileData) to *path* ('-': stdout) in *fmt*
    (a format's name or its row, output_row); *min_percent*: exports.export's
    cut of small call paths."""
    from .. import exports  # (deferred: nothing before the program)
    row = formats.check_format(fmt)  # (looked up once: the row goes on)
    if path != STDOUT:
        exports.export(data, path, row, title=title, min_percent=min_percent)
    elif row.binary:
        sys.stdout.flush()
        sys.stdout.buffer.write(exports.render_bytes(data, row, title=title))
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(exports.render(data, row, title=title, min_percent=min_percent))
        sys.stdout.flush()


# -- sort keys -----------------------------------------------------------------

def cprofile_sort_keys():
    """``python -m fastprof -s`` keys: cProfile's exactly (pstats' keys, and -1)."""
    import pstats  # python -m cProfile imports it too
    return sorted(pstats.Stats.sort_arg_dict_default) + ["-1"]


def parse_cprofile_sort(text):
    """A ``-s`` value (keys separated by commas) as a tuple for print_stats."""
    keys = cprofile_sort_keys()
    parts = [p.strip() for p in text.split(",")]
    for p in parts:
        if p not in keys:
            # cProfile's words (its optparse choice check), which scripts may match
            raise UsageError("option -s: invalid choice: %r (choose from %s)"
                             % (p, ", ".join(repr(k) for k in keys)))
    return tuple(-1 if p == "-1" else p for p in parts)


# where the two commands differ, said in both helps
SORT_NOTE = ("python -m fastprof -s takes cProfile's keys exactly (and several, "
             "comma-separated); fastprof view -s takes one key: the same names but -1, "
             "and also tt, ct, cum, self, primitive, percall and cumpercall.")
