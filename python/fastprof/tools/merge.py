"""``fastprof merge``: add profiles together.

- pstats table: per function, calls, primitive calls, tottime and cumtime
  are summed; so is each caller edge (as ``pstats.Stats.add`` does).
- call paths: kept only when *every* input has them; the trees are merged
  path by path (a node of one tree and a node of another with the same
  chain of functions from the root become one node, their calls and times
  summed).  If some input lacks call paths the result has none (a partial
  tree would contradict the table).
- per-thread stats: every input's threads are kept side by side (they are
  different threads of different runs), renumbered so ids stay unique;
  with several inputs each name gets `` [input N]``.  Past
  ``MAX_INPUTS_THREADS_APART`` inputs they are summed instead, one record
  per thread name pattern (numbers as ``N``, as the views group them):
  ``MainThread [1000 threads of 1000 inputs, summed]``, so a merge of
  1,000 files keeps a few records, not every thread of every file.
- clock: kept when all inputs agree, else dropped (with a warning from the
  command line: adding wall time to CPU time makes little sense).
- C functions whose name carries an address (``<built-in method __new__ of
  type object at 0x7f...>``: a new address every run) are one function:
  rows that differ only in the address are summed, under the key (address
  included) of the *first* input that has one, in table, callers and call
  paths alike.  Every other key is kept as is.
- the same function from two installs (two venvs, two ``--target``
  directories, a wheel and a checkout: other absolute paths) is one
  function: keys are paired as ``fastprof diff`` pairs them (file relative
  to its ``sys.path`` entry and qualified name, ``#N`` in order of first
  line among repeats: ``portable_names.FunctionIndex``) and summed under the
  key of the *first* input that has the function; the recorded relative
  paths (``paths``) are kept; its line stats pair by their offset from
  the function's first line.  Profiles of one run (a test session's
  per-test files, a program's subprocesses) are summed with
  ``pair_installs=False``: there two files at one relative path (two
  ``conftest.py``, two scripts named ``main.py``) are two different files.
- qualified names (``qualnames``): the union; differing names of one key are
  listed together.
- line-level stats (``lines``): hits and times summed per function and line;
  own times (``lines_own``) and bytes (``lines_memory``) too, for the
  functions every input with their lines has them for (own bytes: where
  every input's are exact).
- memory (``--memory``): kept only when every input has it, as call paths
  are; each row's and caller edge's counts summed, the peak of one call the
  largest; the processes' totals summed (their peaks too: the most they can
  have held at once); along call paths, each node's counts summed; each
  thread record's own memory with it (summed in a group of threads).
"""

from typing import Dict, Iterable, List, Optional, Set, Tuple

from ..data import cost_note, line_sources, memory
from ..data.model import FuncKey, KeyChooser, add_qualnames, add_stats, qualnames_result, stats_result
from ..data.portable_names import FunctionIndex
from ..data.profile_file import CallPaths, ProfileData
from ..data.thread_groups import thread_count, thread_group


class _TreeSum:
    """Call-path trees added one by one into one tree (as lists, summed in place)."""

    def __init__(self, keys: KeyChooser):
        self.keys = keys
        self.functions: List[FuncKey] = []
        self.func_index: Dict[FuncKey, int] = {}
        self.nodes: List[list] = []
        # (merged parent, merged function) -> merged node
        self.node_index: Dict[Tuple[int, int], int] = {}
        # each merged node's memory counts (memory.FIELDS), None once a tree has none
        self.memory: Optional[Dict[int, list]] = {}

    def add(self, cp: CallPaths) -> None:
        functions, func_index = self.functions, self.func_index
        nodes, node_index = self.nodes, self.node_index
        local = []  # this tree's node index -> merged node index
        if cp.memory is None:
            self.memory = None
        for i, (parent, func, calls, tottime, cumtime) in enumerate(cp.nodes):
            key = self.keys(cp.functions[func])
            f = func_index.get(key)
            if f is None:
                f = func_index[key] = len(functions)
                functions.append(key)
            mp = local[parent] if parent >= 0 else -1
            n = node_index.get((mp, f))
            if n is None:
                n = node_index[(mp, f)] = len(nodes)
                nodes.append([mp, f, 0, 0.0, 0.0])
            node = nodes[n]
            node[2] += calls
            node[3] += tottime
            node[4] += cumtime
            local.append(n)
            if self.memory is not None:
                memory.add_counts(self.memory.setdefault(n, [0] * len(memory.FIELDS)), cp.memory[i])

    def result(self) -> CallPaths:
        held = self.memory
        return CallPaths(self.functions, [tuple(n) for n in self.nodes],
                         None if held is None else [tuple(held.get(i, (0,) * len(memory.FIELDS)))
                                                    for i in range(len(self.nodes))])


