"""The "app" of the --only benchmark: its hot loop is in a library out of scope.

Profiled with ``--only workloads.scoped`` (``Profile(only=[...])``), only the
functions of this module are recorded; the five thousand calls per iteration
into ``scoped_lib`` (pure Python, call-dense) run unmonitored on 3.12+.
Not one of the eight overhead workloads (``NAMES``): ``run.py timing`` reports it
apart, as unprofiled / cProfile / fastprof / fastprof --only.
"""

from . import scoped_lib

DESCRIPTION = "app module whose hot loop is a call-dense pure-Python library (--only benchmark)"
SIZES = {"full": 1000, "smoke": 3}
#: the --only pattern: this module, the user's code
ONLY = __name__


def summarize(values):
    return sum(values) % 1000003


def batch(k):
    return [scoped_lib.crunch(1000 + k % 7) for _ in range(5)]


def run(n):
    total = 0
    for k in range(n):
        total += summarize(batch(k))
    return total
