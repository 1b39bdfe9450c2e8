"""``fastprof check BASE NEW``: a performance gate for whole programs.

The exact signal is the call counts: every function's and every caller ->
callee edge's (``counts.counts_of_profile``: all rows but the garbage
collector's), functions paired across the two profiles by their portable
names (``portable_names``: file relative to its sys.path entry and qualified
name; C functions without addresses), so two installs of one program
compare.  Exit status 0 when they match within the tolerance, 1 when some
changed, 2 for bad input (the command line's rule).  ``--time`` also checks
each function's own time with ``fastprof diff``'s noise rule (a move beyond
``--threshold`` percent of its base value *and* beyond ``--min-time``).

``--memory`` (both files made with ``--memory``) also fails when a
function allocated more bytes itself (``MemoryRow.allocated``) than
``--memory-tolerance`` percent above its base value and more than
``--memory-min`` bytes above it (small moves are a cache or a resize).

A cProfile file against a fastprof file: where several code objects share a
key (dataclass ``__init__``s at ``<string>:2``), cProfile keeps one of them,
fastprof sums them; the fastprof file's row of such a key is replaced by the
row of the code object the cProfile file holds (``diff.as_cprofile_keeps``)
and the report says so.
"""

import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..data.names import stdname
from ..data.portable_names import portable_names
from . import counts
from .diff import CprofileTerms, as_cprofile_keeps, kept_note, make_noise
from .memory_view import MemoryChange, memory_growth
from .view import format_bytes, format_time

FORMATS = ("text", "markdown", "json")


@dataclass
class TimeChange:
    name: str
    old: float
    new: float


@dataclass
class CheckResult:
    changes: List[counts.Change]
    compared: int
    times: List[TimeChange] = field(default_factory=list)
    noise: Optional[str] = None      # the noise rule of --time, described
    tolerant: bool = False           # a tolerance above 0 was given
    # what was done to compare a fastprof file with a cProfile file (diff.as_cprofile_keeps)
    cprofile: Optional[CprofileTerms] = None
    memory: List[MemoryChange] = field(default_factory=list)
    memory_rule: Optional[str] = None  # the rule of --memory, described

    @property
    def failed(self) -> bool:
        return bool(self.changes or self.times or self.memory)


def own_times(data, qualnames: bool = True) -> Dict[str, float]:
    """{portable name: own time} of a profile's functions (C ones summed without addresses)."""
    keys = [k for k in data.stats if not counts.left_out(k)]
    names = portable_names(keys, data.qualnames if qualnames else {}, data.paths)
    out: Dict[str, float] = {}
    for key in keys:
        out[names[key]] = out.get(names[key], 0.0) + float(data.stats[key][2])
    return out


def check(base, new, tolerance: float = 0.0, c_tolerance: Optional[float] = None,
          time: bool = False, threshold: float = 10.0, min_time: str = "1%",
          memory: bool = False, memory_tolerance: float = counts.BYTES_TOLERANCE,
          memory_min: int = counts.BYTES_MIN) -> CheckResult:
    """Compare profiles *base* and *new* (ProfileData).  Functions are named
    by qualified name, or by the key's name on both sides when one side has
    none (a cProfile file), and on cProfile's terms where it holds one of
    several code objects sharing a key (``as_cprofile_keeps``)."""
    qual = bool(base.qualnames) and bool(new.qualnames)
    grown = memory_growth(base, new, memory_tolerance, memory_min, qual) if memory else []
    base, new, terms = as_cprofile_keeps(base, new)
    old_table = counts.counts_of_profile(base, qual)
    new_table = counts.counts_of_profile(new, qual)
    result = CheckResult(counts.compare(old_table, new_table, tolerance, c_tolerance),
                         len(set(old_table) | set(new_table)),
                         tolerant=bool(tolerance or c_tolerance), cprofile=terms)
    if time:
        a, b = own_times(base, qual), own_times(new, qual)
        noise = make_noise(sum(a.values()), sum(b.values()), threshold, min_time)
        result.noise = noise.describe()
        for name in set(a) & set(b):
            if noise.moved(a[name], b[name]):
                result.times.append(TimeChange(name, a[name], b[name]))
        result.times.sort(key=lambda t: (-abs(t.new - t.old), t.name))
    if memory:
        result.memory = grown
        result.memory_rule = "more than %g%% and %s above" % (memory_tolerance, format_bytes(memory_min))
    return result


def _memory_cells(m: MemoryChange) -> Tuple[str, str, str]:
    return format_bytes(m.old), format_bytes(m.new), "+" + format_bytes(m.new - m.old)


def _time_cells(t: TimeChange, micro: str) -> Tuple[str, str, str]:
    sign = "+" if t.new >= t.old else "-"
    return format_time(t.old, micro), format_time(t.new, micro), sign + format_time(abs(t.new - t.old), micro)


