"""The ``fastprof`` command: look at, compare, merge and convert profiles.

    fastprof view out.prof                     # table with human units
    fastprof view out.prof --callers parse     # who calls parse, and how much
    fastprof view out.prof --tree              # the call paths
    fastprof diff before.prof after.prof       # what got slower / faster
    fastprof merge a.prof b.prof -o all.prof   # sum of several runs
    fastprof convert out.prof -o out.html      # report, flame graph, callgrind...
    fastprof run [options] script.py [args]    # = python -m fastprof

Every input may be a cProfile file or a fastprof file.  Errors about input
and output files are one line on stderr and exit status 2.
"""

import argparse
import os
import re
import sys
from typing import List, Optional

from .profile_file import ProfileData, ProfileFileError, load_profile, same_file

PROG = "fastprof"


class CLIError(Exception):
    """A usage or file problem: one line on stderr, exit status 2."""


# ---------------------------------------------------------------- parser

def _positive_or_zero(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text)
    if n < 0:
        raise argparse.ArgumentTypeError("must be 0 (all) or more, not %d" % n)
    return n


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError("bad regular expression %r: %s" % (text, exc))
    return text


def _sort(text: str) -> str:
    from .view import parse_sort
    try:
        return parse_sort(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _percent(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text)
    if not 0 <= v <= 100:
        raise argparse.ArgumentTypeError("must be between 0 and 100")
    return v


FORMATS_HELP = """\
formats (chosen by the output name, or --to):
  pstats      .prof .pstats           cProfile format (+ fastprof call paths)
  callgrind   .callgrind callgrind.out.*   KCachegrind / QCachegrind
  speedscope  .speedscope.json        https://www.speedscope.app
  collapsed   .collapsed .folded      flamegraph.pl / inferno folded stacks
  html        .html                   self-contained report (works offline)

speedscope, collapsed and the HTML flame graph draw the call paths that
fastprof records with --callpaths / Profile(callpaths=True); for a plain
cProfile file they draw a tree estimated from the caller graph (and say so).
"""


def build_parser() -> argparse.ArgumentParser:
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
        epilog="sort keys: tottime (time), cumtime (cumulative), calls (ncalls), pcalls, percall, "
               "cumpercall, name, file (filename, module), line",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="a cProfile or fastprof .prof file")
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
    p.add_argument("--min-percent", type=_percent, default=1.0, metavar="P",
                   help="--tree: fold paths below P%% of the total (default 1)")
    p.add_argument("--thread", metavar="ID",
                   help="only this thread (id or name) of a profile with per-thread stats")

    p = sub.add_parser(
        "diff", help="compare two profiles: what got slower or faster",
        description="Compare two profiles of the same program: the functions whose tottime, "
                    "cumtime or call count changed most, with absolute and relative change.")
    p.add_argument("base", metavar="BASE", help="the profile before")
    p.add_argument("new", metavar="NEW", help="the profile after")
    p.add_argument("-s", "--sort", choices=("tottime", "cumtime", "calls"), default="tottime",
                   help="rank by the change of this (default: tottime)")
    p.add_argument("-n", "--limit", type=_positive_or_zero, default=20, metavar="N",
                   help="show the first N functions (default 20; 0 = all)")

    p = sub.add_parser(
        "merge", help="add profiles together (counts, times, callers, call paths)",
        description="Add profiles together: calls, times and callers are summed; call paths "
                    "are merged path by path when every input has them.",
        epilog=FORMATS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="FILE", help="profiles to add")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="where to write the sum (pstats unless the name or --to says otherwise)")
    p.add_argument("--to", metavar="FORMAT", help="output format (default: from OUT's name)")

    p = sub.add_parser(
        "convert", help="write a profile as HTML, callgrind, speedscope, collapsed stacks...",
        description="Write a profile in another format.",
        epilog=FORMATS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="a cProfile or fastprof .prof file")
    p.add_argument("--to", metavar="FORMAT", help="output format (default: from OUT's name)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the file to write ('-' for stdout, with --to)")

    sub.add_parser(
        "run", add_help=False,
        help="run a script or module under fastprof (same as python -m fastprof; "
             "'fastprof run --help' for its options)")
    return parser


def _version() -> str:
    try:
        from . import __version__
        return __version__
    except Exception:  # the C module may be missing; the version is not worth failing for
        return "unknown"


# ---------------------------------------------------------------- commands

def _load(path: str) -> ProfileData:
    return load_profile(path)  # ProfileFileError: reported by main()


def _say(lines: List[str]) -> None:
    out = sys.stdout
    out.write("\n".join(lines))
    out.write("\n")


