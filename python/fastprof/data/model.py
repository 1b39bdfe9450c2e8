"""The pstats dict and its arithmetic, below every view, export and mode:
the keys ``(file, line, name)``, which keys are *the same function* across
runs (C functions named with an address: ``match_key``), the key written
for such a function (``KeyChooser``), sums of tables (``merge_stats``, as
``pstats.Stats.add`` sums them), and ``pstats.Stats`` over a dict
(``pstats_of``).

- C functions named with an address (``<built-in method __new__ of type
  object at 0x7f...>``) get a new address every run (ASLR).  ``match_key``
  drops it, so diff, merge and the views treat them as one function; rows
  that differ only in the address are summed under the key (address
  included) of the *first* table that has one, in table and callers alike.

Imported by ``Profile`` when stats are read: nothing here may cost the
program's own imports before (re and typing are imported by names too).

The C extension is an accelerator here, never a need: without it (not
built on this machine) ``add_stats`` runs ``python_add_stats``, its oracle,
so view, diff and merge work the same (docs/architecture.md, "Accelerators
and their oracles").
"""

import re
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

try:
    from .. import _fastprof
except ImportError:  # not built here: the pure-Python loops below
    _fastprof = None

FuncKey = Tuple[str, int, str]

# " at 0x7f3a..." inside a C function's name: the address of the object the
# method is bound to, different in every process.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

# qualified names of code objects sharing one key, listed together
QUALNAME_SEPARATOR = " | "


def is_builtin(key: FuncKey) -> bool:
    return key[0] == "~" and key[1] == 0


def strip_address(name: str) -> str:
    """*name* without its ``" at 0x..."`` parts (unchanged if it has none)."""
    if " at 0x" not in name:
        return name
    return _ADDRESS.sub("", name)


def match_key(key: FuncKey) -> FuncKey:
    """The key that identifies *key*'s function across runs: C function names
    lose their addresses; every other key is returned as is."""
    if is_builtin(key) and isinstance(key[2], str) and " at 0x" in key[2]:
        return (key[0], key[1], strip_address(key[2]))
    return key


# the profiler's own methods, as C functions: cProfile's (_lsprof.Profiler)
# and fastprof's have other names for the same call
_PROFILER_METHOD = re.compile(r"<method '(enable|disable)' of '[\w.]*(lsprof|fastprof)[\w.]*' objects>$")


def profiler_method(key: FuncKey) -> Optional[str]:
    """``"enable"`` or ``"disable"`` when *key* is a profiler's own method
    (cProfile's or fastprof's), else None: what pairs the two profilers'
    rows of one call."""
    if not is_builtin(key):
        return None
    found = _PROFILER_METHOD.match(str(key[2]))
    return found.group(1) if found else None


class KeyChooser:
    """The key written for each function: the first one seen of its match_key."""

    def __init__(self):
        self.first: Dict[FuncKey, FuncKey] = {}
        # each key asked for -> the key chosen for it (profiles summed one at
        # a time ask for the same keys over and over)
        self._chosen: Dict[FuncKey, FuncKey] = {}

    def __call__(self, key: FuncKey) -> FuncKey:
        try:
            return self._chosen[key]
        except (KeyError, TypeError):  # (TypeError: a list, from JSON)
            pass
        key = tuple(key)
        chosen = self._chosen[key] = self.first.setdefault(match_key(key), key)
        return chosen


def merge_stats(tables: Iterable[Dict[FuncKey, tuple]],
                keys: Optional[KeyChooser] = None) -> Dict[FuncKey, tuple]:
    """The sum of pstats dicts, as ``pstats.Stats.add`` sums them (rows and
    caller edges of the same function, by *keys*: match_key's first key)."""
    out: Dict[FuncKey, list] = {}
    keys = keys if keys is not None else KeyChooser()
    for table in tables:
        add_stats(out, table, keys)
    return stats_result(out)


