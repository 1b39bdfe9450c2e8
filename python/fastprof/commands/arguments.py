"""What the commands share to declare and check their arguments: argparse
value types, each turning a bad value into argparse's one-line usage error
("argument OPTION: message", exit status 2) with the message of the check
the API runs too; --min-percent's check; the stand-in through which a run
mode declares its subcommand's parser (attach, top).

Imported before ``fastprof run``'s program: argparse and the checks are
imported when a value is checked.
"""

from ..data.arguments import check_percent
from ..modes.run_options import UsageError


def _argparse():
    import argparse  # (deferred: fastprof run imports nothing before the program)
    return argparse


def positive_or_zero(text: str) -> int:
    argparse = _argparse()
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text) from None
    if n < 0:
        raise argparse.ArgumentTypeError("must be 0 (all) or more, not %d" % n)
    return n


def regex(text: str) -> str:
    import re  # (deferred: fastprof run imports nothing before the program)
    argparse = _argparse()
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError("bad regular expression %r: %s" % (text, exc)) from None
    return text


def checked(check):
    """An argparse type from one of the checks the API runs too, so both say
    the same thing: *check*'s ValueError message, after "argument OPTION:"."""
    def parse(text: str):
        try:
            return check(text)
        except ValueError as exc:
            raise _argparse().ArgumentTypeError(str(exc)) from None
    parse.__name__ = check.__name__
    return parse


def _diff_threshold(text: str) -> float:
    from ..tools.diff import parse_threshold  # (deferred: fastprof run imports nothing before the program)
    return parse_threshold(text)


def _diff_min_time(text: str) -> str:
    from ..tools.diff import parse_min_time  # (deferred: fastprof run imports nothing before the program)
    parse_min_time(text)
    return text


# diff's noise rule, which check --time applies too
threshold = checked(_diff_threshold)
min_time = checked(_diff_min_time)


def check_min_percent(value) -> None:
    """--min-percent (None: not given), checked as python -m fastprof and
    the exports check it: UsageError with their message."""
    if value is not None:
        try:
            check_percent("--min-percent", value)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


class ModeParser:
    """What a run mode's ``add_parser(subparsers, formatter_class)``
    (modes.attach, modes.top: they declare their whole subcommand) is given
    in place of argparse's subparsers: its ``add_parser`` puts the
    description, epilog and formatter the mode declares on *parser*, the
    parser cli.py made for the command, and returns it.  The command's line
    in ``fastprof --help`` is its module's HELP; the mode's is kept in
    ``help`` (a test holds the two equal)."""

    SETTINGS = ("description", "epilog", "formatter_class")

    def __init__(self, parser):
        self.parser = parser
        self.help = None

    def add_parser(self, name, help=None, **settings):
        unknown = set(settings) - set(self.SETTINGS)
        if unknown:  # (a setting the parser cli made would not take: say so)
            raise TypeError("%s: add_parser(%s) is not supported for a command's parser"
                            % (name, ", ".join(sorted(unknown))))
        self.help = help
        for key, value in settings.items():
            setattr(self.parser, key, value)
        return self.parser
