"""``fastprof diff``: what changed between two profiles of the same program.

Functions are matched by name, not by absolute path, so two profiles of
one program against a library installed in two places (two venvs, two
``--target`` directories, a wheel and an editable checkout) compare the
same functions (``portable_names.pair_functions``): each file is named by
its module's path (``jinja2/runtime.py``, as the profiled process imported
it: the trailer's ``paths``; else relative to its ``sys.path`` entry), and functions pair
by that path and qualified name (``Context.resolve``); several of one
qualified name (the lambdas of one function) pair in order of first line;
a function whose first line moved (the code around it was edited) still
pairs.  When one profile has no qualified names (a cProfile file), both are
paired by plain names: a property's getter and setter, the lambdas of one
file, pair by file, name and first line, then in order of first line.  C
functions whose name carries an address
(``<built-in method __new__ of type object at 0x7f...>``, a new address
every run) are matched, and shown, without it (``model.match_key``).
Rows show the relative path; ``full_paths`` shows the recorded one.

Two runs of unchanged code never have the same times, so a change is only
reported when it is beyond noise (``Noise``): call counts are exact, so any
difference in them (or a function new or gone) is a change; a time counts
only if it moved by more than ``threshold`` of its base value *and* by more
than an absolute ``floor`` (by default 1% of the larger profile's total),
so that tiny functions do not flap.  Rows are ranked by significance (see
``ranked``).

Functions with line stats (``--lines``) in both profiles get a section of
their own: the lines whose hits changed or whose time moved beyond the
same noise, the biggest time change first (``line_changes``).

A cProfile file against a fastprof file: where several code objects share
one key (every dataclass ``__init__`` at ``<string>:2``), cProfile keeps one
of them and drops the others' calls, fastprof sums them; fastprof's file
keeps each one's row (``ProfileData.shared_keys``), and the comparison
takes the one the cProfile file holds (``as_cprofile_keeps``: also used by
``fastprof check``).
"""

import linecache
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from ..data.model import FuncKey, by_match_key, is_builtin, merge_qualnames, profiler_method
from ..data.names import readable_name, stdname
from ..data.portable_names import pair_functions, portable_parts
from ..data.profile_file import ProfileData
from .view import format_count, format_time, render_table, totals

METRICS = ("tottime", "cumtime", "calls")
_ZERO = (0, 0, 0.0, 0.0)
DEFAULT_THRESHOLD = 10.0     # percent of the base time
DEFAULT_MIN_TIME = "1%"      # of the larger profile's total time


@dataclass
class Noise:
    """What counts as noise: a time change of at most ``threshold`` (a
    fraction of the base value) or at most ``floor`` seconds."""
    threshold: float = 0.0
    floor: float = 0.0

    def moved(self, base: float, new: float) -> bool:
        """Whether a time went from *base* to *new* by more than the noise."""
        d = abs(new - base)
        return d > self.floor and d > self.threshold * abs(base)

    def describe(self, micro: str = "\u00b5") -> str:
        return "within \u00b1%g%% or under %s" % (100 * self.threshold, format_time(self.floor, micro))


def parse_threshold(value) -> float:
    """A noise threshold in percent of the base value: ``10``, ``"10"`` or
    ``"10%"`` -> 10.0; ValueError unless a number >= 0."""
    try:
        number = float(value.rstrip("%") if isinstance(value, str) else value)
    except (TypeError, ValueError):
        number = -1.0
    if not 0 <= number < float("inf"):
        raise ValueError("%r is not a percentage >= 0 (e.g. 10)" % (value,))
    return number


def parse_min_time(text: str) -> Tuple[str, float]:
    """``"2ms"``, ``"150us"``, ``"0.003"`` (seconds) or ``"1%"`` (of the total)
    -> ``("s", seconds)`` or ``("%", percent)``; ValueError if neither."""
    t = str(text).strip().lower().replace("\u00b5", "u")
    try:
        if t.endswith("%"):
            value, kind = float(t[:-1]), "%"
        else:
            for unit, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0), ("", 1.0)):
                if t.endswith(unit):
                    value, kind = float(t[:len(t) - len(unit)]) * scale, "s"
                    break
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError("%r is not a time (2ms, 150us, 0.003) or a percent of the total (1%%)"
                         % (text,))
    return kind, value


