"""Exact call counts as a regression signal: what ``pytest --fastprof-counts``
keeps per test and ``fastprof check`` compares (docs/gate.md).

A *count table* is ``{entry: count}``, every entry a line of text that
survives installs and machines (``portable_names``)::

    toolz/itertoolz.py:groupby                                   a function's calls
    toolz/itertoolz.py:groupby -> ~:<method 'append' of 'list' objects>   an edge's
    toolz/itertoolz.py:groupby line 101                          a line's hits (--lines)

A test's table is made from its call paths (``counts_of_test``): only the
test's own work is counted -- its test function, fixtures and what they
call -- and what does not depend on the code under test is left out
(``NOISE``, ``SEALED``, ``OPAQUE`` and the test framework, ``FRAMEWORK``).
A whole program's table (``counts_of_profile``) is all its rows and edges
but the garbage collector's.

Baselines are text files of sections, one per test, sorted (``write_tables``,
``read_tables``)::

    # fastprof call counts, Python 3.12 ...
    [test_groupby]
    1 toolz/itertoolz.py:groupby
    4 toolz/itertoolz.py:groupby -> ~:<method 'append' of 'list' objects>
"""

import json
import os
import re
import sys
import sysconfig
from dataclasses import dataclass
from typing import Collection, Dict, Iterable, List, Mapping, Optional, Tuple

from ..data.model import FuncKey, is_builtin
from ..data.portable_names import portable_names

CountTable = Dict[str, int]

EDGE = " -> "
LINE = " line "
GC_NAME = "<gc>"

# The test framework: its frames are not the test's work.  What they call is
# not counted either, except code of the project (the test function, its
# fixtures, the project's functions: "user code", below), which is counted
# with everything it calls.  Top-level packages (a file's path relative to
# its sys.path entry, first part).
FRAMEWORK = frozenset((
    "_pytest", "pytest", "pluggy", "py", "iniconfig", "xdist", "execnet",
    "fastprof", "exceptiongroup", "tomli", "pytest_timeout", "_virtualenv",
))
# Standard modules whose insides depend on timing or on caches filled by
# earlier tests: a call of one of their functions from counted code is
# counted, what it runs inside is not -- except code of the project it calls
# back (a thread's target, a re.sub callback, a singledispatch implementation,
# a coroutine under asyncio's loop), which is counted again.
OPAQUE = frozenset((
    "threading", "queue", "_threading_local", "concurrent", "multiprocessing",
    "asyncio", "selectors", "socketserver", "sched", "subprocess",
    "re", "sre_compile", "sre_parse", "sre_constants", "functools", "linecache",
    "logging", "weakref", "_weakrefset", "contextvars",
))
# The same, with nothing inside counted at all (ABC subclass caches call
# __subclasshook__ once per type; imports run once per process).
SEALED = frozenset(("abc", "_py_abc", "importlib", "typing"))
# Never counted, nor anything below: module bodies (run once, by the first
# test that imports the module), the import system's frozen modules, codec
# search functions (run at an encoding's first use), garbage collections
# (and the finalizers they run: when a collection starts depends on every
# allocation since the process started).
NOISE_FILES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>",
               "<frozen zipimport>")
NOISE_PACKAGES = frozenset(("encodings",))

# kinds of function
USER, OTHER, OPAQUE_KIND, SEALED_KIND, FRAMEWORK_KIND, NOISE_KIND = range(6)
# what a node's children are counted under
_HIDDEN, _COUNTING, _DEAD = range(3)


def _stdlib_dirs() -> List[str]:
    paths = sysconfig.get_paths()
    dirs = {os.path.join(os.path.normpath(paths[k]), "") for k in ("stdlib", "platstdlib")
            if paths.get(k)}
    return sorted(dirs, key=len, reverse=True)


def _top(relpath: str) -> str:
    """The top-level module of a path relative to its sys.path entry."""
    first = relpath.replace("\\", "/").split("/", 1)[0]
    return first[:-3] if first.endswith(".py") else first


