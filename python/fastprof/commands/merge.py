"""``fastprof merge FILE... -o OUT``: the sum of several profiles."""

import os
import sys

from ..data import formats
from ..modes import run_options
from ..modes.run_options import UsageError
from .profile_io import PROG, load, note_estimated, write

NAME = "merge"
HELP = "add profiles together (counts, times, callers, call paths)"
DESCRIPTION = ("Add profiles together: calls, times and callers are summed; call paths "
               "are merged path by path when every input has them.")
EPILOG = formats.formats_help()


def add_arguments(p):
    p.add_argument("inputs", nargs="+", metavar="FILE",
                   help="profiles to add; a directory adds its .prof files (the per-request "
                        "profiles of fastprof.middleware, say)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="where to write the sum (pstats unless the name or --to says "
                        "otherwise; '-' for stdout, with --to)")
    p.add_argument("--to", metavar="FORMAT",
                   help="output format: %s (default: from OUT's name)" % ", ".join(formats.FORMATS))


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


def run(args) -> int:
    from ..tools.merge import ProfileSum  # (deferred: fastprof run imports nothing before the program)
    row = run_options.output_row(args.output, args.to)
    inputs = _profiles_in(args.inputs)
    run_options.check_output_path(args.output, inputs)
    # one input read at a time and folded into the sum: 1,000 files need one
    # file handle and the memory of one input plus the sum, not of all inputs
    total = ProfileSum()
    for path in inputs:
        total.add(load(path))
    if total.clocks_differ():
        print("%s merge: warning: the inputs were timed with different clocks (%s); "
              "their times are added anyway" % (PROG, ", ".join(sorted({str(c) for c in total.clocks}))),
              file=sys.stderr)
    merged = total.result()
    if merged.callpaths is None and total.any_callpaths:
        print("%s merge: note: not every input has call paths; the result has none" % PROG, file=sys.stderr)
    note_estimated(merged, row, args.output, NAME)
    write(merged, args.output, row, os.path.basename(args.output))
    if args.output != "-":
        calls = sum(int(v[1]) for v in merged.stats.values())
        print("merged %d profile%s into %s: %d functions, %s calls%s" % (
            total.count, "" if total.count == 1 else "s", args.output, len(merged.stats), "{:,}".format(calls),
            ", call paths kept" if merged.callpaths is not None else ""), file=sys.stderr)
    return 0