def make_noise(base_total: float, new_total: float, threshold: float = DEFAULT_THRESHOLD,
               min_time: str = DEFAULT_MIN_TIME) -> Noise:
    """The Noise for two profiles: ``threshold`` in percent (``parse_threshold``),
    ``min_time`` as ``parse_min_time`` reads it (a percent is of the larger total)."""
    threshold = parse_threshold(threshold)
    kind, value = parse_min_time(min_time)
    floor = value if kind == "s" else value / 100.0 * max(base_total, new_total)
    return Noise(threshold / 100.0, floor)


@dataclass
class Change:
    base_key: Optional[FuncKey]   # None: only in the new profile
    new_key: Optional[FuncKey]    # None: only in the base profile
    base: Tuple[int, int, float, float]   # (cc, nc, tt, ct), zeros when absent
    new: Tuple[int, int, float, float]
    path: str = ""   # the file relative to its sys.path entry (portable_parts)

    @property
    def key(self) -> FuncKey:
        return self.new_key if self.new_key is not None else self.base_key

    @property
    def moved(self) -> bool:
        """In both profiles, at another first line."""
        return self.base_key is not None and self.new_key is not None and self.base_key[1] != self.new_key[1]

    def value(self, metric: str, side: str) -> float:
        v = self.base if side == "base" else self.new
        return {"tottime": v[2], "cumtime": v[3], "calls": v[1]}[metric]

    def delta(self, metric: str) -> float:
        return self.value(metric, "new") - self.value(metric, "base")

    @property
    def changed(self) -> bool:
        return self.base != self.new or self.base_key is None or self.new_key is None


def diff_stats(base: Dict[FuncKey, tuple], new: Dict[FuncKey, tuple],
               base_qualnames: Optional[Dict[FuncKey, str]] = None,
               new_qualnames: Optional[Dict[FuncKey, str]] = None,
               base_paths: Optional[Dict[str, str]] = None,
               new_paths: Optional[Dict[str, str]] = None) -> List[Change]:
    """One Change per function of either profile (unchanged ones included),
    paired by relative path and qualified name (the module doc); the
    qualnames and paths are each profile's (``ProfileData``).  When one
    has no qualified names (a cProfile file), both pair by plain names."""
    if not (base_qualnames and new_qualnames):
        base_qualnames = new_qualnames = None
    base, new = by_match_key(base), by_match_key(new)  # keys without addresses
    bp = _profilers_alike(portable_parts(base, base_qualnames, base_paths))
    np_ = _profilers_alike(portable_parts(new, new_qualnames, new_paths))
    pairs = pair_functions(bp, np_)
    out = []
    new_of = {bk: nk for nk, bk in pairs.items()}
    for bk in base:
        nk = new_of.get(bk)
        n = tuple(new[nk][:4]) if nk is not None else _ZERO
        out.append(Change(bk, nk, tuple(base[bk][:4]), n, (np_[nk] if nk is not None else bp[bk])[0]))
    for nk in new:
        if nk not in pairs:
            out.append(Change(None, nk, _ZERO, tuple(new[nk][:4]), np_[nk][0]))
    return out


# -- a cProfile file against a fastprof file: one code object per key ----------

GC_KEY = ("~", 0, "<gc>")   # fastprof's row of the garbage collections


@dataclass
class KeptRow:
    """A key several code objects share in the fastprof file of a
    comparison with a cProfile file, which holds one of them."""
    key: FuncKey          # in the fastprof file
    code_objects: int     # how many share the key
    qualname: str         # the one compared ("" where none is known)
    exact: bool           # its calls and callers are the cProfile file's


@dataclass
class CprofileTerms:
    """What was done to a fastprof file compared with a cProfile file."""
    side: str             # the fastprof file's side: "base" or "new"
    kept: List[KeptRow]   # its rows of keys several code objects share
    collections: int = 0  # the calls of its <gc> row, folded into its callers


def as_cprofile_keeps(base: ProfileData, new: ProfileData
                      ) -> Tuple[ProfileData, ProfileData, Optional[CprofileTerms]]:
    """*base* and *new* compared on cProfile's terms when one is a cProfile
    file (``pstats_only``) and the other a fastprof file.  cProfile's
    ``snapshot_stats`` keeps one code object's row per key (its dict
    overwrites) and sums the edges from all of them, so the fastprof file's
    row of a key several code objects share (``shared_keys``) becomes the
    row of the one the cProfile file holds (``kept_row``); cProfile counts
    a garbage collection's time in the function it interrupted, so the
    fastprof file's ``<gc>`` row is folded into its callers' own time.
    Returns the two profiles (the fastprof one a changed copy) and what
    was done (None: nothing)."""
    if base.pstats_only and not new.pstats_only:
        new, terms = _as_cprofile(new, base, "new")
    elif new.pstats_only and not base.pstats_only:
        base, terms = _as_cprofile(base, new, "base")
    else:
        terms = None
    return base, new, terms