def cmd_view(args) -> int:
    from . import view
    data = _load(args.file)
    micro = view.micro_sign(sys.stdout)
    try:
        stats, what = view.select_stats(data, args.thread)
    except ValueError as exc:
        raise CLIError(str(exc))
    name = args.file + (" " + what if what else "")
    lines = [view.summary_line(name, stats, micro)]
    if len(data.threads) > 1 and args.thread is None:
        lines.append("%d threads recorded (--thread ID for one: %s)" % (
            len(data.threads), ", ".join("%s=%s" % (t.get("id"), t.get("name")) for t in data.threads)))
    lines.append("")
    if args.tree:
        if args.thread is not None:
            data = ProfileData(stats)  # the trailer's call paths cover all threads
        lines.extend(view.tree_lines(data, min_percent=args.min_percent, micro=micro, limit=args.limit))
    elif args.callers or args.callees:
        direction = "callers" if args.callers else "callees"
        lines.extend(view.edge_tables(stats, args.callers or args.callees, direction, micro, args.limit))
    else:
        lines.extend(view.function_table(stats, args.sort, args.limit, args.filter, micro))
    _say(lines)
    return 0


def cmd_diff(args) -> int:
    from . import diff, view
    base = _load(args.base)
    new = _load(args.new)
    _say(diff.diff_lines(base, new, args.base, args.new, metric=args.sort, limit=args.limit,
                         micro=view.micro_sign(sys.stdout)))
    return 0


def _output_format(out: str, to: Optional[str], default: Optional[str]) -> str:
    from . import exports
    if to is not None:
        try:
            return exports.check_format(to)
        except ValueError as exc:
            raise CLIError(str(exc))
    if out == "-":
        raise CLIError("writing to stdout ('-o -') needs --to FORMAT (one of %s)" % ", ".join(exports.FORMATS))
    try:
        return exports.format_for_path(out)
    except ValueError as exc:
        if default is not None:
            return default
        raise CLIError("%s; or give --to FORMAT" % exc)


def _check_output(out: str, inputs: List[str]) -> None:
    if out == "-":
        return
    for path in inputs:
        if same_file(out, path):
            raise CLIError("refusing to overwrite the input file %s" % path)
    if os.path.isdir(out):
        raise CLIError("cannot write %s: it is a directory" % out)
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise CLIError("cannot write %s: no directory %s" % (out, parent))


def _write(data: ProfileData, out: str, fmt: str, title: str) -> None:
    from . import exports
    if out == "-":
        if fmt == "pstats":
            from .profile_file import write_profile
            sys.stdout.flush()
            write_profile(sys.stdout.buffer, data)
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(exports.render(data, fmt, title=title))
        return
    try:
        exports.export(data, out, fmt, title=title)
    except OSError as exc:
        raise CLIError("cannot write %s: %s" % (out, exc.strerror or exc))


def _note_estimated(data: ProfileData, fmt: str, out: str, command: str) -> None:
    if fmt in ("speedscope", "collapsed", "html") and data.callpaths is None:
        print("%s %s: note: no call paths in the input; the call tree in %s is estimated from the "
              "caller graph (record exact paths with fastprof --callpaths)" % (PROG, command, out),
              file=sys.stderr)


def cmd_convert(args) -> int:
    fmt = _output_format(args.output, args.to, None)
    _check_output(args.output, [args.file])
    data = _load(args.file)
    _note_estimated(data, fmt, args.output, "convert")
    _write(data, args.output, fmt, os.path.basename(args.file))
    return 0


def cmd_merge(args) -> int:
    from .merge import clocks_differ, merge_profiles
    fmt = _output_format(args.output, args.to, "pstats")
    _check_output(args.output, args.inputs)
    profiles = [_load(p) for p in args.inputs]
    if clocks_differ(profiles):
        print("%s merge: warning: the inputs were timed with different clocks (%s); "
              "their times are added anyway" % (PROG, ", ".join(sorted({str(p.clock) for p in profiles}))),
              file=sys.stderr)
    merged = merge_profiles(profiles)
    if merged.callpaths is None and any(p.callpaths is not None for p in profiles):
        print("%s merge: note: not every input has call paths; the result has none" % PROG, file=sys.stderr)
    _note_estimated(merged, fmt, args.output, "merge")
    _write(merged, args.output, fmt, os.path.basename(args.output))
    if args.output != "-":
        calls = sum(int(v[1]) for v in merged.stats.values())
        print("merged %d profiles into %s: %d functions, %s calls%s" % (
            len(profiles), args.output, len(merged.stats), "{:,}".format(calls),
            ", call paths kept" if merged.callpaths is not None else ""), file=sys.stderr)
    return 0


COMMANDS = {"view": cmd_view, "diff": cmd_diff, "merge": cmd_merge, "convert": cmd_convert}


def _run(argv: List[str]) -> int:
    try:
        from . import run_cli
    except ImportError as exc:
        print("%s run: error: the profiler is not available here (%s)" % (PROG, exc), file=sys.stderr)
        return 2
    return run_cli.main(argv)


def main(argv: Optional[List[str]] = None) -> int:
    """Run the command line; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        return _run(argv[1:])
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
    except (CLIError, ProfileFileError) as exc:
        print("%s %s: error: %s" % (PROG, args.command, exc), file=sys.stderr)
        return 2
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
