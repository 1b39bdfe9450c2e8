"""``fastprof view FILE``: a profile as a table, its callers or callees,
its call tree, or its line-by-line listings."""

import os
import sys

from ..modes import run_options
from ..modes.run_options import UsageError
from . import arguments
from .profile_io import PROG, load, say

NAME = "view"
HELP = "show a profile as a table (or callers, callees, call tree)"
DESCRIPTION = ("Show a profile as an aligned table: times in ns/\u00b5s/ms/s with their "
               "percent of the total profiled time (the sum of all tottimes).")
EPILOG = ("sort keys: tottime (time, tt, self), cumtime (cumulative, cum, ct), calls "
          "(ncalls), pcalls (primitive), percall, cumpercall, name, file (filename, "
          "module, nfl, stdname), line.\n\n" + run_options.SORT_NOTE + "\n\nWith --memory, "
          "sort keys: allocated (default), incl (allocated_incl), net, peak, held "
          "(live_at_peak), blocks (allocations), freed.")


class NothingMatched(Exception):
    """A query that matched nothing: one line on stderr, exit status 1."""


# a memory column as -s/--sort gives it (with --memory)
MEMORY_SORT_PREFIX = "memory:"


def _sort(text: str) -> str:
    from ..tools.memory_view import (  # (deferred: fastprof run imports nothing before the program)
        MEMORY_SORTS,
        parse_memory_sort,
    )
    from ..tools.view import parse_sort  # (deferred: fastprof run imports nothing before the program)
    if text.strip().lower() in MEMORY_SORTS:
        return MEMORY_SORT_PREFIX + parse_memory_sort(text)
    return parse_sort(text)