def _as_cprofile(summed: ProfileData, cprofile: ProfileData, side: str
                 ) -> Tuple[ProfileData, Optional[CprofileTerms]]:
    kept: List[KeptRow] = []
    if summed.shared_keys:
        summed, kept = _keeping_one(summed, cprofile)
    gc = summed.stats.get(GC_KEY)
    if gc is not None and GC_KEY not in cprofile.stats:
        stats = dict(summed.stats)
        del stats[GC_KEY]
        for caller, edge in gc[4].items():   # (the collector's own time under each)
            row = stats.get(caller)
            if row is not None:
                stats[caller] = (row[0], row[1], row[2] + edge[2]) + tuple(row[3:])
        summed = replace(summed, stats=stats)
    if not kept and gc is None:
        return summed, None
    return summed, CprofileTerms(side, kept, int(gc[1]) if gc is not None else 0)


Place = Tuple[str, int, str]   # (relative path, first line, plain name); C: ("~", 0, name)


def _places(data: ProfileData) -> Dict[FuncKey, Place]:
    """Each key of *data* (rows and callers) by where it is, whatever
    install its file came from."""
    keys = set(data.stats)
    for row in data.stats.values():
        keys.update(row[4])
    return {k: (part[0], k[1], str(k[2]) if part[0] != "~" else part[1])
            for k, part in portable_parts(keys, None, data.paths).items()}


def _keeping_one(summed: ProfileData, cprofile: ProfileData) -> Tuple[ProfileData, List[KeptRow]]:
    """*summed* (a fastprof file) with the rows of its shared keys those of
    the code objects *cprofile* holds; what was replaced."""
    here, there = _places(summed), _places(cprofile)
    by_place: Dict[Place, Optional[FuncKey]] = {}
    for key in cprofile.stats:
        by_place[there[key]] = key if there[key] not in by_place else None  # (ambiguous: none)
    stats, qualnames = dict(summed.stats), dict(summed.qualnames)
    out = []
    for key, parts in sorted(summed.shared_keys.items(), key=lambda kv: str(kv[0])):
        other = by_place.get(here.get(key)) if key in stats else None
        if other is None:
            continue  # in one file only: compared as it is
        choice, exact = kept_row(stats[key], parts, cprofile.stats[other], here, there)
        if choice is None:
            continue  # the file's own sum matched: another writer that sums
        qualname, row = choice
        stats[key] = row
        if qualname:
            qualnames[key] = qualname
        out.append(KeptRow(key, len(parts), qualname, exact))
    return replace(summed, stats=stats, qualnames=qualnames), out


def kept_row(whole: tuple, parts: List[Tuple[str, tuple]], other: tuple,
             here: Dict[FuncKey, Place], there: Dict[FuncKey, Place]):
    """(part, exact): the one of *parts* (each code object summed in row
    *whole*: its qualified name and row) that a cProfile file holds as row
    *other*.  Exact: its calls and callers are *other*'s; else the closest
    is taken: the fewest callers on one side only, then the fewest counts
    that differ, then the smallest differences.  The part is None when
    *whole* itself is as close (a pstats table of a writer that sums too).
    Callers are compared by place (*here*, *there*: each file's
    ``_places``), so two installs compare."""
    def callers(row, places):
        out: Dict[Place, int] = {}
        for caller, edge in row[4].items():
            p = places.get(caller, caller)
            out[p] = out.get(p, 0) + int(edge[0])
        return out

    theirs = callers(other, there)

    def distance(row):
        mine = callers(row, here)
        apart = len(set(mine) ^ set(theirs))
        differ = (int(row[1]) != int(other[1])) + (int(row[0]) != int(other[0])) + sum(
            mine[p] != theirs[p] for p in set(mine) & set(theirs))
        size = abs(int(row[1]) - int(other[1])) + sum(
            abs(mine.get(p, 0) - theirs.get(p, 0)) for p in set(mine) | set(theirs))
        return apart, differ, size

    # (the sum first: on a tie it wins)
    (apart, differ, _size), at = min([(distance(whole), -1)]
                                     + [(distance(row), i) for i, (_q, row) in enumerate(parts)])
    return (parts[at] if at >= 0 else None), apart == differ == 0


