"""The ``fastprof`` command: look at, compare, merge and convert profiles.

    fastprof view out.prof                     # table with human units
    fastprof view out.prof --callers parse     # who calls parse, and how much
    fastprof view out.prof --tree              # the call paths
    fastprof diff before.prof after.prof       # what got slower / faster
    fastprof check before.prof after.prof      # exit 1 if call counts changed (CI gate)
    fastprof merge a.prof b.prof -o all.prof   # sum of several runs
    fastprof convert out.prof -o out.html      # report, flame graph, callgrind...
    fastprof run [options] script.py [args]    # = python -m fastprof
    fastprof attach PID -o live.prof           # a running 3.14+ process, until Ctrl-C
    fastprof top PID                           # a live view of a running 3.14+ process

Every input may be a cProfile file or a fastprof file.  Errors about input
and output files are one line on stderr and exit status 2.  Output formats,
output-path checks and their messages are cmdline's, shared with
``python -m fastprof``.

Only os and sys are imported up front: ``fastprof run`` must leave the
program the interpreter ``python -m fastprof`` leaves it.
"""

import os
import sys

from .data import formats
from .modes import run_options
from .modes.run_options import UsageError

PROG = "fastprof"

class NothingMatched(Exception):
    """A query that matched nothing: one line on stderr, exit status 1."""


# ---------------------------------------------------------------- parser

def _argparse():
    import argparse  # not before it is needed: see the module docstring
    return argparse


def _positive_or_zero(text: str) -> int:
    argparse = _argparse()
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text) from None
    if n < 0:
        raise argparse.ArgumentTypeError("must be 0 (all) or more, not %d" % n)
    return n


def _regex(text: str) -> str:
    import re
    argparse = _argparse()
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError("bad regular expression %r: %s" % (text, exc)) from None
    return text


