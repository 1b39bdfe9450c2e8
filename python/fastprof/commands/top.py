"""``fastprof top PID``: a live view of a running Python 3.14+ process; the
run mode's parser and code are modes/top.py's."""

from .arguments import ModeParser

NAME = "top"
HELP = ("a live view of a running Python 3.14+ process: functions by own time, "
        "cumulative time, calls per second")


def add_arguments(parser):
    from ..modes.top import add_parser  # (deferred: fastprof run imports nothing before the program)
    add_parser(ModeParser(parser), parser.formatter_class)


def run(args) -> int:
    from ..modes import top  # (deferred: fastprof run imports nothing before the program)
    return top.run(args)