def kept_note(terms: Optional[CprofileTerms], base_name: str, new_name: str, limit: int = 4,
              collections: bool = True) -> List[str]:
    """What ``as_cprofile_keeps`` did, for people: a line for the shared
    keys, one per key none of whose code objects has the cProfile file's
    calls, and with *collections* one for the garbage collections."""
    if terms is None:
        return []
    summed, other = (new_name, base_name) if terms.side == "new" else (base_name, new_name)
    lines = []
    kept = terms.kept
    if kept:
        shown = ", ".join("%s of %d" % (stdname(k.key), k.code_objects) for k in kept[:limit])
        if len(kept) > limit:
            shown += ", and %d more" % (len(kept) - limit)
        lines.append("%s is a cProfile file: of several code objects sharing a (file, line, name) "
                     "key it holds one, where %s sums them; %d such key%s compared with the code "
                     "object %s holds: %s" % (other, summed, len(kept), "" if len(kept) == 1 else "s",
                                              other, shown))
    if terms.collections and collections:
        lines.append("%s is a cProfile file: the %d garbage collection%s of %s's <gc> row %s "
                     "compared as part of the functions %s interrupted" % (
                         other, terms.collections, "" if terms.collections == 1 else "s", summed,
                         "is" if terms.collections == 1 else "are",
                         "it" if terms.collections == 1 else "they"))
    for k in kept:
        if not k.exact:
            lines.append("%s: none of its %d code objects in %s has the calls and callers "
                         "%s holds; compared with the closest%s" % (
                             stdname(k.key), k.code_objects, summed, other,
                             " (%s)" % k.qualname if k.qualname else ""))
    return lines


def _profilers_alike(parts):
    """*parts* with the profilers' own methods named alike (cProfile's
    ``disable`` is fastprof's), so that they pair."""
    for key in parts:
        method = profiler_method(key)
        if method is not None:
            parts[key] = ("~", "<the profiler's %s>" % method)
    return parts


def other_files(changes: List[Change]) -> int:
    """How many paired Python functions were recorded from two different
    files (two installs, or a moved checkout)."""
    return sum(1 for c in changes if c.base_key is not None and c.new_key is not None
               and not is_builtin(c.new_key) and c.base_key[0] != c.new_key[0])


def function_label(c: Change, qualnames: Dict[FuncKey, str], full_paths: bool = False) -> str:
    """``name  path:line``: the path relative to its sys.path entry, or with
    *full_paths* the file as recorded (and the base's too when it differs)."""
    key = c.key
    if is_builtin(key):
        return readable_name(key)
    if not full_paths:
        return "%s  %s:%s" % (readable_name(key, qualnames), c.path or key[0], key[1])
    text = "%s  %s:%s" % (readable_name(key, qualnames), key[0], key[1])
    if c.base_key is not None and c.new_key is not None and c.base_key[0] != c.new_key[0]:
        text += "  (base: %s:%s)" % (c.base_key[0], c.base_key[1])
    return text


def calls_changed(c: Change) -> bool:
    """The exact signal: new, gone, or other call counts."""
    return c.base_key is None or c.new_key is None or c.base[:2] != c.new[:2]


def beyond_noise(c: Change, metric: str, noise: Noise) -> bool:
    """Whether the time *metric* (tottime for "calls") moved by more than
    the noise."""
    if metric == "calls":
        metric = "tottime"
    return noise.moved(c.value(metric, "base"), c.value(metric, "new"))


def significance(c: Change, metric: str, noise: Noise) -> int:
    """0: counts changed and *metric* moved (a time: beyond the floor);
    1: the time moved beyond noise with the same counts; 2: counts changed
    but the time barely moved; 3: noise (not a change).  A first line that
    moved is no change by itself (an upgrade moves most of a library's);
    a row shown says it moved."""
    counts = calls_changed(c)
    if counts and (metric == "calls" or abs(c.delta(metric)) > noise.floor):
        return 0
    if beyond_noise(c, metric, noise):
        return 1
    return 2 if counts else 3


def check_metric(metric: str) -> str:
    """*metric* if it is one of METRICS (what ``fastprof diff -s`` ranks by)."""
    if metric not in METRICS:
        raise ValueError("unknown metric %r; use one of: %s" % (metric, ", ".join(METRICS)))
    return metric