def add_arguments(p):
    # (optional to argparse only: `view --lines FILE`, where --lines took the file, is mended in run)
    p.add_argument("file", metavar="FILE", nargs="?", help="a cProfile or fastprof .prof file")
    p.add_argument("-s", "--sort", type=arguments.checked(_sort), default=None, metavar="SORT",
                   help="sort key (default: tottime, with --memory allocated; see below)")
    p.add_argument("-n", "--limit", type=arguments.positive_or_zero, default=30, metavar="N",
                   help="show the first N rows (default 30; 0 = all); with --tree, N lines")
    p.add_argument("--filter", type=arguments.regex, metavar="REGEX",
                   help="only functions whose name or file:line(name) matches REGEX")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--callers", type=arguments.regex, metavar="NAME",
                   help="who called the functions matching NAME (a regex), with the time of each call site")
    g.add_argument("--callees", type=arguments.regex, metavar="NAME",
                   help="what the functions matching NAME (a regex) called, with the time of each")
    g.add_argument("--tree", action="store_true",
                   help="the call paths as an indented tree (estimated for cProfile files)")
    p.add_argument("--memory", action="store_true",
                   help="what each function allocated (a profile made with --memory or "
                        "Profile(memory=True)): bytes itself, with callees, still alive, "
                        "the peak of one call and its share of the process's peak; with "
                        "--callers/--callees the bytes of each call site, with --tree (a "
                        "profile made with --callpaths) bytes along each call path "
                        "(-s allocated, held or net)")
    g.add_argument("--lines", nargs="?", const="", type=arguments.regex, metavar="NAME",
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


def run(args) -> int:
    try:
        lines = _view(args)
    except NothingMatched as exc:
        print("%s %s: %s" % (PROG, NAME, exc), file=sys.stderr)
        return 1
    say(lines)
    return 0


def _process_file(path, pid):
    """The file to show: *path*, or with --process PID, that process's profile."""
    if pid is None:
        return path
    from ..modes.subprocesses import PROCESSES_SUFFIX, process_profiles  # (deferred)
    files = process_profiles(path)
    if not files:
        raise UsageError("%s has no per-process profiles (no %s%s/ directory: they are "
                         "kept by python -m fastprof --subprocesses -o FILE)"
                         % (path, path, PROCESSES_SUFFIX))
    if pid not in files:
        raise UsageError("no process %d in %s; its processes: %s"
                         % (pid, path, ", ".join(str(p) for p in sorted(files))))
    return files[pid]


def _view(args):
    """The lines to print."""
    from ..data.model import by_match_key  # (deferred: fastprof run imports nothing before the program)
    from ..data.profile_file import ProfileData  # (deferred: fastprof run imports nothing before the program)
    from ..tools import view  # (deferred: fastprof run imports nothing before the program)
    arguments.check_min_percent(args.min_percent)
    if args.file is None:
        # `fastprof view --lines x.prof`: --lines takes an optional NAME, and took the file
        if not (args.lines and os.path.isfile(args.lines)):
            raise UsageError("the following arguments are required: FILE")
        args.file, args.lines = args.lines, ""
    data = load(_process_file(args.file, args.process))
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
    if data.memory is not None:
        from ..tools.memory_view import totals_line  # (deferred: fastprof run imports nothing before the program)
        lines.append(totals_line(data.memory_totals))
    hint = view.clock_hint(shown, data.clock)
    if hint:
        lines.append(hint)
    lines.append("")
    sort = args.sort or "tottime"
    if sort.startswith(MEMORY_SORT_PREFIX) and not args.memory:
        raise UsageError("-s %s sorts by a memory column: add --memory" % sort[len(MEMORY_SORT_PREFIX):])
    if args.memory:
        lines.extend(_memory_table(data, args, name))
    elif args.lines is not None:
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
        lines.extend(view.function_table(shown, sort, args.limit, args.filter, micro,
                                         qualnames=data.qualnames,
                                         concurrent=view.concurrency_recorded(data)))
    return lines


def _memory_table(data, args, name):
    from ..tools.memory_view import (  # (deferred: fastprof run imports nothing before the program)
        DEFAULT_MEMORY_SORT,
        memory_edge_tables,
        memory_table,
    )
    if data.memory is None:
        raise NothingMatched("%s has no memory stats: profile with python -m fastprof --memory "
                             "(or Profile(memory=True))" % (name,))
    table = data.memory
    if args.thread is not None:
        if args.tree:
            raise UsageError("--memory --tree draws every thread's call paths: leave out --thread")
        from ..tools import view  # (deferred: fastprof run imports nothing before the program)
        try:
            table, _what = view.select_memory(data, args.thread)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    sort = args.sort or MEMORY_SORT_PREFIX + DEFAULT_MEMORY_SORT
    if not sort.startswith(MEMORY_SORT_PREFIX):
        raise UsageError("--memory sorts by a memory column, not %s (allocated, incl, net, "
                         "peak, held, blocks, freed)" % sort)
    sort = sort[len(MEMORY_SORT_PREFIX):]
    if args.lines is not None:
        raise UsageError("--memory and --lines: bytes are kept per function, not per line")
    if args.tree:
        return _memory_tree(data, sort, args)
    if not table:
        return ["no function allocated anything while profiled"]
    if args.callers or args.callees:
        direction = "callers" if args.callers else "callees"
        return memory_edge_tables(table, args.callers or args.callees, direction, args.limit,
                                  qualnames=data.qualnames)
    return memory_table(table, sort, args.limit, args.filter, qualnames=data.qualnames)


# the memory sorts a tree by bytes can draw -> memory.WEIGHTS' name
_TREE_WEIGHTS = {"allocated": "allocated", "allocated_incl": "allocated", "live_at_peak": "held", "net": "net"}


def _memory_tree(data, sort, args):
    from ..data.memory import weighed_by_bytes  # (deferred: fastprof run imports nothing before the program)
    from ..tools import view  # (deferred: fastprof run imports nothing before the program)
    if sort not in _TREE_WEIGHTS:
        raise UsageError("--memory --tree draws bytes allocated, held or net (-s allocated, held "
                         "or net), not %s" % sort)
    try:
        weighed = weighed_by_bytes(data, _TREE_WEIGHTS[sort])
    except ValueError as exc:
        raise NothingMatched("%s: %s" % (args.file, exc)) from None
    return view.tree_lines(weighed, min_percent=args.min_percent, limit=args.limit)


def _line_listings(data, shown, args, name, micro):
    from ..tools import view  # (deferred: fastprof run imports nothing before the program)
    from ..tools.line_view import listings  # (deferred: fastprof run imports nothing before the program)
    if not data.lines:
        raise NothingMatched("%s has no line-level stats: profile with "
                             "python -m fastprof --lines PATTERN (or --lines-from)" % (name,))
    match = view.matcher(args.lines, qualnames=data.qualnames)
    out = listings(data.lines, shown, data.qualnames, match, micro, data.lines_own, data.sources,
                   data.lines_memory)
    if not out:
        raise NothingMatched("no function with line stats matches /%s/ (in %s)" % (args.lines, name))
    return out
