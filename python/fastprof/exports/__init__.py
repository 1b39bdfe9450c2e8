"""Write a profile in the formats other tools read.

    from fastprof.profile_file import load_profile
    from fastprof.exports import export
    export(load_profile("out.prof"), "out.html")          # format from the name
    export(load_profile("out.prof"), "out.txt", "collapsed")

Formats: fastprof.data.formats.FORMAT_TABLE (one row each, naming its writer
here, one module each; see each module's docstring).

The flame-graph-like formats (speedscope, collapsed, the HTML flame graph)
and the sample formats (pprof, gecko) draw the call paths a fastprof file
recorded with ``callpaths=True``; for a plain cProfile file they draw a tree
*estimated* from the caller graph and say so.  The flame-graph-like ones
leave out the paths below ``min_percent`` of the total time
(default ``DEFAULT_MIN_PERCENT``; 0 keeps every path): such a path's time is
added to its caller's frame, so every frame keeps its width, and each file
says what was cut.  A big program's call tree has ~10^5 paths, most of a few
microseconds; drawn, they are too thin to see, written out, hundreds of MB.

May import: the standard library, ``fastprof.data`` and ``fastprof.tools``
(the HTML report's line listings); never the recording wing, the run modes
or the command lines (a profile is exported in any process).
"""

import importlib
import io
from typing import Optional

from ..data.arguments import check_percent
from ..data.atomic_file import write_atomically
from ..data.formats import FORMATS, check_format, format_for_path, row_for_path
from ..data.profile_file import ProfileData

__all__ = ["FORMATS", "DEFAULT_MIN_PERCENT", "export", "render", "render_bytes",
           "format_for_path", "folding_note", "check_min_percent"]

# The default cut of the flame-graph formats' paths (formats.FOLDED_FORMATS;
# percent of the total time): 0.01% keeps black's 189,000 call paths to 3,800,
# every path wider than a pixel of a 100x zoom of a 1400-pixel flame graph.
DEFAULT_MIN_PERCENT = 0.01


def check_min_percent(min_percent: Optional[float]) -> float:
    """*min_percent* as a number (None: the default); ValueError unless 0..100."""
    if min_percent is None:
        return DEFAULT_MIN_PERCENT
    return check_percent("min_percent", min_percent)


def folding_note(fmt, min_percent: Optional[float]) -> str:
    """One line saying which paths a tree format leaves out ('' if none);
    *fmt*: a format's name or its row (formats.check_format)."""
    value = check_min_percent(min_percent)
    if not check_format(fmt).folded or value <= 0:
        return ""
    return ("call paths below %g%% of the total time are folded into their callers "
            "(--min-percent 0 keeps them all)" % value)


def _write(data: ProfileData, row, out, title: Optional[str], min_percent: float) -> None:
    """Write *data* in the format of table row *row* to *out* (binary or
    text, as the format is) with the writer the row names."""
    module, function = row.writer.split(":")
    # the writers are imported when used: each costs imports the others do not need
    writer = getattr(importlib.import_module("." + module, __name__), function)
    if row.folded:
        writer(data, out, title=title, min_fraction=min_percent / 100.0)
    else:
        writer(data, out, title=title)


def render(data: ProfileData, fmt, *, title: Optional[str] = None,
           min_percent: Optional[float] = None) -> str:
    """The text of *data* in a text format (every format but the binary
    ones); *fmt*: its name, or its row of the format table."""
    row = check_format(fmt)
    if row.binary:
        raise ValueError("%s is a binary format; use render_bytes() or export()" % row.name)
    buf = io.StringIO()
    _write(data, row, buf, title, check_min_percent(min_percent))
    return buf.getvalue()


def render_bytes(data: ProfileData, fmt, *, title: Optional[str] = None) -> bytes:
    """The bytes of *data* in a binary format (formats.BINARY_FORMATS);
    *fmt*: its name, or its row of the format table."""
    row = check_format(fmt)
    if not row.binary:
        raise ValueError("%s is a text format; use render()" % row.name)
    buf = io.BytesIO()
    _write(data, row, buf, title, DEFAULT_MIN_PERCENT)
    return buf.getvalue()


def export(data: ProfileData, path, fmt=None, *, title: Optional[str] = None,
           min_percent: Optional[float] = None) -> str:
    """Write *data* to *path* in *fmt* (a format's name or its row of the
    format table; None: from the extension); return the format's name.

    *min_percent* (speedscope, collapsed, html): call paths below this
    percent of the total time are folded into their callers (None:
    ``DEFAULT_MIN_PERCENT``; 0 keeps every path).

    The file is written to a temporary name next to *path* and renamed, so
    a failed export never leaves half a file (or destroys an old one).
    """
    row = check_format(fmt) if fmt is not None else row_for_path(path)
    min_percent = check_min_percent(min_percent)
    write_atomically(path, lambda f: _write_to(data, row, f, title, min_percent))
    return row.name


def _write_to(data: ProfileData, row, f, title: Optional[str], min_percent: float) -> None:
    """Write *data* in format *row* to the binary file *f*."""
    if row.binary:
        _write(data, row, f, title, min_percent)
    else:
        text = io.TextIOWrapper(f, encoding="utf-8", newline="\n")
        _write(data, row, text, title, min_percent)
        text.flush()
        text.detach()
