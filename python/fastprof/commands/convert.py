"""``fastprof convert FILE -o OUT``: a profile in another format."""

import os
import sys

from ..data import formats
from ..modes import run_options
from ..modes.run_options import UsageError
from . import arguments
from .profile_io import PROG, load, note_estimated, write

NAME = "convert"
HELP = "write a profile in another format: %s" % ", ".join(formats.FORMATS)
DESCRIPTION = "Write a profile in another format."
EPILOG = formats.formats_help()
# the --weight choices in bytes (data/memory.WEIGHTS)
WEIGHTED = ("allocated", "held", "net")
# the formats that can be weighed by bytes
BYTE_FORMATS = ("collapsed", "speedscope", "gecko")


def add_arguments(p):
    p.add_argument("file", metavar="FILE", help="a cProfile or fastprof .prof file")
    p.add_argument("--to", metavar="FORMAT",
                   help="output format: %s (default: from OUT's name)" % ", ".join(formats.FORMATS))
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the file to write (pstats for a name no format claims; "
                        "'-' for stdout, with --to)")
    p.add_argument("--weight", choices=("time",) + WEIGHTED, default="time",
                   help="collapsed, speedscope and gecko output: weigh each call path by its time "
                        "(default) or by bytes (a profile made with --memory --callpaths): "
                        "allocated, held (alive at the process's peak), net (alive at the end)")
    p.add_argument("--min-percent", type=float, default=None, metavar="P",
                   help=formats.said(formats.FOLDED_FORMATS, "or") + " output: fold call paths "
                        "below P%% of the total time into their callers (default 0.01; 0 keeps "
                        "every path)")


def run(args) -> int:
    arguments.check_min_percent(args.min_percent)
    row = run_options.output_row(args.output, args.to)
    run_options.check_output_path(args.output, [args.file])
    data = load(args.file)
    if args.weight != "time":
        if row.name not in BYTE_FORMATS:
            raise UsageError("--weight %s: only %s and %s output can be weighed by bytes, not %s"
                             % (args.weight, ", ".join(BYTE_FORMATS[:-1]), BYTE_FORMATS[-1], row.name))
        from ..data.memory import weighed_by_bytes  # (deferred: fastprof run imports nothing before the program)
        try:
            data = weighed_by_bytes(data, args.weight)
        except ValueError as exc:
            raise UsageError("--weight %s: %s has %s" % (args.weight, args.file, exc)) from None
    note_estimated(data, row, args.output, NAME)
    from ..exports import folding_note  # (deferred: fastprof run imports nothing before the program)
    note = folding_note(row, args.min_percent)
    if note and args.weight != "time":
        note = note.replace("of the total time", "of the total bytes")
    if note:
        print("%s %s: note: %s" % (PROG, NAME, note), file=sys.stderr)
    write(data, args.output, row, os.path.basename(args.file), args.min_percent)
    return 0