def function_kind(key: FuncKey, relpath: str, stdlib_dirs: Iterable[str],
                  framework_files: Collection[str] = ()) -> int:
    """What the test gate does with function *key* (file relative path
    *relpath*); *framework_files*: more files of the test framework (the
    pytest plugins' modules, as relative paths)."""
    filename, _line, name = key
    if is_builtin(key):
        return NOISE_KIND if name == GC_NAME else OTHER
    if name == "<module>" or filename in NOISE_FILES:
        return NOISE_KIND
    if filename.startswith("<frozen "):
        top = filename[len("<frozen "):-1].split(".", 1)[0]
    elif filename.startswith("<"):
        return OTHER          # exec'd text: namedtuple and dataclass methods...
    else:
        top = _top(relpath)
        in_stdlib = any(filename.startswith(d) for d in stdlib_dirs) and not any(
            m in filename for m in ("site-packages", "dist-packages"))
        if not in_stdlib:
            if top in FRAMEWORK or top.startswith("pytest_") or relpath in framework_files:
                return FRAMEWORK_KIND
            return USER
    if top in NOISE_PACKAGES:
        return NOISE_KIND
    if top in SEALED:
        return SEALED_KIND
    if top in OPAQUE:
        return OPAQUE_KIND
    return OTHER


def counts_of_test(data, lines: bool = True, framework_files: Collection[str] = (),
                   noise_keys: Collection[FuncKey] = ()) -> CountTable:
    """The count table of one test's profile *data* (a ProfileData with call
    paths): functions, edges and, with *lines*, line hits of what the test
    itself ran (see the module docstring).  *framework_files*: see
    ``function_kind``; *noise_keys*: functions never counted, nor what they
    call (fixtures of a wider scope than the test's, whose setup runs in
    whichever test needs them first)."""
    cp = data.callpaths
    if cp is None:
        raise ValueError("the profile has no call paths (record it with callpaths=True)")
    keys = [tuple(k) for k in cp.functions]
    everyone = portable_names(set(keys), data.qualnames, data.paths)  # for the files' paths
    dirs = _stdlib_dirs()
    kinds = [NOISE_KIND if k in noise_keys else function_kind(k, _relpath(k, everyone), dirs, framework_files)
             for k in keys]
    fcalls: Dict[int, int] = {}
    ecalls: Dict[Tuple[int, int], int] = {}
    table: CountTable = {}
    under: List[int] = []
    counted: List[bool] = []
    # edges: (caller, callee) function indexes -> [calls seen counted, seen hidden]
    edges: Dict[Tuple[int, int], List[int]] = {}
    for parent, func, calls, _tt, _ct in cp.nodes:
        kind = kinds[func]
        ctx = _HIDDEN if parent < 0 else under[parent]
        if ctx == _DEAD or kind == NOISE_KIND:
            ok, below = False, _DEAD
        elif ctx == _COUNTING:
            ok = True
            below = (_DEAD if kind == SEALED_KIND else
                     _HIDDEN if kind in (OPAQUE_KIND, FRAMEWORK_KIND) else _COUNTING)
        else:
            ok = kind == USER
            below = _COUNTING if ok else _HIDDEN
        under.append(below)
        counted.append(ok)
        if parent >= 0:
            seen = edges.setdefault((cp.nodes[parent][1], func), [0, 0])
            seen[0 if ok and counted[parent] else 1] += calls
        seen = edges.setdefault((func, func), [0, 0])  # direct recursion: folded into the node
        seen[0 if ok else 1] += 1
        if not ok or not calls:
            continue
        fcalls[func] = fcalls.get(func, 0) + calls
    # An edge's calls: the stats' (exact, direct recursion too) when the edge
    # was only seen in counted code, else the call paths' (where a node folds
    # direct recursion, its calls are all the edge's from its parent).
    stats = data.stats
    for (a, b), (inside, outside) in edges.items():
        if not inside:
            continue
        ka, kb = keys[a], keys[b]
        row = stats.get(kb)
        exact = row[4].get(ka) if row is not None else None
        if a == b:
            if outside or exact is None:
                continue
            calls = int(exact[0])
        elif not outside and exact is not None:
            calls = int(exact[0])
        else:
            calls = inside - (int(row[4][kb][0]) if row is not None and kb in row[4] else 0)
            if calls <= 0:
                continue
        if calls:
            ecalls[(a, b)] = calls
    # named among the counted functions only (a "#2" among repeated names
    # must not depend on what else ran, uncounted)
    names = portable_names({keys[f] for f in fcalls}, data.qualnames, data.paths)
    for f, calls in fcalls.items():
        name = names[keys[f]]
        table[name] = table.get(name, 0) + calls
    for (a, b), calls in ecalls.items():
        if keys[a] in names and keys[b] in names:
            edge = names[keys[a]] + EDGE + names[keys[b]]
            table[edge] = table.get(edge, 0) + calls
    if lines:
        for key, per_line in (data.lines or {}).items():
            name = names.get(tuple(key))
            if name is None or name not in table:
                continue
            for lineno, value in per_line.items():
                hits = value[0] if isinstance(value, (tuple, list)) else value
                if hits:
                    table["%s%s%d" % (name, LINE, lineno)] = int(hits)
    return table


