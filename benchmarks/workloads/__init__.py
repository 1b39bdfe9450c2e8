"""Benchmark workloads for fastprof.

Each workload is a module in this package with:

- ``DESCRIPTION``: one line saying what shape of code it exercises;
- ``SIZES``: ``{"full": n, "smoke": n}``; ``full`` takes roughly 0.3-1 s
  unprofiled on CPython 3.11 on the reference machine, ``smoke`` a few ms;
- ``HOT``: the qualified name of its hot function (the most own time under
  cProfile at half size), the one function ``--lines`` and line_profiler
  look at in the line-level comparison;
- ``run(n)``: does the work and returns a small deterministic checksum
  (an int or a str).  The harness checks that every profiler gives the same
  checksum, so a profiler that changes behaviour is caught;
- optionally ``timed_run(n)``: ``run(n)`` timing its own phases, returning
  ``(checksum, {function: own seconds})``, where phases and functions line up
  exactly (fib): the accuracy mode's exact reference.

Workloads are deterministic (no clock, no randomness without a fixed seed, no
I/O, no threads) and keep no state between calls, so a warm-up call does not
change what the timed call does.  They must run unchanged on CPython 3.9+.
"""

import importlib

#: Order used in tables and plots.
NAMES = [
    "fib",
    "builtins",
    "oop",
    "generators",
    "regex",
    "asyncio_tasks",
    "json_report",
    "template",
]


#: Workloads reported apart from the eight above (not in their medians): the
#: --only benchmark, whose module gives ``ONLY``, the pattern of its scope.
SCOPE_NAMES = ["scoped"]

#: The allocation-heavy workload of the memory benchmark
#: (questions/memory_cost.py), not a ``run.py timing`` one.
MEMORY_NAMES = ["allocations"]

#: Everything ``run.py timing`` runs by default.
ALL_NAMES = NAMES + SCOPE_NAMES


def load(name):
    """Return the workload module called ``name``."""
    if name not in ALL_NAMES:
        raise KeyError("unknown workload %r (known: %s)" % (name, ", ".join(ALL_NAMES)))
    return importlib.import_module("%s.%s" % (__name__, name))


def scaled_size(mod, scale):
    """The size whose ``run()`` takes about ``scale`` times the full size's
    (at least the smoke size); ``size_for(scale)`` where the workload is not
    linear in its size (fib)."""
    if hasattr(mod, "size_for"):
        return mod.size_for(scale)
    return max(mod.SIZES["smoke"], int(round(mod.SIZES["full"] * scale)))
