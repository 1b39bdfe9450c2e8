"""Nothing is lost when names collide.

Two code objects with one ``(file, line, name)`` -- two lambdas on one
line, a function compiled again in a loop, functions a factory builds with
``exec`` (as namedtuple and dataclasses do) -- are two entries in
``getstats()``. cProfile's ``create_stats`` keeps one of them and drops the
other's calls; fastprof sums them, as ``pstats.Stats.add`` would: counts,
times and callers, on both sides of an edge, in ``.stats``, the ``.prof``
file, the printed tables, the call paths and the exports.

Oracle: cProfile's ``getstats()`` summed by label (``summed_by_label``) for
the counts; fastprof's own ``getstats()`` summed the same way for the times
(an integer fake timer makes every sum exact).
"""
import collections
import io
import pstats

import pytest

from helpers import USING_CPROFILE, profiler_class

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="cProfile drops colliding rows")

HERE = __file__


# -- the colliding functions ---------------------------------------------------

inc, dbl = (lambda x: x + 1), (lambda x: x * 2)  # two <lambda> at one line

STEP_SOURCE = "def step(x):\n    return x + 1\n"


def compiled_in_a_loop(n):
    """One `step` per pass: each compile makes a new code object, all
    labelled ('generated_step.py', 1, 'step')."""
    steps = []
    for _ in range(n):
        ns = {}
        exec(compile(STEP_SOURCE, "generated_step.py", "exec"), ns)
        steps.append(ns["step"])
    return steps


def make_adder(n):
    """A factory that builds its function with exec, as namedtuple does:
    every adder is ('<adder>', 1, 'add') with its own code object."""
    ns = {"n": n}
    exec(compile("def add(x): return x + n\n", "<adder>", "exec"), ns)
    return ns["add"]


def make_closure(n):
    def closure(x):  # closures of one factory share one code object
        return x + n
    return closure


STEPS = compiled_in_a_loop(3)
ADDERS = [make_adder(i) for i in range(2)]
CLOSURES = [make_closure(i) for i in range(2)]

# Mutual recursion through two colliding functions: ping and pong are both
# ('<pingpong>', 1, 'f'); each calls the other until n runs out.
_pp = {}
exec(compile("def f(n):\n    return _pp['pong'](n - 1) if n > 0 else 0\n", "<pingpong>", "exec"), _pp)
_pp["ping"] = _pp.pop("f")
exec(compile("def f(n):\n    return _pp['ping'](n - 1) if n > 0 else 0\n", "<pingpong>", "exec"), _pp)
_pp["pong"] = _pp.pop("f")
_pp["ping"].__globals__["_pp"] = _pp


def use_lambdas():
    for i in range(3):
        inc(i)
    for i in range(5):
        dbl(i)
    return list(map(inc, range(2)))  # called from a C function too


def use_steps():
    for s in STEPS:
        s(1)
    STEPS[0](2)


def use_adders():
    sum(a(1) for a in ADDERS)


def use_closures():
    for c in CLOSURES:
        c(1)


def use_pingpong():
    _pp["ping"](5)
    _pp["pong"](2)


def caller_one():
    return use_steps()


def workload():
    use_lambdas()
    use_steps()
    caller_one()
    use_adders()
    use_closures()
    use_pingpong()


# -- oracle ---------------------------------------------------------------------

def label(code):
    if isinstance(code, str):
        return ("~", 0, code)
    return (code.co_filename, code.co_firstlineno, code.co_name)


def summed_by_label(entries):
    """A pstats dict from getstats() entries, colliding entries summed."""
    rows = {}
    for e in entries:
        r = rows.setdefault(label(e.code), [0, 0, 0.0, 0.0, {}])
        r[0] += e.callcount - e.reccallcount
        r[1] += e.callcount
        r[2] += e.inlinetime
        r[3] += e.totaltime
    for e in entries:
        for s in e.calls or ():
            c = rows[label(s.code)][4].setdefault(label(e.code), [0, 0, 0.0, 0.0])
            c[0] += s.callcount
            c[1] += s.callcount - s.reccallcount
            c[2] += s.inlinetime
            c[3] += s.totaltime
    return {k: (r[0], r[1], r[2], r[3], {c: tuple(v) for c, v in r[4].items()})
            for k, r in rows.items()}


