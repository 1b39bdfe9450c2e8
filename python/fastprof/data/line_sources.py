"""The source lines of line-profiled functions, kept in the profile file
(trailer key ``sources``), so a listing read on another machine or from
another directory still shows the code (``fastprof view --lines``, the HTML
report).  Only the lines a listing shows are kept: each function's lines from
its first line to its last line with stats."""

import linecache
from typing import Dict, Mapping

# filename -> {lineno: text without its line end}
Sources = Dict[str, Dict[int, str]]


def listed_lines(key: tuple, table: Mapping[int, object]) -> range:
    """The line numbers a listing of *key* (with line stats *table*) shows."""
    first = key[1] if isinstance(key[1], int) else min(table, default=0)
    return range(min([first] + list(table)), max(list(table) + [first]) + 1)


def capture(lines: Mapping[tuple, Mapping[int, object]], stored: Mapping[str, Mapping[int, str]] = ()) -> Sources:
    """The listed lines of every function of *lines*: the text of *stored*
    where it has it, else read now (linecache); files not readable now are
    left out."""
    stored = dict(stored or {})
    out: Sources = {}
    for key, table in lines.items():
        filename = str(key[0])
        if not table or not filename or filename.startswith("<"):
            continue
        have = stored.get(filename, {})
        readable = None
        for lineno in listed_lines(key, table):
            if lineno in have:
                out.setdefault(filename, {})[lineno] = have[lineno]
                continue
            if readable is None:
                readable = bool(linecache.getlines(filename))
            if readable:
                out.setdefault(filename, {})[lineno] = linecache.getline(filename, lineno).rstrip("\r\n")
    return out


def add(into: Sources, more: Mapping[str, Mapping[int, str]]) -> None:
    """Put the lines of *more* into *into* (the first text seen of a line stays)."""
    for filename, texts in more.items():
        have = into.setdefault(filename, {})
        for lineno, text in texts.items():
            have.setdefault(int(lineno), str(text))


def line_getter(sources: Mapping[str, Mapping[int, str]]):
    """``getline(filename, lineno)`` and ``known(filename)``: the stored text
    of a line, else the file's as read now ("" when neither has it)."""
    def known(filename: str) -> bool:
        return bool(sources.get(filename)) or bool(linecache.getlines(filename))

    def getline(filename: str, lineno: int) -> str:
        texts = sources.get(filename)
        if texts:
            return texts.get(lineno, "")
        return linecache.getline(filename, lineno).rstrip("\r\n")
    return getline, known


def from_marshal(obj: Mapping) -> Sources:
    return {str(f): {int(n): str(t) for n, t in v.items()} for f, v in obj.items()}


def to_marshal(sources: Mapping[str, Mapping[int, str]]) -> Dict[str, Dict[int, str]]:
    return {str(f): {int(n): str(t) for n, t in v.items()} for f, v in sources.items() if v}


