"""``fastprof run [options] script.py [args]``: ``python -m fastprof``,
which parses its own command line (modes/run_command.py).  Nothing is
imported before the program but what ``python -m fastprof`` imports."""

NAME = "run"
HELP = ("run a script or module under fastprof (same as python -m fastprof; "
        "'fastprof run --help' for its options)")
# argparse never sees the arguments: run() gets them after "run", unparsed
OWN_COMMAND_LINE = True


def add_arguments(parser):
    """None: python -m fastprof's parser declares them (fastprof run --help)."""


def run(argv) -> int:
    from ..modes import run_command  # (deferred: run_command imports only what python -m fastprof does)
    return run_command.main(argv)