def counts(stats):
    """{row: (cc, nc)} and {(caller, row): (nc, cc)} without the disable row."""
    funcs = {k: v[:2] for k, v in stats.items() if "disable" not in k[2]}
    edges = {(c, k): cv[:2] for k, v in stats.items() for c, cv in v[4].items()}
    return funcs, edges


class Ticks:
    """Integer fake timer: one tick per read, so every time is a whole
    number and every sum exact."""

    def __init__(self):
        self.t = 0

    def __call__(self):
        self.t += 1
        return self.t


def profiled(func=workload, **kw):
    prof = profiler_class()(Ticks(), 1.0, **kw)
    prof.runcall(func)
    return prof


def cprofile_getstats(func=workload):
    import cProfile
    cp = cProfile.Profile()
    cp.runcall(func)
    return cp.getstats()


LAMBDA = (HERE, inc.__code__.co_firstlineno, "<lambda>")
STEP = ("generated_step.py", 1, "step")
ADD = ("<adder>", 1, "add")
PINGPONG = ("<pingpong>", 1, "f")


def key_of(func):
    c = func.__code__
    return (c.co_filename, c.co_firstlineno, c.co_name)


# -- tests ----------------------------------------------------------------------

def test_the_workload_has_colliding_entries():
    """The premise: getstats() has several entries per colliding label."""
    n = collections.Counter(label(e.code) for e in cprofile_getstats())
    assert n[LAMBDA] == 2 and n[STEP] == 3 and n[ADD] == 2 and n[PINGPONG] == 2
    assert n[key_of(make_closure(0))] == 1  # one code object: one entry


def test_stats_sum_colliding_entries():
    prof = profiled()
    prof.create_stats()
    # times and everything: fastprof's own entries summed by label
    assert prof.stats == summed_by_label(prof.getstats())
    # counts: cProfile's entries summed by label
    assert counts(prof.stats) == counts(summed_by_label(cprofile_getstats()))

    st = prof.stats
    assert st[LAMBDA][:2] == (10, 10)                 # 3 + 5 + 2 (from map)
    assert sum(v[0] for v in st[LAMBDA][4].values()) == 10
    assert st[STEP][:2] == (8, 8)                     # (3 + 1) per use_steps, twice
    assert st[STEP][4][key_of(use_steps)][:2] == (8, 8)
    assert st[ADD][:2] == (2, 2)
    assert st[key_of(make_closure(0))][:2] == (2, 2)


def test_recursion_through_colliding_functions():
    """ping(5) and pong(2): 6 + 3 calls of ('<pingpong>', 1, 'f'); each code
    object recurses only through the other, so per entry the recursive
    calls are those below its own first activation."""
    prof = profiled(use_pingpong)
    prof.create_stats()
    assert prof.stats == summed_by_label(prof.getstats())
    assert counts(prof.stats) == counts(summed_by_label(cprofile_getstats(use_pingpong)))
    cc, nc, _tt, _ct, callers = prof.stats[PINGPONG]
    assert nc == 9
    # the collided function is its own caller: ping -> pong -> ping ...
    assert callers[PINGPONG][0] == 7
    assert callers[key_of(use_pingpong)][0] == 2


def test_caller_side_collision():
    """An edge whose caller side collides: three generated `gen` (one
    label) each call one helper twice: one caller row with 6 calls."""
    ns = {"helper": lambda: None}
    callers = []
    for _ in range(3):
        exec(compile("def gen():\n    helper()\n    helper()\n", "<gen>", "exec"), ns)
        callers.append(ns["gen"])

    def run():
        for g in callers:
            g()

    prof = profiled(run)
    prof.create_stats()
    helper = key_of(ns["helper"])
    assert prof.stats[helper][4][("<gen>", 1, "gen")][:2] == (6, 6)
    assert prof.stats[("<gen>", 1, "gen")][:2] == (3, 3)
    assert counts(prof.stats) == counts(summed_by_label(cprofile_getstats(run)))
    assert prof.stats == summed_by_label(prof.getstats())


