"""Callgrind format, for KCachegrind / QCachegrind and callgrind_annotate.

Format reference: https://valgrind.org/docs/manual/cl-format.html

One cost event, ``ns`` (nanoseconds, integers as the format requires),
and with memory (``--memory``) a second, ``bytes``: what each function
allocated itself, and each call with its callees.
Each function is a ``fl=``/``fn=`` block with its self cost on its first
line; each function it called follows as ``cfl=``/``cfn=``/``calls=`` with
the *inclusive* cost of those calls.  File and function names are
compressed (``fn=(3) name`` the first time, ``fn=(3)`` after).

This is the function-level graph pstats holds (call paths have no place in
the format).  A function's calls to itself (direct recursion) are left out:
pstats counts their time inside the outermost call already, so listing them
would count it twice in every inclusive cost.  Mutual recursion (a calls b
calls a) stays; KCachegrind shows it as a cycle.
"""

from collections import defaultdict
from typing import Dict, Optional, TextIO, Tuple

from ..data.model import by_match_key, is_builtin, match_key
from ..data.names import readable_name
from ..data.profile_file import FuncKey, ProfileData

BUILTIN_FILE = "<built-in>"


def _ns(seconds: float) -> int:
    return max(0, int(round(seconds * 1e9)))


def _names(stats, qualnames=None) -> Dict[FuncKey, str]:
    """Function names (qualified where known), with ``:line`` added where a
    file has two of the same name."""
    seen = defaultdict(set)
    for key in stats:
        seen[(key[0], key[2])].add(key[1])
    names = {}
    for key in stats:
        name = readable_name(key, qualnames)
        if not is_builtin(key) and len(seen[(key[0], key[2])]) > 1:
            name = "%s:%s" % (name, key[1])
        names[key] = name
    return names


def _bytes_by_match_key(memory) -> Tuple[Dict[FuncKey, int], Dict[Tuple[FuncKey, FuncKey], int]]:
    """(bytes each function allocated itself, bytes each caller -> callee
    edge allocated with its callees), keyed by match_key as the stats are."""
    own: Dict[FuncKey, int] = defaultdict(int)
    edges: Dict[Tuple[FuncKey, FuncKey], int] = defaultdict(int)
    for key, row in memory.items():
        own[match_key(key)] += int(row.allocated)
        for caller, edge in (row.callers or {}).items():
            edges[(match_key(caller), match_key(key))] += int(edge.allocated_incl)
    return own, edges


def write_callgrind(data: ProfileData, out: TextIO, title: Optional[str] = None) -> None:
    """Write *data*; *title* (the command line profiled) is the ``cmd:`` line."""
    cmd = title or ""
    stats = by_match_key(data.stats)  # C functions named with an address: one function
    if data.memory is not None:
        own_bytes, edge_bytes = _bytes_by_match_key(data.memory)

        def costs(ns: int, key: FuncKey, caller: Optional[FuncKey] = None) -> str:
            n = own_bytes.get(key, 0) if caller is None else edge_bytes.get((caller, key), 0)
            return "%d %d" % (ns, n)
    else:
        def costs(ns: int, key: FuncKey, caller: Optional[FuncKey] = None) -> str:
            return "%d" % ns
    names = _names(stats, data.qualnames)
    # callees[f] = {g: edge (nc, cc, tt, ct)} for each call f -> g
    callees: Dict[FuncKey, Dict[FuncKey, tuple]] = defaultdict(dict)
    for g, value in stats.items():
        for f, edge in value[4].items():
            callees[f][g] = edge
    file_ids: Dict[str, int] = {}
    fn_ids: Dict[FuncKey, int] = {}

    def file_ref(key: FuncKey) -> str:
        filename = BUILTIN_FILE if is_builtin(key) else str(key[0])
        if filename in file_ids:
            return "(%d)" % file_ids[filename]
        file_ids[filename] = len(file_ids) + 1
        return "(%d) %s" % (file_ids[filename], filename)

    def fn_ref(key: FuncKey) -> str:
        if key in fn_ids:
            return "(%d)" % fn_ids[key]
        fn_ids[key] = len(fn_ids) + 1
        return "(%d) %s" % (fn_ids[key], names[key])

    def line_of(key: FuncKey) -> int:
        line = key[1]
        return line if isinstance(line, int) and line > 0 else 0

    total = sum(_ns(v[2]) for v in stats.values())
    w = out.write
    w("# callgrind format\n")
    w("version: 1\n")
    w("creator: fastprof\n")
    if cmd:
        w("cmd: %s\n" % cmd.replace("\n", " "))
    w("positions: line\n")
    w("event: ns : Time (ns)\n")
    if data.memory is not None:
        w("event: bytes : Bytes allocated\n")
        w("events: ns bytes\n")
        summary = "%d %d" % (total, sum(own_bytes.get(k, 0) for k in stats))
    else:
        w("events: ns\n")
        summary = "%d" % total
    w("summary: %s\n" % summary)
    for key in sorted(stats, key=lambda k: (str(k[0]), line_of(k), str(k[2]))):
        cc, nc, tt, ct, _callers = stats[key]
        w("\n")
        w("fl=%s\n" % file_ref(key))
        w("fn=%s\n" % fn_ref(key))
        line = line_of(key)
        w("%d %s\n" % (line, costs(_ns(tt), key)))
        for callee in sorted(callees.get(key, ()), key=lambda k: (str(k[0]), line_of(k), str(k[2]))):
            if callee not in stats or callee == key:
                continue  # a direct recursive call is inside the outer call's cost already
            e_nc, _e_cc, _e_tt, e_ct = callees[key][callee][:4]
            w("cfl=%s\n" % file_ref(callee))
            w("cfn=%s\n" % fn_ref(callee))
            w("calls=%d %d\n" % (int(e_nc), line_of(callee)))
            w("%d %s\n" % (line, costs(_ns(e_ct), callee, key)))
    w("\ntotals: %s\n" % summary)