def text(result: CheckResult, base_name: str, new_name: str, limit: int = 30,
         micro: str = "\u00b5") -> str:
    lines = []
    # (the <gc> row's fold is said where own times are compared: --time)
    notes = ["note: " + line for line in kept_note(result.cprofile, base_name, new_name,
                                                    collections=result.noise is not None)]
    if not result.failed:
        lines.append("fastprof check: %s -> %s: no call count changed%s (%d functions and edges)%s"
                     % (base_name, new_name, " beyond the tolerance" if result.tolerant else "",
                        result.compared,
                        "; no time moved beyond noise (%s)" % result.noise if result.noise else ""))
        if result.memory_rule:
            lines[-1] += "; no function allocates %s its base" % result.memory_rule
        return "\n".join(lines + notes) + "\n"
    if result.changes:
        n = len(result.changes)
        lines.append("fastprof check: %s -> %s: %d call count%s changed (of %d functions and edges):"
                     % (base_name, new_name, n, "" if n == 1 else "s", result.compared))
        for c in result.changes[:limit or None]:
            lines.append("    %-20s %s" % (counts.describe(c), c.entry))
        if limit and n > limit:
            lines.append("    ... and %d more" % (n - limit))
    else:
        lines.append("fastprof check: %s -> %s: no call count changed" % (base_name, new_name))
    if result.times:
        n = len(result.times)
        lines.append("%d function%s' own time moved beyond noise (%s):"
                     % (n, "" if n == 1 else "s", result.noise))
        for t in result.times[:limit or None]:
            old, new, delta = _time_cells(t, micro)
            lines.append("    %s -> %s (%s)  %s" % (old, new, delta, t.name))
    if result.memory:
        n = len(result.memory)
        lines.append("%d function%s allocate%s %s %s base:"
                     % (n, "" if n == 1 else "s", "s" if n == 1 else "", result.memory_rule,
                        "its" if n == 1 else "their"))
        for m in result.memory[:limit or None]:
            old, new, delta = _memory_cells(m)
            lines.append("    %s -> %s (%s)  %s" % (old, new, delta, m.name))
        if limit and n > limit:
            lines.append("    ... and %d more" % (n - limit))
    elif result.memory_rule:
        lines.append("no function allocates %s its base" % result.memory_rule)
    return "\n".join(lines + notes) + "\n"


def markdown(result: CheckResult, base_name: str, new_name: str, limit: int = 30) -> str:
    md = counts.md_escape
    out = ["## fastprof check: %s -> %s\n" % (counts.md_code(base_name), counts.md_code(new_name))]
    if not result.changes:
        out.append("No call count changed (%d functions and edges).\n" % result.compared)
    else:
        out.append("**%d call count%s changed** (of %d functions and edges)\n" % (
            len(result.changes), "" if len(result.changes) == 1 else "s", result.compared))
        out.append("| before | after | change | function or edge |\n|---:|---:|---:|---|")
        for c in result.changes[:limit or None]:
            out.append("| %d | %d | %+d | %s |" % (c.old, c.new, c.delta, counts.md_code(c.entry)))
        if limit and len(result.changes) > limit:
            out.append("\n... and %d more" % (len(result.changes) - limit))
    if result.noise is not None:
        if not result.times:
            out.append("\nNo own time moved beyond noise (%s)." % md(result.noise))
        else:
            out.append("\n**%d own time%s moved beyond noise** (%s)\n" % (
                len(result.times), "" if len(result.times) == 1 else "s", md(result.noise)))
            out.append("| before | after | change | function |\n|---:|---:|---:|---|")
            for t in result.times[:limit or None]:
                old, new, delta = _time_cells(t, "\u00b5")
                out.append("| %s | %s | %s | %s |" % (old, new, delta, counts.md_code(t.name)))
    if result.memory_rule is not None:
        if not result.memory:
            out.append("\nNo function allocates %s its base." % md(result.memory_rule))
        else:
            out.append("\n**%d function%s allocate%s %s %s base**\n" % (
                len(result.memory), "" if len(result.memory) == 1 else "s",
                "s" if len(result.memory) == 1 else "", md(result.memory_rule),
                "its" if len(result.memory) == 1 else "their"))
            out.append("| before | after | change | function |\n|---:|---:|---:|---|")
            for m in result.memory[:limit or None]:
                out.append("| %s | %s | %s | %s |" % (_memory_cells(m) + (counts.md_code(m.name),)))
    for line in kept_note(result.cprofile, base_name, new_name, collections=result.noise is not None):
        out.append("\n" + md(line))
    return "\n".join(out) + "\n"


def as_json(result: CheckResult, base_name: str, new_name: str) -> str:
    obj = {"base": base_name, "new": new_name, "failed": result.failed,
           "compared": result.compared,
           "changed": [{"entry": c.entry, "old": c.old, "new": c.new} for c in result.changes]}
    if result.noise is not None:
        obj["noise"] = result.noise
        obj["times"] = [{"function": t.name, "old": t.old, "new": t.new} for t in result.times]
    if result.memory_rule is not None:
        obj["memory_rule"] = result.memory_rule
        obj["memory"] = [{"function": m.name, "old": m.old, "new": m.new} for m in result.memory]
    if result.cprofile is not None and result.cprofile.kept:
        # keys compared with the one code object of several the cProfile file holds
        obj["cprofile_kept"] = [{"function": stdname(k.key), "code_objects": k.code_objects,
                                 "qualname": k.qualname, "exact": k.exact, "side": result.cprofile.side}
                                for k in result.cprofile.kept]
    return json.dumps(obj, indent=1) + "\n"


def render(result: CheckResult, fmt: str, base_name: str, new_name: str, limit: int = 30,
           micro: str = "\u00b5") -> str:
    if fmt == "markdown":
        return markdown(result, base_name, new_name, limit)
    if fmt == "json":
        return as_json(result, base_name, new_name)
    return text(result, base_name, new_name, limit, micro)