def _relpath(key: FuncKey, names: Mapping[FuncKey, str]) -> str:
    name = names[key]
    return name.split(":", 1)[0] if ":" in name else ""


_PROFILER_ROWS = re.compile(r"<method '(enable|disable)' of '[\w.]*(lsprof|fastprof)[\w.]*' objects>$")


def left_out(key: FuncKey) -> bool:
    """The garbage collector's row and the profiler's own (enable, disable:
    cProfile's and fastprof's differ)."""
    return is_builtin(key) and (key[2] == GC_NAME or bool(_PROFILER_ROWS.match(str(key[2]))))


def counts_of_profile(data, qualnames: bool = True) -> CountTable:
    """The count table of a whole program's profile *data*: every function's
    calls and every edge's, but the garbage collector's (a collection starts
    when allocations since the last one say so) and the profiler's own
    enable/disable -- cProfile files too.  ``qualnames=False`` names functions
    by the key's name (what a cProfile file has), for comparing with one."""
    keys = [k for k in data.stats if not left_out(k)]
    callers = set()
    for row in data.stats.values():
        callers.update(row[4])
    names = portable_names(set(keys) | {c for c in callers if not left_out(c)},
                           data.qualnames if qualnames else {}, data.paths)
    table: CountTable = {}
    for key in keys:
        row = data.stats[key]
        name = names[key]
        table[name] = table.get(name, 0) + int(row[1])
        for caller, edge in row[4].items():
            if caller in names:
                text = names[caller] + EDGE + name
                table[text] = table.get(text, 0) + int(edge[0])
        for lineno, value in (data.lines or {}).get(key, {}).items():
            hits = value[0] if isinstance(value, (tuple, list)) else value
            if hits:
                table["%s%s%d" % (name, LINE, lineno)] = int(hits)
    return table


# ---------------------------------------------------------------- comparing

@dataclass(frozen=True)
class Change:
    entry: str
    old: int
    new: int

    @property
    def delta(self) -> int:
        return self.new - self.old


def is_c_entry(entry: str) -> bool:
    """Whether *entry* counts a C function (a function's, or the callee's of an edge)."""
    callee = entry.rsplit(EDGE, 1)[-1]
    return callee.startswith("~:")


def parse_tolerance(text) -> float:
    """A tolerance in percent of the old count: ``0``, ``5``, ``"5%"``; ValueError
    unless a number >= 0."""
    try:
        value = float(text.rstrip("%") if isinstance(text, str) else text)
    except (TypeError, ValueError):
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError("%r is not a percentage >= 0 (e.g. 0 or 5)" % (text,))
    return value


def compare(old: Mapping[str, int], new: Mapping[str, int], tolerance: float = 0.0,
            c_tolerance: Optional[float] = None) -> List[Change]:
    """The entries whose count moved by more than *tolerance* percent of the
    old count (*c_tolerance* for C functions; default: *tolerance*), new or
    gone entries always; biggest change first."""
    c_tolerance = tolerance if c_tolerance is None else c_tolerance
    out = []
    for entry in set(old) | set(new):
        a, b = old.get(entry, 0), new.get(entry, 0)
        if a == b:
            continue
        tol = c_tolerance if is_c_entry(entry) else tolerance
        if a and b and abs(b - a) <= tol / 100.0 * a:
            continue
        out.append(Change(entry, a, b))
    out.sort(key=lambda c: (-abs(c.delta), entry_sort_key(c.entry)))
    return out


def entry_sort_key(entry: str) -> Tuple[str, int]:
    """Entries sorted by text, line entries by line number."""
    if LINE in entry:
        head, _, tail = entry.rpartition(LINE)
        if tail.isdigit():
            return head + LINE, int(tail)
    return entry, -1


# ---------------------------------------------------------------- baseline files

HEADER = ("# fastprof call counts, Python %s: per test, the calls of each function and\n"
          "# caller -> callee edge it ran (docs/gate.md). Written by pytest --fastprof-counts;\n"
          "# --fastprof-counts-update rewrites it.\n")


class BaselineError(ValueError):
    """A baseline file that cannot be read: its path and line say where."""


def format_tables(tables: Mapping[str, CountTable], version: str) -> str:
    """The text of a baseline file: *tables* ({test name: table}), sorted."""
    out = [HEADER % version]
    for test in sorted(tables):
        out.append("\n[%s]\n" % test)
        table = tables[test]
        for entry in sorted(table, key=entry_sort_key):
            out.append("%d %s\n" % (table[entry], entry))
    return "".join(out)


