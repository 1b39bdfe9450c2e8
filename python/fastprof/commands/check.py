"""``fastprof check BASE NEW``: the performance gate, exit status 1 when
call counts changed."""

import sys

from ..modes.run_options import UsageError
from . import arguments
from .profile_io import load

NAME = "check"
HELP = "performance gate: fail (exit 1) when call counts changed"
DESCRIPTION = ("Compare the exact call counts of two profiles of the same program: "
               "every function's and every caller -> callee edge's (functions paired by "
               "file relative to its sys.path entry and qualified name, so two installs "
               "compare; garbage collections left out). Exit status 0 when they match "
               "within the tolerance, 1 when some changed (listed, biggest change first; with "
               "--memory also when a function allocates more bytes), "
               "2 for bad input. For test suites see pytest --fastprof-counts (docs/gate.md).")


def _tolerance(text: str) -> float:
    from ..tools.counts import parse_tolerance  # (deferred: fastprof run imports nothing before the program)
    return parse_tolerance(text)


def add_arguments(p):
    tolerance = arguments.checked(_tolerance)
    p.add_argument("base", metavar="BASE", help="the profile before (a cProfile or fastprof file)")
    p.add_argument("new", metavar="NEW", help="the profile after")
    p.add_argument("--tolerance", type=tolerance, default=0.0, metavar="PERCENT",
                   help="a Python function's or edge's count may move by PERCENT of its base "
                        "value (default 0: exact)")
    p.add_argument("--c-tolerance", type=tolerance, default=None, metavar="PERCENT",
                   help="the same for C functions and edges into them (default: --tolerance's)")
    p.add_argument("--time", action="store_true",
                   help="also fail when a function's own time moved beyond fastprof diff's "
                        "noise rule (--threshold and --min-time)")
    p.add_argument("--threshold", type=arguments.threshold, default=10.0, metavar="PERCENT",
                   help="--time: a time that moved by at most PERCENT of its base value is "
                        "noise (default 10)")
    p.add_argument("--min-time", type=arguments.min_time, default="1%", metavar="TIME",
                   help="--time: a time that moved by at most TIME is noise too: 2ms, 150us, "
                        "0.003 (seconds) or 1%% of the larger total (default 1%%)")
    p.add_argument("--memory", action="store_true",
                   help="also fail when a function allocates more bytes itself than its base "
                        "value (both files made with --memory or Profile(memory=True))")
    p.add_argument("--memory-tolerance", type=tolerance, default=None, metavar="PERCENT",
                   help="--memory: growth of at most PERCENT of the base bytes passes (default 10)")
    p.add_argument("--memory-min", type=arguments.positive_or_zero, default=None, metavar="BYTES",
                   help="--memory: growth of at most BYTES passes too (default 1024)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text",
                   help="text (default), markdown (e.g. >> \"$GITHUB_STEP_SUMMARY\") or json")
    p.add_argument("-n", "--limit", type=arguments.positive_or_zero, default=30, metavar="N",
                   help="list the first N changes of each kind (default 30; 0 = all; json: all)")


def run(args) -> int:
    from ..tools import check, counts, view  # (deferred: fastprof run imports nothing before the program)
    base = load(args.base)
    new = load(args.new)
    if (args.memory_tolerance is not None or args.memory_min is not None) and not args.memory:
        raise UsageError("--memory-tolerance and --memory-min need --memory")
    for data, path in ((base, args.base), (new, args.new)):
        if args.memory and data.memory is None:
            raise UsageError("--memory: %s has no memory stats (profile it with python -m fastprof "
                             "--memory or Profile(memory=True))" % path)
    try:
        result = check.check(base, new, args.tolerance, args.c_tolerance, time=args.time,
                             threshold=args.threshold, min_time=args.min_time, memory=args.memory,
                             memory_tolerance=(counts.BYTES_TOLERANCE if args.memory_tolerance is None
                                               else args.memory_tolerance),
                             memory_min=counts.BYTES_MIN if args.memory_min is None else args.memory_min)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    sys.stdout.write(check.render(result, args.format, args.base, args.new, args.limit,
                                  micro=view.micro_sign(sys.stdout)))
    return 1 if result.failed else 0
