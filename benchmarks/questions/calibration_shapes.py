"""How far the compensated times are from the unprofiled run, per call shape
(docs/performance.md, "Calibration per kind of event").

    PYTHONPATH=build/py3.12/lib .venv/py3.12/bin/python benchmarks/questions/calibration_shapes.py [ROUNDS [JSON]]

Each round (default 15) calibrates afresh, then for each shape (a loop of
N calls of an empty function, of one with arguments, of len(), of
dict.get, of isinstance(), of a generator's resumes, of a one-line function, of fib(7); of a class with
no __init__, of one with an empty __init__, of a property, of __add__ by
``+``, of a method, of a recursion 200 deep) takes the fastest
of 3 unprofiled runs, one compensated profile and one raw one. Printed,
medians over the rounds, per loop round in ns: the unprofiled time, the
residual (compensated total less unprofiled, with its quartiles) and the
callee's own time (all but the loop's own), compensated and raw. JSON:
also write each round's numbers there (to pool runs of two builds made
in turn, on a machine whose speed drifts).
"""
import json
import statistics
import sys
import time

from fastprof import Profile
from fastprof.recording import calibration

N = 4000


def empty():
    pass


def args(a, b, c=3, *, d=4):
    pass


def gen(n):
    for i in range(n):
        yield i


def small(x):
    return x + 1


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Plain:  # no __init__: on 3.12+ a CALL and a C_RETURN, neither recorded
    pass


class Init:
    def __init__(self):
        pass


class Prop:
    @property
    def value(self):  # called from C: no CALL event before its start
        return 1


class Num:
    def __add__(self, other):  # called by BINARY_OP: no CALL event either
        return self

    def method(self):
        return self


def deep(n):
    return deep(n - 1) if n else 0


def loop_empty(n, f=empty):
    for _ in range(n):
        f()


def loop_args(n, f=args):
    for _ in range(n):
        f(1, 2, d=5)


def loop_c(n, f=len, a=()):
    for _ in range(n):
        f(a)


DICT = {1: 2}


def loop_cmethod(n, d=DICT):   # a C method with an argument: dict.get
    for _ in range(n):
        d.get(1)


def loop_isinstance(n, f=isinstance, a=1, t=int):   # a builtin with two arguments
    for _ in range(n):
        f(a, t)


def loop_gen(n):
    for _ in gen(n):
        pass


def loop_small(n, f=small):
    x = 0
    for _ in range(n):
        x = f(x)


def loop_fib(n):
    for _ in range(n // 100):
        fib(7)


def loop_type(n, cls=Plain):
    for _ in range(n):
        cls()


def loop_init(n, cls=Init):
    for _ in range(n):
        cls()


PROP, NUM = Prop(), Num()


def loop_property(n, obj=PROP):
    for _ in range(n):
        _value = obj.value


def loop_dunder(n, obj=NUM):
    for _ in range(n):
        obj + obj


def loop_method(n, obj=NUM):
    for _ in range(n):
        obj.method()


def loop_deep(n):
    for _ in range(n // 200):
        deep(199)


SHAPES = (loop_empty, loop_args, loop_c, loop_cmethod, loop_isinstance, loop_gen, loop_small, loop_fib,
          loop_type, loop_init, loop_property, loop_dunder, loop_method, loop_deep)


def unprofiled(fn):
    t0 = time.perf_counter_ns()
    fn(N)
    return (time.perf_counter_ns() - t0) / N


def profiled(fn, **options):
    """(cumtime, own time) of *fn*'s loop per round, ns."""
    prof = Profile(**options)
    prof.enable()
    fn(N)
    prof.disable()
    row = [e for e in prof.getstats() if e.code is fn.__code__][0]
    return row.totaltime * 1e9 / N, row.inlinetime * 1e9 / N


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    if rounds < 2:
        raise SystemExit("calibration_shapes.py: ROUNDS must be at least 2 (the quartiles need two)")
    res = {fn: {"u": [], "c": [], "r": [], "lo": [], "rlo": []} for fn in SHAPES}
    for _ in range(rounds):
        calibration._measured.clear()
        for fn in SHAPES:
            fn(N)
            d = res[fn]
            d["u"].append(min(unprofiled(fn) for _ in range(3)))
            c, lo = profiled(fn)
            r, rlo = profiled(fn, compensate=False)
            d["c"].append(c)
            d["lo"].append(lo)
            d["r"].append(r)
            d["rlo"].append(rlo)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump({fn.__name__: d for fn, d in res.items()}, f)
    med = statistics.median
    print(sys.version.split()[0], "per loop round, ns; residual = compensated total - unprofiled;"
          " callee = all but the loop's own")
    for fn, d in res.items():
        resid = [c - u for c, u in zip(d["c"], d["u"])]
        q = statistics.quantiles(resid, n=4)
        callee = med([c - lo for c, lo in zip(d["c"], d["lo"])])
        raw = med([r - lo for r, lo in zip(d["r"], d["rlo"])])
        print(f"  {fn.__name__:11s} unprof {med(d['u']):6.1f}  residual {med(resid):+6.1f} "
              f"[{q[0]:+.1f}, {q[2]:+.1f}]  callee comp {callee:5.1f}  raw {raw:5.1f}")


if __name__ == "__main__":
    main()