def parse_tables(text: str, where: str = "baseline") -> Dict[str, CountTable]:
    """The inverse of ``format_tables``; BaselineError on a malformed line."""
    tables: Dict[str, CountTable] = {}
    current: Optional[CountTable] = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = tables.setdefault(line[1:-1], {})
            continue
        count, _, entry = line.partition(" ")
        if current is None or not count.isdigit() or not entry:
            raise BaselineError("%s:%d: not a count line: %r" % (where, n, line))
        current[entry] = int(count)
    return tables


def read_tables(path: str) -> Dict[str, CountTable]:
    """A baseline file's tables ({} if there is no file); BaselineError if malformed."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError("cannot read %s: %s" % (path, exc)) from None
    return parse_tables(text, path)


def version_tag() -> str:
    """This interpreter's minor version, as baselines are keyed: ``py3.12``."""
    return "py%d.%d" % sys.version_info[:2]


def baseline_file(directory: str, nodeid: str) -> Tuple[str, str]:
    """(path of the baseline file, test name inside it) for test *nodeid*:
    ``DIR/py3.12/tests/test_foo.py.counts`` and ``test_a[1]``."""
    module, sep, test = nodeid.partition("::")
    if not sep:
        module, test = "tests", nodeid
    parts = [p if p not in ("", ".", "..") else "__" for p in module.replace("\\", "/").split("/")]
    return os.path.join(directory, version_tag(), *parts) + ".counts", test


# ---------------------------------------------------------------- reports

@dataclass
class Outcome:
    """What a comparison found: per test (node id) its changes; the tests
    recorded anew; notes (one line each)."""
    changed: Dict[str, List[Change]]
    recorded: List[str]
    compared: int = 0
    notes: Optional[List[str]] = None
    errors: Optional[List[str]] = None   # baselines that could not be read

    @property
    def failed(self) -> bool:
        return bool(self.changed or self.errors)


def describe(change: Change) -> str:
    if change.old == 0:
        return "new: %d" % change.new
    if change.new == 0:
        return "gone: was %d" % change.old
    return "%d -> %d (%+d)" % (change.old, change.new, change.delta)


def text_lines(outcome: Outcome, limit: int = 20) -> List[str]:
    """The terminal summary of *outcome*: per changed test, its biggest changes."""
    lines = []
    for test in sorted(outcome.changed):
        changes = outcome.changed[test]
        lines.append("%s: %d count%s changed" % (test, len(changes), "" if len(changes) == 1 else "s"))
        for c in changes[:limit or None]:
            lines.append("    %-20s %s" % (describe(c), c.entry))
        if limit and len(changes) > limit:
            lines.append("    ... and %d more" % (len(changes) - limit))
    return lines


def md_escape(text: str) -> str:
    """*text* for markdown prose (no HTML tags, no table breaks)."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def md_code(text: str) -> str:
    """*text* as a markdown code span in a table cell."""
    return "`%s`" % text.replace("`", "'").replace("|", "\\|")


def markdown(outcome: Outcome, title: str = "fastprof call counts", limit: int = 20) -> str:
    """*outcome* as markdown (a GitHub step summary)."""
    out = ["## %s\n" % title]
    if outcome.failed:
        out.append("**%d test%s changed their call counts** (%d compared)\n" % (
            len(outcome.changed), "" if len(outcome.changed) == 1 else "s", outcome.compared))
    else:
        out.append("No call count changed (%d compared).\n" % outcome.compared)
    for test in sorted(outcome.changed):
        changes = outcome.changed[test]
        out.append("\n### %s\n\n| before | after | change | function or edge |\n|---:|---:|---:|---|" % md_code(test))
        for c in changes[:limit or None]:
            out.append("| %d | %d | %+d | %s |" % (c.old, c.new, c.delta, md_code(c.entry)))
        if limit and len(changes) > limit:
            out.append("\n... and %d more" % (len(changes) - limit))
    if outcome.recorded:
        out.append("\n%d test%s recorded anew (no baseline)." % (
            len(outcome.recorded), "" if len(outcome.recorded) == 1 else "s"))
    for note in (outcome.errors or []) + (outcome.notes or []):
        out.append("\n%s" % md_escape(note))
    return "\n".join(out) + "\n"


def as_json(outcome: Outcome) -> str:
    obj = {"failed": outcome.failed, "compared": outcome.compared,
           "changed": {t: [{"entry": c.entry, "old": c.old, "new": c.new} for c in cs]
                       for t, cs in sorted(outcome.changed.items())},
           "recorded": sorted(outcome.recorded), "notes": list(outcome.notes or []),
           "errors": list(outcome.errors or [])}
    return json.dumps(obj, indent=1, sort_keys=True) + "\n"

