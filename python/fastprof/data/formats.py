"""The one table of output formats: what every list of formats, every
format check and every writer dispatch is made from (the exports, both
command lines, %fastprof, the pytest plugin, the help texts).

Adding a format is one module in fastprof/exports/ and one row below.
Mistakes raise ValueError; the command lines turn it into their usage error.

``python -m fastprof`` imports this before the profiled program runs: it
imports nothing but os (the writers are imported when one is used).
"""

import os


class Format:
    """One output format (a row of FORMAT_TABLE)."""

    __slots__ = ("name", "suffixes", "prefixes", "reader", "binary", "tree", "folded", "writer")

    def __init__(self, name, suffixes, prefixes, reader, binary, tree, folded, writer):
        self.name = name            # what --to and export(fmt=) take
        self.suffixes = suffixes    # file names ending so choose it (lowercase)
        self.prefixes = prefixes    # file names starting so choose it
        self.reader = reader        # who reads it (the help text)
        self.binary = binary        # written as bytes, not text
        self.tree = tree            # drawn from the calling-context tree (-o implies --callpaths)
        self.folded = folded        # folds the call paths below min_percent into their callers
        # "module:function" under fastprof.exports, called as
        # function(data, out, title=..., min_fraction=...) (min_fraction if folded);
        # out is a binary file if binary, else a text file
        self.writer = writer


FORMAT_TABLE = (
    Format("pstats", (".prof", ".pstats"), (),
           "cProfile's format (+ fastprof's trailer): pstats, snakeviz, gprof2dot, tuna",
           binary=True, tree=False, folded=False, writer="pstats_file:write_pstats"),
    Format("callgrind", (".callgrind",), ("callgrind.out",), "KCachegrind / QCachegrind",
           binary=False, tree=False, folded=False, writer="callgrind:write_callgrind"),
    Format("speedscope", (".speedscope.json",), (), "https://www.speedscope.app",
           binary=False, tree=True, folded=True, writer="speedscope:write_speedscope"),
    Format("collapsed", (".collapsed", ".folded"), (), "flamegraph.pl / inferno folded stacks",
           binary=False, tree=True, folded=True, writer="collapsed:write_collapsed"),
    Format("html", (".html", ".htm"), (), "one self-contained HTML report (works offline)",
           binary=False, tree=True, folded=True, writer="html:write_html"),
    Format("pprof", (".pb.gz",), (),
           "go tool pprof, Pyroscope, Parca, Grafana (gzip'd profile.proto)",
           binary=True, tree=True, folded=False, writer="pprof:write_pprof"),
    # the Firefox Profiler reads any .json: no name of its own, --to gecko only
    Format("gecko", (), (), "Firefox Profiler, https://profiler.firefox.com (JSON; --to only)",
           binary=False, tree=True, folded=False, writer="gecko:write_gecko"),
)

BY_NAME = {row.name: row for row in FORMAT_TABLE}
FORMATS = tuple(BY_NAME)
# formats drawn from the calling-context tree (python -m fastprof -o implies --callpaths)
TREE_FORMATS = tuple(row.name for row in FORMAT_TABLE if row.tree)
# those of them that fold the paths below --min-percent into their callers
FOLDED_FORMATS = tuple(row.name for row in FORMAT_TABLE if row.folded)
# formats written as bytes, not text
BINARY_FORMATS = tuple(row.name for row in FORMAT_TABLE if row.binary)


def _name_forms(row):
    return list(row.suffixes) + ["%s*" % p for p in row.prefixes]


def said(names, last="and"):
    """*names* as a help text lists them: 'a, b and c' (*last*: 'or' for a choice).
    The help texts list formats by this and the sets above, never by hand."""
    names = list(names)
    return names[0] if len(names) == 1 else "%s %s %s" % (", ".join(names[:-1]), last, names[-1])


def known_names():
    """The file names that choose a format, for messages: '.prof, .pstats, ...'."""
    return ", ".join(n for row in FORMAT_TABLE for n in _name_forms(row))


# A format is looked up once per export, by name (check_format) or by file
# name (row_for_name, row_for_path); the row found is what is passed along.

def row_for_name(path):
    """The row of the format a file name asks for, or None if it names none
    (then: pstats)."""
    name = os.path.basename(os.fspath(path)).lower()
    for row in FORMAT_TABLE:
        if name.endswith(row.suffixes) or (row.prefixes and name.startswith(row.prefixes)):
            return row
    return None


def format_for_name(path):
    """The name of the format a file name asks for, or None (row_for_name)."""
    row = row_for_name(path)
    return None if row is None else row.name


def row_for_path(path):
    """The row of the format a file name asks for; ValueError (naming the
    known names) when there is none (the command lines write pstats then,
    as cProfile writes any name)."""
    row = row_for_name(path)
    if row is None:
        raise ValueError(
            "cannot tell the output format from %r; use one of the extensions %s "
            "(or name the format: %s)" % (os.path.basename(os.fspath(path)),
                                          known_names(), ", ".join(FORMATS)))
    return row


def format_for_path(path):
    """The name of the format a file name asks for; ValueError as row_for_path."""
    return row_for_path(path).name


def check_format(fmt):
    """The row of format *fmt*: a format's name, or its row (returned as it
    is: a caller that looked the format up passes the row along); ValueError
    if there is none."""
    if isinstance(fmt, Format):
        return fmt
    row = BY_NAME.get(fmt)
    if row is None:
        raise ValueError("unknown format %r; known formats: %s" % (fmt, ", ".join(FORMATS)))
    return row


def formats_help():
    """The help text of the output formats, made from the table."""
    rows = [(row.name, " ".join(_name_forms(row)), row.reader) for row in FORMAT_TABLE]
    w1 = max(len(r[0]) for r in rows)
    w2 = max(len(r[1]) for r in rows)
    lines = ["output formats (-o chooses by the file name, --to FORMAT by name):"]
    lines += ["  %-*s  %-*s  %s" % (w1, f, w2, n, r) for f, n, r in rows]
    lines += ["  any other name (out.txt, restats, x.fprof) is written as pstats, as",
              "  cProfile writes it; -o - writes to stdout (with --to).",
              "%s draw the call paths recorded with --callpaths (implied when -o or" % said(TREE_FORMATS),
              "--to names one of them); for a profile without them they draw a tree",
              "estimated from the caller graph (pprof: label call_stacks=estimated)."]
    return "\n".join(lines) + "\n"