def _sort(text: str) -> str:
    argparse = _argparse()
    from .tools.view import parse_sort  # (deferred: fastprof run imports nothing before the program)
    try:
        return parse_sort(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _type(check):
    """An argparse type from one of the checks the API runs too, so both say
    the same thing: *check*'s ValueError message, after "argument OPTION:"."""
    def parse(text: str):
        try:
            return check(text)
        except ValueError as exc:
            raise _argparse().ArgumentTypeError(str(exc)) from None
    parse.__name__ = check.__name__
    return parse


def _diff_metric(text: str) -> str:
    from .tools.diff import check_metric  # (deferred: fastprof run imports nothing before the program)
    return check_metric(text)


def _diff_threshold(text: str) -> float:
    from .tools.diff import parse_threshold  # (deferred: fastprof run imports nothing before the program)
    return parse_threshold(text)


def _diff_min_time(text: str) -> str:
    from .tools.diff import parse_min_time  # (deferred: fastprof run imports nothing before the program)
    parse_min_time(text)
    return text


FORMATS_HELP = formats.formats_help()


def _check_tolerance(text: str) -> float:
    from .tools.counts import parse_tolerance  # (deferred: fastprof run imports nothing before the program)
    return parse_tolerance(text)


def build_parser():
    argparse = _argparse()
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Look at, compare, merge and convert cProfile / fastprof profiles, "
                    "or run a program under fastprof.",
        epilog="Run 'fastprof COMMAND --help' for a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version="%(prog)s " + _version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    p = sub.add_parser(
        "view", help="show a profile as a table (or callers, callees, call tree)",
        description="Show a profile as an aligned table: times in ns/\u00b5s/ms/s with their "
                    "percent of the total profiled time (the sum of all tottimes).",
        epilog="sort keys: tottime (time, tt, self), cumtime (cumulative, cum, ct), calls "
               "(ncalls), pcalls (primitive), percall, cumpercall, name, file (filename, "
               "module, nfl, stdname), line.\n" + run_options.SORT_NOTE,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    # (optional to argparse only: `view --lines FILE`, where --lines took the file, is mended in cmd_view)
    p.add_argument("file", metavar="FILE", nargs="?", help="a cProfile or fastprof .prof file")
    p.add_argument("-s", "--sort", type=_sort, default="tottime", metavar="SORT",
                   help="sort key (default: tottime; see below)")
    p.add_argument("-n", "--limit", type=_positive_or_zero, default=30, metavar="N",
                   help="show the first N rows (default 30; 0 = all); with --tree, N lines")
    p.add_argument("--filter", type=_regex, metavar="REGEX",
                   help="only functions whose name or file:line(name) matches REGEX")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--callers", type=_regex, metavar="NAME",
                   help="who called the functions matching NAME (a regex), with the time of each call site")
    g.add_argument("--callees", type=_regex, metavar="NAME",
                   help="what the functions matching NAME (a regex) called, with the time of each")
    g.add_argument("--tree", action="store_true",
                   help="the call paths as an indented tree (estimated for cProfile files)")
    g.add_argument("--lines", nargs="?", const="", type=_regex, metavar="NAME",
                   help="line by line: the source of the functions profiled with "
                        "--lines (all of them, or those matching NAME, a regex) with "
                        "each line's hits, time, time per hit and %% of the function; "
                        "the hottest lines marked >>")
    p.add_argument("--min-percent", type=float, default=1.0, metavar="P",
                   help="--tree: fold paths below P%% of the total (default 1)")
    p.add_argument("--thread", metavar="ID",
                   help="only this thread (id or name) of a profile with per-thread stats")
    p.add_argument("--process", type=int, metavar="PID",
                   help="only this process of a python -m fastprof --subprocesses -o FILE "
                        "run (its profile kept in FILE.processes/PID.prof)")

    p = sub.add_parser(
        "diff", help="compare two profiles: what got slower or faster",
        description="Compare two profiles of the same program: the functions whose tottime, "
                    "cumtime or call count changed most, with absolute and relative change. "
                    "Functions with line stats (--lines) in both profiles also get their changed "
                    "lines: hits changed, or time beyond the same noise, biggest time change "
                    "first, with the source line.")
    p.add_argument("base", metavar="BASE", help="the profile before")
    p.add_argument("new", metavar="NEW", help="the profile after")
    p.add_argument("-s", "--sort", type=_type(_diff_metric), default="tottime", metavar="METRIC",
                   help="rank by the change of this: tottime, cumtime or calls (default: tottime)")
    p.add_argument("-n", "--limit", type=_positive_or_zero, default=20, metavar="N",
                   help="show the first N functions, and of line stats the first N functions "
                        "and N lines of each (default 20; 0 = all)")
    p.add_argument("--threshold", type=_type(_diff_threshold), default=10.0, metavar="PERCENT",
                   help="a time that moved by at most PERCENT of its base value is noise "
                        "(default 10; 0: any change counts). Changed call counts always count")
    p.add_argument("--min-time", type=_type(_diff_min_time), default="1%", metavar="TIME",
                   help="a time that moved by at most TIME is noise too: 2ms, 150us, 0.003 "
                        "(seconds) or 1%% of the larger total (default 1%%)")
    p.add_argument("--full-paths", action="store_true",
                   help="show each function's file as recorded, not relative to its sys.path "
                        "entry (functions pair by relative path and qualified name either way)")

    p = sub.add_parser(
        "check", help="performance gate: fail (exit 1) when call counts changed",
        description="Compare the exact call counts of two profiles of the same program: "
                    "every function's and every caller -> callee edge's (functions paired by "
                    "file relative to its sys.path entry and qualified name, so two installs "
                    "compare; garbage collections left out). Exit status 0 when they match "
                    "within the tolerance, 1 when some changed (listed, biggest change first), "
                    "2 for bad input. For test suites see pytest --fastprof-counts (docs/gate.md).")
    p.add_argument("base", metavar="BASE", help="the profile before (a cProfile or fastprof file)")
    p.add_argument("new", metavar="NEW", help="the profile after")
    p.add_argument("--tolerance", type=_type(_check_tolerance), default=0.0, metavar="PERCENT",
                   help="a Python function's or edge's count may move by PERCENT of its base "
                        "value (default 0: exact)")
    p.add_argument("--c-tolerance", type=_type(_check_tolerance), default=None, metavar="PERCENT",
                   help="the same for C functions and edges into them (default: --tolerance's)")
    p.add_argument("--time", action="store_true",
                   help="also fail when a function's own time moved beyond fastprof diff's "
                        "noise rule (--threshold and --min-time)")
    p.add_argument("--threshold", type=_type(_diff_threshold), default=10.0, metavar="PERCENT",
                   help="--time: a time that moved by at most PERCENT of its base value is "
                        "noise (default 10)")
    p.add_argument("--min-time", type=_type(_diff_min_time), default="1%", metavar="TIME",
                   help="--time: a time that moved by at most TIME is noise too: 2ms, 150us, "
                        "0.003 (seconds) or 1%% of the larger total (default 1%%)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text",
                   help="text (default), markdown (e.g. >> \"$GITHUB_STEP_SUMMARY\") or json")
    p.add_argument("-n", "--limit", type=_positive_or_zero, default=30, metavar="N",
                   help="list the first N changes of each kind (default 30; 0 = all; json: all)")

    p = sub.add_parser(
        "merge", help="add profiles together (counts, times, callers, call paths)",
        description="Add profiles together: calls, times and callers are summed; call paths "
                    "are merged path by path when every input has them.",
        epilog=FORMATS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="FILE",
                   help="profiles to add; a directory adds its .prof files (the per-request "
                        "profiles of fastprof.middleware, say)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="where to write the sum (pstats unless the name or --to says "
                        "otherwise; '-' for stdout, with --to)")
    p.add_argument("--to", metavar="FORMAT",
                   help="output format: %s (default: from OUT's name)" % ", ".join(formats.FORMATS))

    p = sub.add_parser(
        "convert", help="write a profile as HTML, callgrind, speedscope, collapsed stacks...",
        description="Write a profile in another format.",
        epilog=FORMATS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="a cProfile or fastprof .prof file")
    p.add_argument("--to", metavar="FORMAT",
                   help="output format: %s (default: from OUT's name)" % ", ".join(formats.FORMATS))
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the file to write (pstats for a name no format claims; "
                        "'-' for stdout, with --to)")
    p.add_argument("--min-percent", type=float, default=None, metavar="P",
                   help="html, speedscope, collapsed: fold call paths below P%% of the total "
                        "time into their callers (default 0.01; 0 keeps every path)")

    from .modes.attach import add_parser as add_attach_parser  # (deferred: fastprof run imports nothing before the program)
    add_attach_parser(sub, argparse.RawDescriptionHelpFormatter)
    from .modes.top import add_parser as add_top_parser  # (deferred: fastprof run imports nothing before the program)
    add_top_parser(sub, argparse.RawDescriptionHelpFormatter)

    sub.add_parser(
        "run", add_help=False,
        help="run a script or module under fastprof (same as python -m fastprof; "
             "'fastprof run --help' for its options)")
    return parser


def _version() -> str:
    from . import __version__  # (deferred: fastprof run imports nothing before the program)
    return __version__


# ---------------------------------------------------------------- commands

def _load(path):
    from .data.profile_file import load_profile  # (deferred: fastprof run imports nothing before the program)
    data = load_profile(path)  # ProfileFileError: reported by main()
    if data.damaged:
        print("%s: warning: %s: %s" % (PROG, path, data.damaged), file=sys.stderr)
    return data


def _say(lines):
    out = sys.stdout
    out.write("\n".join(lines))
    out.write("\n")


def _check_min_percent(args) -> None:
    """--min-percent, checked as python -m fastprof and the exports check it."""
    from .data.arguments import check_percent  # (deferred: fastprof run imports nothing before the program)
    if args.min_percent is not None:
        try:
            check_percent("--min-percent", args.min_percent)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def _process_file(path, pid):
    """The file to show: *path*, or with --process PID, that process's profile."""
    if pid is None:
        return path
    from .modes.subprocesses import PROCESSES_SUFFIX, process_profiles  # (deferred)
    files = process_profiles(path)
    if not files:
        raise UsageError("%s has no per-process profiles (no %s%s/ directory: they are "
                         "kept by python -m fastprof --subprocesses -o FILE)"
                         % (path, path, PROCESSES_SUFFIX))
    if pid not in files:
        raise UsageError("no process %d in %s; its processes: %s"
                         % (pid, path, ", ".join(str(p) for p in sorted(files))))
    return files[pid]


def cmd_view(args) -> int:
    from .data.model import by_match_key  # (deferred: fastprof run imports nothing before the program)
    from .data.profile_file import ProfileData  # (deferred: fastprof run imports nothing before the program)
    from .tools import view  # (deferred: fastprof run imports nothing before the program)
    _check_min_percent(args)
    if args.file is None:
        # `fastprof view --lines x.prof`: --lines takes an optional NAME, and took the file
        if not (args.lines and os.path.isfile(args.lines)):
            raise UsageError("the following arguments are required: FILE")
        args.file, args.lines = args.lines, ""
    data = _load(_process_file(args.file, args.process))
    micro = view.micro_sign(sys.stdout)
    try:
        stats, what = view.select_stats(data, args.thread)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    name = args.file + (" process %d" % args.process if args.process is not None else "")
    name += " " + what if what else ""
    nthreads = view.threads_selected(data, args.thread)
    shown = by_match_key(stats)  # C functions named with an address: one row
    lines = [view.summary_line(name, shown, micro, threads=nthreads, clock=data.clock)]
    if args.thread is None:
        about = view.threads_line(data)
        if about:
            lines.append(about)
    lines.extend(view.mode_notes(data))
    hint = view.clock_hint(shown, data.clock)
    if hint:
        lines.append(hint)
    lines.append("")
    if args.lines is not None:
        lines.extend(_line_listings(data, shown, args, name, micro))
    elif args.tree:
        if args.thread is not None:
            data = ProfileData(stats)  # the trailer's call paths cover all threads
        lines.extend(view.tree_lines(data, min_percent=args.min_percent, micro=micro, limit=args.limit))
    elif args.callers or args.callees:
        direction = "callers" if args.callers else "callees"
        pattern = args.callers or args.callees
        match = view.matcher(pattern, qualnames=data.qualnames)
        if not any(match(key) for key in shown):
            raise NothingMatched("no function matches /%s/ (in %s)" % (pattern, name))
        lines.extend(view.edge_tables(shown, pattern, direction, micro, args.limit,
                                      qualnames=data.qualnames,
                                      concurrent=view.concurrency_recorded(data)))
    else:
        lines.extend(view.function_table(shown, args.sort, args.limit, args.filter, micro,
                                         qualnames=data.qualnames,
                                         concurrent=view.concurrency_recorded(data)))
    _say(lines)
    return 0


def _line_listings(data, shown, args, name, micro):
    from .tools import view  # (deferred: fastprof run imports nothing before the program)
    from .tools.line_view import listings  # (deferred: fastprof run imports nothing before the program)
    if not data.lines:
        raise NothingMatched("%s has no line-level stats: profile with "
                             "python -m fastprof --lines PATTERN (or --lines-from)" % (name,))
    match = view.matcher(args.lines, qualnames=data.qualnames)
    out = listings(data.lines, shown, data.qualnames, match, micro, data.lines_own, data.sources)
    if not out:
        raise NothingMatched("no function with line stats matches /%s/ (in %s)" % (args.lines, name))
    return out


def cmd_diff(args) -> int:
    from .tools import diff, view  # (deferred: fastprof run imports nothing before the program)
    base = _load(args.base)
    new = _load(args.new)
    _say(diff.diff_lines(base, new, args.base, args.new, metric=args.sort, limit=args.limit,
                         micro=view.micro_sign(sys.stdout), threshold=args.threshold,
                         min_time=args.min_time, full_paths=args.full_paths))
    return 0


def cmd_check(args) -> int:
    from .tools import check, view  # (deferred: fastprof run imports nothing before the program)
    base = _load(args.base)
    new = _load(args.new)
    result = check.check(base, new, args.tolerance, args.c_tolerance, time=args.time,
                         threshold=args.threshold, min_time=args.min_time)
    sys.stdout.write(check.render(result, args.format, args.base, args.new, args.limit,
                                  micro=view.micro_sign(sys.stdout)))
    return 1 if result.failed else 0


def _write(data, out: str, fmt: str, title: str, min_percent=None) -> None:
    try:
        run_options.write_output(data, out, fmt, title=title, min_percent=min_percent)
    except OSError as exc:
        raise UsageError("cannot write %s: %s" % (out, exc.strerror or exc)) from None


def _note_estimated(data, fmt: str, out: str, command: str) -> None:
    if fmt in formats.TREE_FORMATS and data.callpaths is None:
        print("%s %s: note: no call paths in the input; the call tree in %s is estimated from the "
              "caller graph (record exact paths with fastprof --callpaths)" % (PROG, command, out),
              file=sys.stderr)


def cmd_convert(args) -> int:
    _check_min_percent(args)
    fmt = run_options.output_format(args.output, args.to)
    run_options.check_output_path(args.output, [args.file])
    data = _load(args.file)
    _note_estimated(data, fmt, args.output, "convert")
    from .exports import folding_note  # (deferred: fastprof run imports nothing before the program)
    note = folding_note(fmt, args.min_percent)
    if note:
        print("%s convert: note: %s" % (PROG, note), file=sys.stderr)
    _write(data, args.output, fmt, os.path.basename(args.file), args.min_percent)
    return 0


def _profiles_in(inputs):
    """The files named, a directory standing for its .prof files (in name
    order: the middleware's names start with the time); usage error for a
    directory without any."""
    out = []
    for path in inputs:
        if not os.path.isdir(path):
            out.append(path)
            continue
        found = sorted(os.path.join(path, n) for n in os.listdir(path)
                       if n.endswith(".prof") and not n.startswith("."))
        if not found:
            raise UsageError("%s: a directory with no .prof file in it" % path)
        out.extend(found)
    return out


def cmd_merge(args) -> int:
    from .tools.merge import ProfileSum  # (deferred: fastprof run imports nothing before the program)
    fmt = run_options.output_format(args.output, args.to)
    inputs = _profiles_in(args.inputs)
    run_options.check_output_path(args.output, inputs)
    # one input read at a time and folded into the sum: 1,000 files need one
    # file handle and the memory of one input plus the sum, not of all inputs
    total = ProfileSum()
    for path in inputs:
        total.add(_load(path))
    if total.clocks_differ():
        print("%s merge: warning: the inputs were timed with different clocks (%s); "
              "their times are added anyway" % (PROG, ", ".join(sorted({str(c) for c in total.clocks}))),
              file=sys.stderr)
    merged = total.result()
    if merged.callpaths is None and total.any_callpaths:
        print("%s merge: note: not every input has call paths; the result has none" % PROG, file=sys.stderr)
    _note_estimated(merged, fmt, args.output, "merge")
    _write(merged, args.output, fmt, os.path.basename(args.output))
    if args.output != "-":
        calls = sum(int(v[1]) for v in merged.stats.values())
        print("merged %d profile%s into %s: %d functions, %s calls%s" % (
            total.count, "" if total.count == 1 else "s", args.output, len(merged.stats), "{:,}".format(calls),
            ", call paths kept" if merged.callpaths is not None else ""), file=sys.stderr)
    return 0


def cmd_attach(args) -> int:
    from .modes import attach  # (deferred: fastprof run imports nothing before the program)
    return attach.run(args)


def cmd_top(args) -> int:
    from .modes import top  # (deferred: fastprof run imports nothing before the program)
    return top.run(args)


COMMANDS = {"view": cmd_view, "diff": cmd_diff, "check": cmd_check, "merge": cmd_merge, "convert": cmd_convert,
            "attach": cmd_attach, "top": cmd_top}


def _run(argv) -> int:
    from .modes import run_command  # (deferred: fastprof run imports nothing before the program)
    return run_command.main(argv)


def main(argv=None) -> int:
    """Run the command line; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        return _run(argv[1:])
    from .data.profile_file import ProfileFileError  # (deferred: fastprof run imports nothing before the program)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors (argparse printed them)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return COMMANDS[args.command](args)
    except (UsageError, ProfileFileError) as exc:
        run_options.report("%s %s" % (PROG, args.command), exc)
        return 2
    except NothingMatched as exc:
        print("%s %s: %s" % (PROG, args.command, exc), file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader went away (fastprof view ... | head): stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