def merge_callpaths(trees: Iterable[CallPaths], keys: Optional[KeyChooser] = None) -> CallPaths:
    acc = _TreeSum(keys if keys is not None else KeyChooser())
    for cp in trees:
        acc.add(cp)
    return acc.result()


# Inputs whose threads are kept side by side (see the module doc).
MAX_INPUTS_THREADS_APART = 32


class ProfileSum:
    """Profiles added one at a time, each folded into the running sum, so
    summing many files holds one input at a time (plus the sum), never all.

        total = ProfileSum()
        for path in paths:
            total.add(load_profile(path))
        merged = total.result()
    """

    def __init__(self, pair_installs: bool = True):
        self.keys = KeyChooser()
        # the same function from another install (None: exact keys only)
        self.functions: Optional[FunctionIndex] = FunctionIndex() if pair_installs else None
        self._paths: Dict[str, str] = {}
        self.count = 0
        self.clocks: Set[Optional[str]] = set()
        self.any_callpaths = False
        self._stats: Dict[FuncKey, list] = {}
        self._tree: Optional[_TreeSum] = _TreeSum(self.keys)  # None once an input has none
        self._qualnames: Dict[FuncKey, List[str]] = {}
        self._lines: Dict[FuncKey, Dict[int, Tuple[int, float]]] = {}
        self._lines_own: Dict[FuncKey, Dict[int, float]] = {}
        self._own_missing: Set[FuncKey] = set()  # an input had its lines without own times
        self._lines_memory: Dict[FuncKey, Dict[int, Tuple[int, int, Optional[int]]]] = {}
        self._bytes_missing: Set[FuncKey] = set()  # an input had its lines without bytes
        self._sources: Dict[str, Dict[int, str]] = {}  # the lines' text the inputs stored
        self._threads: List[Tuple[int, dict]] = []  # (input number, thread record)
        # the inputs' only= patterns (None: unscoped) and fast flags
        self._scopes: Set[Optional[Tuple[str, ...]]] = set()
        self._fast: Set[bool] = set()
        self._coroutines: Optional[str] = None  # "wall" if an input timed coroutines so
        self._compensation = None  # cost_note.combine of the inputs so far
        # memory.add_table / add_totals of the inputs so far; None once an input has none
        self._memory: Optional[Dict[FuncKey, memory.MemoryRow]] = {}
        self._memory_totals: Dict[str, int] = {}
        # past MAX_INPUTS_THREADS_APART inputs: name pattern -> [stats, threads, inputs]
        self._thread_groups: Optional[Dict[str, list]] = None

    def add(self, p: ProfileData) -> None:
        if self.functions is not None:
            aliases = self.functions.add(list(p.stats) + list(p.lines), p.qualnames, p.paths)
            if aliases:
                p = rekeyed(p, aliases)
        for filename, rel in p.paths.items():
            self._paths.setdefault(filename, rel)
        self.count += 1
        add_stats(self._stats, p.stats, self.keys)
        if p.callpaths is not None:
            self.any_callpaths = True
        if p.callpaths is None:
            self._tree = None
        elif self._tree is not None:
            self._tree.add(p.callpaths)
        add_qualnames(self._qualnames, p.qualnames)
        if p.memory is None:
            self._memory = None
        elif self._memory is not None:
            memory.add_table(self._memory, p.memory, self.keys)
            memory.add_totals(self._memory_totals, p.memory_totals)
        for key, table in p.lines.items():
            out = self._lines.setdefault(self.keys(key), {})
            if key[0] in p.sources:  # under the file name of the key kept
                line_sources.add(self._sources, {self.keys(key)[0]: p.sources[key[0]]})
            for lineno, (hits, seconds) in table.items():
                h, t = out.get(lineno, (0, 0.0))
                out[lineno] = (h + hits, t + seconds)
            self._add_line_bytes(key, p.lines_memory.get(key))
            if key not in p.lines_own:
                self._own_missing.add(self.keys(key))
                continue
            own = self._lines_own.setdefault(self.keys(key), {})
            for lineno, seconds in p.lines_own[key].items():
                own[lineno] = own.get(lineno, 0.0) + seconds
        self.clocks.add(p.clock)
        self._scopes.add(tuple(p.only) if p.only is not None else None)
        self._fast.add(p.fast)
        self._coroutines = self._coroutines or p.coroutines
        self._compensation = (p.compensation if self.count == 1 else
                              cost_note.combine([self._compensation, p.compensation]))
        if self._thread_groups is None and self.count > MAX_INPUTS_THREADS_APART:
            self._thread_groups = {}
            for i, t in self._threads:
                self._add_to_group(i, t)
            self._threads = []
        if self._thread_groups is None:
            self._threads.extend((self.count, t) for t in p.threads)
        else:
            for t in p.threads:
                self._add_to_group(self.count, t)

    def _add_line_bytes(self, key: FuncKey, table) -> None:
        if table is None:
            self._bytes_missing.add(self.keys(key))
            return
        memory.add_line_bytes(self._lines_memory.setdefault(self.keys(key), {}), table)

    def _add_to_group(self, input_number: int, thread: dict) -> None:
        # [stats, threads, inputs, memory (None once a member has none)]
        group = self._thread_groups.setdefault(
            thread_group(dict(thread, name=thread.get("name", "thread"))), [{}, 0, set(), {}])
        add_stats(group[0], thread.get("stats") or {}, self.keys)
        group[1] += thread_count(thread)
        group[2].add(input_number)
        if "memory" not in thread:
            group[3] = None
        elif group[3] is not None:
            memory.add_table(group[3], thread["memory"], self.keys)

    def result(self) -> ProfileData:
        if not self.count:
            raise ValueError("nothing to merge")
        data = ProfileData(stats_result(self._stats))
        if self._tree is not None:
            data.callpaths = self._tree.result()
        data.qualnames = qualnames_result(self._qualnames)
        files = {k[0] for k in data.stats}
        data.paths = {f: rel for f, rel in self._paths.items() if f in files}
        data.lines = self._lines
        data.sources = self._sources
        data.lines_own = {k: v for k, v in self._lines_own.items() if k not in self._own_missing}
        data.lines_memory = {k: v for k, v in self._lines_memory.items() if k not in self._bytes_missing}
        if len(self.clocks) == 1:
            data.clock = next(iter(self.clocks))
        # what the sum leaves out is said only if every input left it out
        if len(self._scopes) == 1 and None not in self._scopes:
            data.only = list(next(iter(self._scopes)))
        elif None not in self._scopes:
            data.only = sorted({p for scope in self._scopes for p in scope})
        data.fast = self._fast == {True}
        data.coroutines = self._coroutines
        data.compensation = self._compensation
        if self._memory is not None:
            data.memory, data.memory_totals = self._memory, self._memory_totals
        for next_id, (i, t) in enumerate(self._threads):
            t = dict(t)
            t["id"] = next_id
            if self.count > 1:
                t["name"] = "%s [input %d]" % (t.get("name", "thread"), i)
            data.threads.append(t)
        for pattern, (stats, nthreads, inputs, held) in sorted((self._thread_groups or {}).items()):
            data.threads.append({
                "id": len(data.threads), "ident": 0, "stats": stats_result(stats),
                "name": "%s [%d thread%s of %d inputs, summed]" % (
                    pattern, nthreads, "" if nthreads == 1 else "s", len(inputs))})
            if held is not None:
                data.threads[-1]["memory"] = held
        return data

    def clocks_differ(self) -> bool:
        """True if the inputs named two different clocks (cProfile files name none)."""
        return len({c for c in self.clocks if c is not None}) > 1


