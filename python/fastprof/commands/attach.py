"""``fastprof attach PID``: profile a running Python 3.14+ process; the run
mode's parser and code are modes/attach.py's."""

from .arguments import ModeParser

NAME = "attach"
HELP = "profile a running Python 3.14+ process for a while (sys.remote_exec)"


def add_arguments(parser):
    from ..modes.attach import add_parser  # (deferred: fastprof run imports nothing before the program)
    add_parser(ModeParser(parser), parser.formatter_class)


def run(args) -> int:
    from ..modes import attach  # (deferred: fastprof run imports nothing before the program)
    return attach.run(args)