def add_stats(out: Dict[FuncKey, list], table: Dict[FuncKey, tuple], keys) -> None:
    """Add pstats dict *table* into *out* (rows as lists; stats_result() makes the dict).

    Each key and caller is summed under ``keys(key)`` (a KeyChooser, whose
    memo is read first, or any callable); edges are summed element by
    element.  The loop is C (csrc/fpy_stats_sum.c): a test's table is
    added into the session's sum for every test of
    ``pytest --fastprof-per-test``; ``python_add_stats`` without the
    extension."""
    if _fastprof is None:
        python_add_stats(out, table, keys)
        return
    _fastprof._add_stats(out, table, keys, getattr(keys, "_chosen", None))


def python_add_stats(out: Dict[FuncKey, list], table: Dict[FuncKey, tuple], keys) -> None:
    """``add_stats`` in Python: the C loop's oracle (tests/test_stats_c.py
    requires the same sums, in the same order), and the loop itself when
    the extension cannot be imported.  Python's additions in the C loop's
    order, and its TypeErrors on bad input (rows added before stay added)."""
    for key, row in list(table.items()):  # (a copy: keys() may change table)
        fields = tuple(row)
        if len(fields) != 5:
            raise TypeError("a pstats row has 5 fields (cc, nc, tt, ct, callers), not %d"
                            % len(fields))
        key = keys(key)
        cur = out.get(key)
        if cur is None:
            cur = out[key] = [0, 0, 0.0, 0.0, {}]
        elif not isinstance(cur, list) or len(cur) != 5:
            raise TypeError("the sum's rows must be lists [cc, nc, tt, ct, {}]")
        for i in range(4):
            cur[i] = cur[i] + fields[i]
        edges, callers = cur[4], fields[4]
        if not isinstance(edges, dict):
            raise TypeError("the sum's rows must be lists [cc, nc, tt, ct, {}]")
        if not isinstance(callers, dict):
            raise TypeError("a row's callers must be a dict, not %.100s" % type(callers).__name__)
        for caller, edge in callers.items():
            caller = keys(caller)
            prev = edges.get(caller)
            edges[caller] = tuple(edge) if prev is None else tuple(
                a + b for a, b in zip(prev, edge))


def stats_result(out: Dict[FuncKey, list]) -> Dict[FuncKey, tuple]:
    return {k: (v[0], v[1], v[2], v[3], v[4]) for k, v in out.items()}


def by_match_key(stats: Mapping[FuncKey, tuple]) -> Dict[FuncKey, tuple]:
    """*stats* with rows (and caller edges) of the same ``match_key`` summed,
    keyed by ``match_key``: what the views and diff show."""
    if not any(match_key(k) is not k for k in stats):
        return dict(stats)
    return merge_stats([stats], match_key)


def merge_qualnames(tables: Iterable[Mapping[FuncKey, str]]) -> Dict[FuncKey, str]:
    """The union of several ``qualnames`` maps (differing names listed together)."""
    found: Dict[FuncKey, List[str]] = {}
    for table in tables:
        add_qualnames(found, table)
    return qualnames_result(found)


def add_qualnames(found: Dict[FuncKey, List[str]], table: Mapping[FuncKey, str]) -> None:
    """Add ``qualnames`` map *table* into *found* (key -> names, each once)."""
    for key, text in table.items():
        names = found.setdefault(key, [])
        if len(names) == 1 and names[0] == text:  # (the same single name again: most keys)
            continue
        for q in text.split(QUALNAME_SEPARATOR):
            if q not in names:
                names.append(q)


def qualnames_result(found: Dict[FuncKey, List[str]]) -> Dict[FuncKey, str]:
    return {k: QUALNAME_SEPARATOR.join(sorted(v)) for k, v in found.items()}


class _StatsHolder:
    """What pstats.Stats() accepts: an object with create_stats() and .stats."""

    def __init__(self, stats):
        self.stats = stats

    def create_stats(self):
        pass


def pstats_of(stats, stream=None):
    """A pstats.Stats over a pstats dict; empty is allowed (pstats refuses it)."""
    import pstats  # not before a table is printed: import fastprof does not import it
    if stats:
        return pstats.Stats(_StatsHolder(stats), stream=stream)
    return pstats.Stats(stream=stream)


def sort_args(sort):
    """print_stats' sort argument(s) as a tuple for sort_stats(*...)."""
    if isinstance(sort, (tuple, list)):
        return tuple(sort)
    return (sort,)
