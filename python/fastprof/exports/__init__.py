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

The flame-graph-like formats (speedscope, collapsed, the HTML flame graph)
draw the call paths a fastprof file recorded with ``callpaths=True``; for a
plain cProfile file they draw a tree *estimated* from the caller graph and
say so.
"""

import io
import os
from typing import Optional

from ..profile_file import ProfileData, write_profile

FORMATS = ("pstats", "callgrind", "speedscope", "collapsed", "html")

# (suffix, format), longest suffixes first
_SUFFIXES = (
    (".speedscope.json", "speedscope"),
    (".callgrind", "callgrind"),
    (".collapsed", "collapsed"),
    (".pstats", "pstats"),
    (".folded", "collapsed"),
    (".prof", "pstats"),
    (".html", "html"),
    (".htm", "html"),
)


def known_extensions() -> str:
    return ", ".join(s for s, _ in _SUFFIXES) + ", callgrind.out*"


def format_for_path(path) -> str:
    """The export format a file name asks for, from its extension.

    Raises ValueError (naming the known extensions) when there is none.
    """
    name = os.path.basename(os.fspath(path))
    lower = name.lower()
    if lower.startswith("callgrind.out"):
        return "callgrind"
    for suffix, fmt in _SUFFIXES:
        if lower.endswith(suffix):
            return fmt
    raise ValueError(
        "cannot tell the output format from %r; use one of the extensions %s "
        "(or name the format: %s)" % (name, known_extensions(), ", ".join(FORMATS)))


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError("unknown format %r; known formats: %s" % (fmt, ", ".join(FORMATS)))
    return fmt


def render(data: ProfileData, fmt: str, *, title: Optional[str] = None) -> str:
    """The text of *data* in a text format (everything but ``pstats``)."""
    check_format(fmt)
    if fmt == "pstats":
        raise ValueError("pstats is a binary format; use export()")
    buf = io.StringIO()
    _write_text(data, fmt, buf, title)
    return buf.getvalue()


def _write_text(data: ProfileData, fmt: str, out, title: Optional[str]) -> None:
    if fmt == "callgrind":
        from .callgrind import write_callgrind
        write_callgrind(data, out, cmd=title or "")
    elif fmt == "speedscope":
        from .speedscope import write_speedscope
        write_speedscope(data, out, name=title or "")
    elif fmt == "collapsed":
        from .collapsed import write_collapsed
        write_collapsed(data, out)
    elif fmt == "html":
        from .html import write_html
        write_html(data, out, title=title)
    else:  # pragma: no cover - check_format ran
        raise ValueError(fmt)


def export(data: ProfileData, path, fmt: Optional[str] = None, *, title: Optional[str] = None) -> str:
    """Write *data* to *path* in *fmt* (None: from the extension); return the format.

    The file is written to a temporary name next to *path* and renamed, so
    a failed export never leaves half a file (or destroys an old one).
    """
    fmt = check_format(fmt) if fmt is not None else format_for_path(path)
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isfile(path):
        # a device, FIFO or the like (/dev/stdout): write in place
        _write_to(data, fmt, path, title)
        return fmt
    tmp = "%s.tmp%d" % (path, os.getpid())
    try:
        _write_to(data, fmt, tmp, title)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return fmt


def _write_to(data: ProfileData, fmt: str, path: str, title: Optional[str]) -> None:
    if fmt == "pstats":
        write_profile(path, data)
    else:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            _write_text(data, fmt, f, title)