def test_file_and_printed_tables(tmp_path):
    prof = profiled()
    path = str(tmp_path / "out.prof")
    prof.dump_stats(path)
    loaded = pstats.Stats(path).stats
    assert counts(loaded) == counts(summed_by_label(prof.getstats()))

    out = io.StringIO()
    stats = pstats.Stats(path, stream=out)
    stats.print_stats("generated_step")
    rows = [ln.split() for ln in out.getvalue().splitlines() if "generated_step.py" in ln]
    assert [r[0] for r in rows] == ["8"]


def test_print_stats_shows_the_sum(capsys):
    prof = profiled()
    prof.print_stats()
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines()
            if "generated_step.py:1(step)" in ln]
    assert [r[0] for r in rows] == ["8"]


def tree(paths):
    """{(function, ...path): (calls, tottime, cumtime)} of a CallPaths."""
    out, where = {}, []
    for parent, func, calls, tt, ct in paths.nodes:
        path = (where[parent] if parent >= 0 else ()) + (paths.functions[func],)
        assert path not in out, "two nodes for %r" % (path,)
        where.append(path)
        out[path] = (calls, tt, ct)
    return out


def flat_calls_from(prof, key, caller):
    prof.create_stats()
    return prof.stats[key][4][key_of(caller)][0]


def test_call_paths_merge_colliding_siblings():
    prof = profiled(callpaths=True)
    data = prof.profile_data()
    t = tree(data.callpaths)  # no two nodes with the same path
    top = key_of(workload)
    steps = t[(top, key_of(use_steps), STEP)]
    assert steps[0] == 4
    assert t[(top, key_of(caller_one), key_of(use_steps), STEP)][0] == 4
    assert t[(top, key_of(use_lambdas), LAMBDA)][0] == flat_calls_from(prof, LAMBDA, use_lambdas)
    # recursion through the collision: the path keeps alternating levels
    pp = (top, key_of(use_pingpong), PINGPONG)
    assert t[pp][0] == 2 and t[pp + (PINGPONG,)][0] == 2
    # summed over its paths, each function has its flat calls and tottime
    flat = prof.stats
    assert flat is not None
    per_func = collections.defaultdict(lambda: [0, 0.0])
    for path, (calls, tt, _ct) in t.items():
        per_func[path[-1]][0] += calls
        per_func[path[-1]][1] += tt
    for key in (LAMBDA, STEP, ADD, PINGPONG):
        assert per_func[key] == [flat[key][1], flat[key][2]], key


def test_merged_children_of_merged_nodes():
    """Two colliding callers at one path, each with its own callee: the
    callers merge into one node and their children under it, also when the
    children collide too."""
    ns = {}
    gens = []
    for _ in range(2):
        exec(compile("def outer():\n    inner()\n\ndef inner():\n    pass\n", "<pair>", "exec"), ns)
        gens.append(ns["outer"])

    def run():
        for g in gens:
            g()

    prof = profiled(run, callpaths=True)
    t = tree(prof.profile_data().callpaths)
    base = (key_of(run), ("<pair>", 1, "outer"))
    assert t[base][0] == 2
    assert t[base + (("<pair>", 4, "inner"),)][0] == 2
    assert len([p for p in t if p[:2] == base]) == 2


def test_exports_draw_the_sum():
    from fastprof.exports import render
    prof = profiled(callpaths=True)
    data = prof.profile_data()
    folded = render(data, "collapsed")
    stacks = [ln.rsplit(" ", 1) for ln in folded.splitlines()
              if ln.rsplit(";", 1)[-1].startswith("step (generated_step.py:1)")]
    # one stack under use_steps, one under caller_one;use_steps, 4 calls each
    assert len(stacks) == len({s for s, _v in stacks}) == 2, stacks
    assert sum(int(v) for _s, v in stacks) == int(round(prof.stats[STEP][2] * 1e6))
