"""What both command lines share: ``python -m fastprof`` (run_cli.py) and
``fastprof`` (cli.py) report usage errors, choose output formats, check
output paths and describe the formats the same way, from the one table
below.

``python -m fastprof`` imports this before the profiled program runs: it
must import nothing the program could notice (os and sys only).
"""

import os
import sys


class UsageError(ValueError):
    """A command-line mistake: reported on one line, exit status 2."""


def report(prog, exc):
    """Print a usage error as one line: ``PROG: error: message``."""
    print("%s: error: %s" % (prog, exc), file=sys.stderr)


def check_run_options(options):
    """The run options (--clock, --coroutines, --max-depth, --min-percent)
    that Profile and the exports check too, by the same functions
    (arguments.py): UsageError with their message.  python -m fastprof,
    fastprof attach and %fastprof all parse them."""
    from . import arguments
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


# -- output formats ------------------------------------------------------------

# The one table of output formats: (format, name suffixes, name prefixes, read by).
# A name that matches no row is written as pstats, as cProfile writes any name.
FORMAT_TABLE = (
    ("pstats", (".prof", ".pstats"), (),
     "cProfile's format (+ fastprof's trailer): pstats, snakeviz, gprof2dot, tuna"),
    ("callgrind", (".callgrind",), ("callgrind.out",), "KCachegrind / QCachegrind"),
    ("speedscope", (".speedscope.json",), (), "https://www.speedscope.app"),
    ("collapsed", (".collapsed", ".folded"), (), "flamegraph.pl / inferno folded stacks"),
    ("html", (".html", ".htm"), (), "one self-contained HTML report (works offline)"),
    ("pprof", (".pb.gz",), (), "go tool pprof, Pyroscope, Parca, Grafana (gzip'd profile.proto)"),
    # the Firefox Profiler reads any .json: no name of its own, --to gecko only
    ("gecko", (), (), "Firefox Profiler, https://profiler.firefox.com (JSON; --to only)"),
)

FORMATS = tuple(row[0] for row in FORMAT_TABLE)

# formats drawn from the calling-context tree (python -m fastprof -o implies --callpaths)
TREE_FORMATS = ("speedscope", "collapsed", "html", "pprof", "gecko")
# those of them that fold the paths below --min-percent into their callers
FOLDED_FORMATS = ("speedscope", "collapsed", "html")

# "-o -": the profile goes to stdout (the format must then be given)
STDOUT = "-"


def _name_forms(suffixes, prefixes):
    return list(suffixes) + ["%s*" % p for p in prefixes]


def known_names():
    """The file names that choose a format, for messages: '.prof, .pstats, ...'."""
    return ", ".join(n for _f, s, p, _r in FORMAT_TABLE for n in _name_forms(s, p))


def format_for_name(path):
    """The format a file name asks for, or None if it names none (then: pstats)."""
    name = os.path.basename(os.fspath(path)).lower()
    for fmt, suffixes, prefixes, _reader in FORMAT_TABLE:
        if name.endswith(suffixes) or (prefixes and name.startswith(prefixes)):
            return fmt
    return None


def check_format(fmt):
    """*fmt* if it is a known format name; UsageError otherwise."""
    if fmt not in FORMATS:
        raise UsageError("unknown format %r; known formats: %s" % (fmt, ", ".join(FORMATS)))
    return fmt


def output_format(path, to=None):
    """The format to write *path* in: *to* if given, else from the name, else pstats."""
    if to is not None:
        return check_format(to)
    if path == STDOUT:
        raise UsageError("writing to stdout ('-o -') needs --to FORMAT (one of %s)"
                         % ", ".join(FORMATS))
    return format_for_name(path) or "pstats"


def formats_help():
    """The help text of the output formats, made from the table."""
    rows = [(fmt, " ".join(_name_forms(s, p)), reader) for fmt, s, p, reader in FORMAT_TABLE]
    w1 = max(len(r[0]) for r in rows)
    w2 = max(len(r[1]) for r in rows)
    lines = ["output formats (-o chooses by the file name, --to FORMAT by name):"]
    lines += ["  %-*s  %-*s  %s" % (w1, f, w2, n, r) for f, n, r in rows]
    lines += ["  any other name (out.txt, restats, x.fprof) is written as pstats, as",
              "  cProfile writes it; -o - writes to stdout (with --to).",
              "speedscope, collapsed, the HTML flame graph, pprof and gecko draw the",
              "call paths recorded with --callpaths (implied when -o or --to names one",
              "of them); for a profile without them they draw a tree estimated from",
              "the caller graph (pprof: label call_stacks=estimated)."]
    return "\n".join(lines) + "\n"


# -- output paths ----------------------------------------------------------------

def same_file(a, b):
    """True if paths *a* and *b* name the same existing file."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_output_path(path, inputs=()):
    """UsageError unless *path* can be written (checked, not created) and is
    none of *inputs* (the profile read, or the script being profiled)."""
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
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError("cannot write %s: directory %s is not writable" % (path, parent))


def write_output(data, path, fmt, title=None, min_percent=None):
    """Write profile *data* (a ProfileData) to *path* ('-': stdout) in *fmt*;
    *min_percent*: exports.export's cut of small call paths."""
    from fastprof import exports
    if path != STDOUT:
        exports.export(data, path, fmt, title=title, min_percent=min_percent)
    elif fmt in exports.BINARY_FORMATS:
        sys.stdout.flush()
        sys.stdout.buffer.write(exports.render_bytes(data, fmt, title=title))
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(exports.render(data, fmt, title=title, min_percent=min_percent))
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
