"""Write a profile in the formats other tools read.

    from fastprof.profile_file import load_profile
    from fastprof.exports import export
    export(load_profile("out.prof"), "out.html")          # format from the name
    export(load_profile("out.prof"), "out.txt", "collapsed")

Formats (see each module's docstring):

- ``pstats``: the profile file itself (cProfile format + fastprof trailer)
- ``callgrind``: KCachegrind / QCachegrind / callgrind_annotate
- ``speedscope``: https://www.speedscope.app JSON
- ``collapsed``: folded stacks for flamegraph.pl / inferno
- ``html``: one self-contained, offline HTML report
- ``pprof``: gzip'd profile.proto for pprof, Pyroscope, Parca, Grafana
- ``gecko``: the Firefox Profiler's JSON (https://profiler.firefox.com)

The flame-graph-like formats (speedscope, collapsed, the HTML flame graph)
and the sample formats (pprof, gecko) draw the call paths a fastprof file
recorded with ``callpaths=True``; for a plain cProfile file they draw a tree
*estimated* from the caller graph and say so.  The flame-graph-like ones
leave out the paths below ``min_percent`` of the total time
(default ``DEFAULT_MIN_PERCENT``; 0 keeps every path): such a path's time is
added to its caller's frame, so every frame keeps its width, and each file
says what was cut.  A big program's call tree has ~10^5 paths, most of a few
microseconds; drawn, they are too thin to see, written out, hundreds of MB.
"""

import io
import os
from typing import Optional

from ..arguments import check_percent
from ..cmdline import FOLDED_FORMATS, FORMATS, check_format, format_for_name, known_names
from ..profile_file import ProfileData, write_profile

# The formats and the file names that choose them are cmdline.FORMAT_TABLE,
# shared with both command lines.

# The default cut of the flame-graph formats' paths (cmdline.FOLDED_FORMATS;
# percent of the total time): 0.01% keeps black's 189,000 call paths to 3,800,
# every path wider than a pixel of a 100x zoom of a 1400-pixel flame graph.
DEFAULT_MIN_PERCENT = 0.01

# Formats written as bytes, not text.
BINARY_FORMATS = ("pstats", "pprof")


def known_extensions() -> str:
    return known_names()


def format_for_path(path) -> str:
    """The export format a file name asks for, from its extension.

    Raises ValueError (naming the known extensions) when there is none;
    the command lines write pstats then, as cProfile writes any name.
    """
    fmt = format_for_name(path)
    if fmt is None:
        raise ValueError(
            "cannot tell the output format from %r; use one of the extensions %s "
            "(or name the format: %s)" % (os.path.basename(os.fspath(path)),
                                          known_extensions(), ", ".join(FORMATS)))
    return fmt


def check_min_percent(min_percent: Optional[float]) -> float:
    """*min_percent* as a number (None: the default); ValueError unless 0..100."""
    if min_percent is None:
        return DEFAULT_MIN_PERCENT
    return check_percent("min_percent", min_percent)


def folding_note(fmt: str, min_percent: Optional[float]) -> str:
    """One line saying which paths a tree format leaves out ('' if none)."""
    value = check_min_percent(min_percent)
    if fmt not in FOLDED_FORMATS or value <= 0:
        return ""
    return ("call paths below %g%% of the total time are folded into their callers "
            "(--min-percent 0 keeps them all)" % value)


def render(data: ProfileData, fmt: str, *, title: Optional[str] = None,
           min_percent: Optional[float] = None) -> str:
    """The text of *data* in a text format (everything but ``BINARY_FORMATS``)."""
    check_format(fmt)
    if fmt in BINARY_FORMATS:
        raise ValueError("%s is a binary format; use render_bytes() or export()" % fmt)
    buf = io.StringIO()
    _write_text(data, fmt, buf, title, check_min_percent(min_percent))
    return buf.getvalue()


def render_bytes(data: ProfileData, fmt: str, *, title: Optional[str] = None) -> bytes:
    """The bytes of *data* in a binary format (``BINARY_FORMATS``)."""
    check_format(fmt)
    if fmt == "pstats":
        buf = io.BytesIO()
        write_profile(buf, data)
        return buf.getvalue()
    if fmt == "pprof":
        from .pprof import pprof_bytes
        return pprof_bytes(data, title=title or "")
    raise ValueError("%s is a text format; use render()" % fmt)


def _write_text(data: ProfileData, fmt: str, out, title: Optional[str], min_percent: float) -> None:
    min_fraction = min_percent / 100.0
    if fmt == "callgrind":
        from .callgrind import write_callgrind
        write_callgrind(data, out, cmd=title or "")
    elif fmt == "speedscope":
        from .speedscope import write_speedscope
        write_speedscope(data, out, name=title or "", min_fraction=min_fraction)
    elif fmt == "collapsed":
        from .collapsed import write_collapsed
        write_collapsed(data, out, min_fraction=min_fraction)
    elif fmt == "html":
        from .html import write_html
        write_html(data, out, title=title, min_fraction=min_fraction)
    elif fmt == "gecko":
        from .gecko import write_gecko
        write_gecko(data, out, title=title or "")
    else:  # pragma: no cover - check_format ran
        raise ValueError(fmt)


def export(data: ProfileData, path, fmt: Optional[str] = None, *, title: Optional[str] = None,
           min_percent: Optional[float] = None) -> str:
    """Write *data* to *path* in *fmt* (None: from the extension); return the format.

    *min_percent* (speedscope, collapsed, html): call paths below this
    percent of the total time are folded into their callers (None:
    ``DEFAULT_MIN_PERCENT``; 0 keeps every path).

    The file is written to a temporary name next to *path* and renamed, so
    a failed export never leaves half a file (or destroys an old one).
    """
    fmt = check_format(fmt) if fmt is not None else format_for_path(path)
    min_percent = check_min_percent(min_percent)
    from ..atomic_file import write_atomically
    write_atomically(path, lambda f: _write_to(data, fmt, f, title, min_percent))
    return fmt


def _write_to(data: ProfileData, fmt: str, f, title: Optional[str], min_percent: float) -> None:
    """Write *data* in *fmt* to the binary file *f*."""
    if fmt == "pstats":
        write_profile(f, data)
    elif fmt in BINARY_FORMATS:
        f.write(render_bytes(data, fmt, title=title))
    else:
        text = io.TextIOWrapper(f, encoding="utf-8", newline="\n")
        _write_text(data, fmt, text, title, min_percent)
        text.flush()
        text.detach()