def ranked(changes: List[Change], metric: str = "tottime", noise: Optional[Noise] = None) -> List[Change]:
    """The changed functions, most significant first (``significance``),
    then by the absolute change of *metric*. Without *noise* any difference
    is a change."""
    check_metric(metric)
    noise = noise or Noise()
    tiers = {id(c): significance(c, metric, noise) for c in changes if c.changed}
    rows = [c for c in changes if tiers.get(id(c), 3) < 3]
    rows.sort(key=lambda c: (str(c.key[0]), c.key[1], str(c.key[2])))
    rows.sort(key=lambda c: (tiers[id(c)], -abs(c.delta(metric))))
    return rows


def relative(base: float, new: float) -> str:
    if base == 0:
        return "new" if new else "0%"
    if new == 0 and base:
        return "-100%"
    r = 100.0 * (new - base) / abs(base)
    if r == 0:
        return "0%"
    if abs(r) >= 9.95:
        return "%+.0f%%" % r
    return "%+.1f%%" % r


def _signed_time(x: float, micro: str) -> str:
    if x == 0:
        return "0"
    return ("+" if x > 0 else "") + format_time(x, micro)


def _signed_count(x: float) -> str:
    if x == 0:
        return "0"
    return ("+" if x > 0 else "-") + format_count(abs(x))


# -- line stats (``--lines``) of the functions in both profiles -----------------

LineTable = Dict[int, Tuple[int, float]]


@dataclass
class LineChange:
    lineno: int                 # in the new profile
    base: Tuple[int, float]     # (hits, seconds), zeros when the line did not run
    new: Tuple[int, float]

    @property
    def time_delta(self) -> float:
        return self.new[1] - self.base[1]


def changed_lines(base: LineTable, new: LineTable, noise: Noise, shift: int = 0) -> List[LineChange]:
    """The lines whose hits changed (exact) or whose time moved beyond
    *noise*, the biggest time change first.  *shift*: how far the function's
    first line moved (base line + shift = new line)."""
    out = []
    for lineno in set(n + shift for n in base) | set(new):
        b = base.get(lineno - shift, (0, 0.0))
        n = new.get(lineno, (0, 0.0))
        if b[0] != n[0] or noise.moved(b[1], n[1]):
            out.append(LineChange(lineno, b, n))
    out.sort(key=lambda lc: (-abs(lc.time_delta), lc.lineno))
    return out


def line_changes(changes: List[Change], base_lines: Dict[FuncKey, LineTable],
                 new_lines: Dict[FuncKey, LineTable], noise: Noise
                 ) -> Tuple[int, List[Tuple[Change, List[LineChange]]]]:
    """(how many functions have line stats in both profiles, [(function,
    its changed lines)] for those with a changed line, the one with the
    biggest line time change first).  Functions in one profile only are
    left out: their whole table already says new or gone."""
    both = 0
    out = []
    for c in changes:
        if c.base_key is None or c.new_key is None:
            continue
        b, n = base_lines.get(c.base_key), new_lines.get(c.new_key)
        if b is None or n is None:
            continue
        both += 1
        rows = changed_lines(b, n, noise, c.new_key[1] - c.base_key[1])
        if rows:
            out.append((c, rows))
    out.sort(key=lambda item: (str(item[0].key[0]), item[0].key[1], str(item[0].key[2])))
    out.sort(key=lambda item: -abs(item[1][0].time_delta))
    return both, out


def line_section(changes: List[Change], base: ProfileData, new: ProfileData, noise: Noise,
                 qualnames: Dict[FuncKey, str], limit: int, micro: str,
                 full_paths: bool = False) -> List[str]:
    """The text of the line changes: nothing when no function has line
    stats in both profiles; at most *limit* functions of at most *limit*
    lines each (0: all)."""
    both, found = line_changes(changes, base.lines, new.lines, noise)
    if not both:
        return []
    if not found:
        return ["", "Lines: no line changed (same hits, times %s) in the %d function%s with line "
                "stats in both profiles." % (noise.describe(micro), both, "s" if both > 1 else "")]
    out = ["", "Lines: changed hits, or time beyond noise, biggest time change first "
           "(%d of %d functions with line stats in both profiles)" % (len(found), both)]
    shown_funcs = found if limit <= 0 else found[:limit]
    for c, rows in shown_funcs:
        shown = rows if limit <= 0 else rows[:limit]
        out.append("")
        out.append(function_label(c, qualnames, full_paths))
        cells = []
        for lc in shown:
            text = linecache.getline(str(c.key[0]), lc.lineno).strip()
            cells.append([str(lc.lineno), format_count(lc.base[0]), format_count(lc.new[0]),
                          _signed_count(lc.new[0] - lc.base[0]),
                          format_time(lc.base[1], micro), format_time(lc.new[1], micro),
                          _signed_time(lc.time_delta, micro), relative(lc.base[1], lc.new[1]), text])
        out.extend(render_table(["line", "base hits", "new hits", "change", "base time", "new time",
                                 "change", "rel", "source"], cells, "rrrrrrrrl"))
        if len(shown) < len(rows):
            out.append("%d of %d changed lines shown (-n 0 shows all)" % (len(shown), len(rows)))
    if len(shown_funcs) < len(found):
        out.append("")
        out.append("%d of %d functions with changed lines shown (-n 0 shows all)"
                   % (len(shown_funcs), len(found)))
    return out


