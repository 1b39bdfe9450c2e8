"""The profiles the commands read and write: loading an input (a cProfile
or fastprof file; a damaged one with a warning), printing a result,
writing an output in the format its table row says (through
modes.run_options, as ``python -m fastprof -o`` writes), and the note for
a call tree drawn without recorded call paths.

Imported before ``fastprof run``'s program: the readers and writers are
imported when used.
"""

import sys

from ..modes import run_options
from ..modes.run_options import UsageError

PROG = "fastprof"


def load(path):
    """The ProfileData of *path*; ProfileFileError (a usage error for
    cli.py) if it is not a profile."""
    from ..data.profile_file import load_profile  # (deferred: fastprof run imports nothing before the program)
    data = load_profile(path)
    if data.damaged:
        print("%s: warning: %s: %s" % (PROG, path, data.damaged), file=sys.stderr)
    return data


def say(lines):
    """Print *lines* to stdout."""
    out = sys.stdout
    out.write("\n".join(lines))
    out.write("\n")


def write(data, out: str, row, title: str, min_percent=None) -> None:
    """Write *data* to *out* ('-': stdout) in the format of *row*
    (run_options.output_row); UsageError if it cannot be written."""
    try:
        run_options.write_output(data, out, row, title=title, min_percent=min_percent)
    except OSError as exc:
        raise UsageError("cannot write %s: %s" % (out, exc.strerror or exc)) from None


def note_estimated(data, row, out: str, command: str) -> None:
    """Say on stderr when format *row* draws a call tree that *data* has no
    recorded paths for (it is estimated from the caller graph)."""
    if row.tree and data.callpaths is None:
        print("%s %s: note: no call paths in the input; the call tree in %s is estimated from the "
              "caller graph (record exact paths with fastprof --callpaths)" % (PROG, command, out),
              file=sys.stderr)
