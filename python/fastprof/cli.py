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

Each subcommand is a module of fastprof.commands (its docstring says the
protocol); this builds the top parser from their list and dispatches.
Every input may be a cProfile file or a fastprof file.  Errors about input
and output files are one line on stderr and exit status 2.

Only os and sys are imported up front, and the command modules, which are
as light: ``fastprof run`` must leave the program the interpreter
``python -m fastprof`` leaves it.
"""

import os
import sys

from .commands import attach, check, convert, diff, merge, run, top, view
from .modes import run_options
from .modes.run_options import UsageError

PROG = "fastprof"

# the subcommands, in the order of fastprof --help
COMMANDS = (view, diff, check, merge, convert, attach, top, run)


def _formatter(argparse):
    """The help formatter of every parser here: in a description or epilog,
    the unindented lines between blank or indented ones are a paragraph,
    wrapped to the terminal as argparse wraps a description; indented lines
    (tables, examples) are kept as written."""
    import textwrap  # (argparse imports it too)

    class Formatter(argparse.HelpFormatter):
        def _fill_text(self, text, width, indent):
            out, paragraph = [], []

            def end_paragraph():
                if paragraph:
                    out.append(textwrap.fill(" ".join(" ".join(paragraph).split()), width,
                                             initial_indent=indent, subsequent_indent=indent))
                    del paragraph[:]

            for line in text.splitlines():
                if line and not line[0].isspace():
                    paragraph.append(line)
                    continue
                end_paragraph()
                out.append(indent + line if line.strip() else "")
            end_paragraph()
            return "\n".join(out)

    return Formatter


def build_parser():
    import argparse  # (deferred: fastprof run imports nothing before the program)
    formatter = _formatter(argparse)
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Look at, compare, merge and convert cProfile / fastprof profiles, "
                    "or run a program under fastprof.",
        epilog="Run 'fastprof COMMAND --help' for a command's options.",
        formatter_class=formatter)
    parser.add_argument("--version", action="version", version="%(prog)s " + _version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP,
                           description=getattr(command, "DESCRIPTION", None),
                           epilog=getattr(command, "EPILOG", None),
                           formatter_class=formatter,
                           add_help=not getattr(command, "OWN_COMMAND_LINE", False))
        command.add_arguments(p)
    return parser


def _version() -> str:
    from . import __version__  # (deferred: fastprof run imports nothing before the program)
    return __version__


def main(argv=None) -> int:
    """Run the command line; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    by_name = {command.NAME: command for command in COMMANDS}
    if argv and getattr(by_name.get(argv[0]), "OWN_COMMAND_LINE", False):
        return by_name[argv[0]].run(argv[1:])
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
        return by_name[args.command].run(args)
    except (UsageError, ProfileFileError) as exc:
        run_options.report("%s %s" % (PROG, args.command), exc)
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
        print("%s %s: interrupted (Ctrl-C)" % (PROG, args.command), file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