def diff_lines(base: ProfileData, new: ProfileData, base_name: str = "base", new_name: str = "new",
               metric: str = "tottime", limit: int = 20, micro: str = "\u00b5",
               threshold: float = DEFAULT_THRESHOLD, min_time: str = DEFAULT_MIN_TIME,
               full_paths: bool = False) -> List[str]:
    base, new, terms = as_cprofile_keeps(base, new)
    changes = diff_stats(base.stats, new.stats, base.qualnames, new.qualnames, base.paths, new.paths)
    qualnames = merge_qualnames([base.qualnames, new.qualnames])
    bt, bc, _ = totals(base.stats)
    nt, nc, _ = totals(new.stats)
    noise = make_noise(bt, nt, threshold, min_time)
    width = max(len(base_name), len(new_name))
    lines = [
        "base  %s  total %s, %s calls, %s functions" % (base_name.ljust(width), format_time(bt, micro),
                                                        format_count(bc), format_count(len(base.stats))),
        "new   %s  total %s, %s calls, %s functions" % (new_name.ljust(width), format_time(nt, micro),
                                                        format_count(nc), format_count(len(new.stats))),
    ]
    elsewhere = other_files(changes)
    installs = []
    if elsewhere:
        installs.append("      %d function%s paired across installs (same module path and "
                        "qualified name, other file%s)%s" % (
                            elsewhere, "s" if elsewhere > 1 else "", "s" if elsewhere > 1 else "",
                            "" if full_paths else "; --full-paths shows the files"))
    installs.extend("      " + line for line in kept_note(terms, base_name, new_name))
    rows = ranked(changes, metric, noise)
    if not rows:
        lines.extend(installs)
        lines.append("")
        if any(c.changed for c in changes):
            lines.append("No change beyond noise: the same %d functions with the same calls, "
                         "%s %s (--threshold, --min-time)." % (
                             len(changes), "tottime" if metric == "calls" else metric, noise.describe(micro)))
        else:
            lines.append("No change: both profiles have the same %d functions with the same calls and "
                         "times." % len(changes))
        return lines + line_section(changes, base, new, noise, qualnames, limit, micro, full_paths)
    lines.append("      change: total %s (%s), calls %s (%s)" % (
        _signed_time(nt - bt, micro), relative(bt, nt), _signed_count(nc - bc), relative(bc, nc)))
    lines.extend(installs)
    lines.append("")
    shown = rows if limit <= 0 else rows[:limit]
    cells = []
    for c in shown:
        b, n = c.value(metric, "base"), c.value(metric, "new")
        if metric == "calls":
            main = [format_count(b), format_count(n), _signed_count(n - b)]
        else:
            main = [format_time(b, micro), format_time(n, micro), _signed_time(n - b, micro)]
        status = ""
        if c.base_key is None:
            status = "  [new]"
        elif c.new_key is None:
            status = "  [gone]"
        elif c.moved:
            status = "  [moved from line %s]" % c.base_key[1]
        calls = "%s -> %s" % (format_count(c.base[1]), format_count(c.new[1]))
        cells.append(main + [relative(b, n), calls, function_label(c, qualnames, full_paths) + status])
    lines.extend(render_table(["base " + metric, "new " + metric, "change", "rel", "calls", "function"],
                              cells, "rrrrrl"))
    lines.append("")
    unchanged = len(changes) - len(rows)
    timed = "tottime" if metric == "calls" else metric
    lines.append("%d of %d changed functions shown, most significant first (changed calls, then %s "
                 "beyond noise)%s; %d unchanged (same calls, %s %s)" % (
                     len(shown), len(rows), timed, " (-n 0 shows all)" if len(shown) < len(rows) else "",
                     unchanged, timed, noise.describe(micro)))
    return lines + line_section(changes, base, new, noise, qualnames, limit, micro, full_paths)