def rekeyed(p: ProfileData, aliases: Dict[FuncKey, FuncKey]) -> ProfileData:
    """A copy of *p* with keys renamed by *aliases* (stats, callers, call
    paths, threads, line stats, qualified names); a renamed function's line
    stats move with its first line."""
    def key(k):
        return aliases.get(tuple(k), k)

    def table(stats):
        return {key(k): (cc, nc, tt, ct, {key(c): e for c, e in callers.items()})
                for k, (cc, nc, tt, ct, callers) in stats.items()}

    out = ProfileData(table(p.stats), clock=p.clock,
                      qualnames={key(k): q for k, q in p.qualnames.items()})
    for name, value in vars(p).items():
        if name not in ("stats", "clock", "qualnames"):
            setattr(out, name, value)
    if p.callpaths is not None:
        out.callpaths = CallPaths([key(f) for f in p.callpaths.functions], p.callpaths.nodes,
                                  p.callpaths.memory)
    if p.memory is not None:
        out.memory = {}
        memory.add_table(out.memory, p.memory, key)
    out.threads = [dict(t, stats=table(t.get("stats") or {})) for t in p.threads]
    for t in out.threads:
        if "memory" in t:
            t["memory"], held = {}, t["memory"]
            memory.add_table(t["memory"], held, key)
    def shifted(k, lines):
        # the function moved down or up in the other install: its lines
        # pair by their offset from its first line (as diff pairs them)
        by = key(k)[1] - k[1]
        return {ln + by: v for ln, v in lines.items()} if by else lines

    out.lines = {key(k): shifted(k, v) for k, v in p.lines.items()}
    out.lines_own = {key(k): shifted(k, v) for k, v in p.lines_own.items()}
    out.lines_memory = {key(k): shifted(k, v) for k, v in p.lines_memory.items()}
    return out


def merge_profiles(profiles: Iterable[ProfileData], pair_installs: bool = True) -> ProfileData:
    """The sum of *profiles* (at least one; any iterable, read once);
    *pair_installs*: see ``ProfileSum``."""
    total = ProfileSum(pair_installs)
    for p in profiles:
        total.add(p)
    return total.result()
