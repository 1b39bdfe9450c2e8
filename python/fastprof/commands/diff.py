"""``fastprof diff BASE NEW``: what got slower or faster between two
profiles of the same program."""

import sys

from . import arguments
from .profile_io import load, say

NAME = "diff"
HELP = "compare two profiles: what got slower or faster"
DESCRIPTION = ("Compare two profiles of the same program: the functions whose tottime, "
               "cumtime or call count changed most, with absolute and relative change. "
               "Functions with line stats (--lines) in both profiles also get their changed "
               "lines: hits changed, or time beyond the same noise, biggest time change "
               "first, with the source line. Profiles made with --memory also get the "
               "process's peak and the functions whose own bytes allocated moved by more "
               "than 10%% and 1 KiB.")


def _metric(text: str) -> str:
    from ..tools.diff import check_metric  # (deferred: fastprof run imports nothing before the program)
    return check_metric(text)


def add_arguments(p):
    p.add_argument("base", metavar="BASE", help="the profile before")
    p.add_argument("new", metavar="NEW", help="the profile after")
    p.add_argument("-s", "--sort", type=arguments.checked(_metric), default="tottime", metavar="METRIC",
                   help="rank by the change of this: tottime, cumtime or calls (default: tottime)")
    p.add_argument("-n", "--limit", type=arguments.positive_or_zero, default=20, metavar="N",
                   help="show the first N functions, and of line stats the first N functions "
                        "and N lines of each (default 20; 0 = all)")
    p.add_argument("--threshold", type=arguments.threshold, default=10.0, metavar="PERCENT",
                   help="a time that moved by at most PERCENT of its base value is noise "
                        "(default 10; 0: any change counts). Changed call counts always count")
    p.add_argument("--min-time", type=arguments.min_time, default="1%", metavar="TIME",
                   help="a time that moved by at most TIME is noise too: 2ms, 150us, 0.003 "
                        "(seconds) or 1%% of the larger total (default 1%%)")
    p.add_argument("--full-paths", action="store_true",
                   help="show each function's file as recorded, not relative to its sys.path "
                        "entry (functions pair by relative path and qualified name either way)")


def run(args) -> int:
    from ..tools import diff, view  # (deferred: fastprof run imports nothing before the program)
    base = load(args.base)
    new = load(args.new)
    from ..tools.memory_view import memory_diff_lines  # (deferred: fastprof run imports nothing before the program)
    say(diff.diff_lines(base, new, args.base, args.new, metric=args.sort, limit=args.limit,
                        micro=view.micro_sign(sys.stdout), threshold=args.threshold,
                        min_time=args.min_time, full_paths=args.full_paths)
        + memory_diff_lines(base, new, args.base, args.new, limit=args.limit))
    return 0
