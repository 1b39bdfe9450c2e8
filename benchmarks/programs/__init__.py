"""Real programs from PyPI for the accuracy benchmark (``run.py accuracy``).

Same interface as ``workloads/`` (``DESCRIPTION``, ``SIZES``, ``run(n)``
returning a deterministic checksum), plus ``REQUIRES``: the distribution it
imports, installed in the benchmark venvs from ``requirements-programs.txt``
(``make_venvs.sh``).  The accuracy mode skips a program whose package is missing.
Each ``run(n)`` keeps no state between calls (caches are cleared first), so
a warm-up call does not change what the measured calls do.
"""

import importlib

#: Order used in tables.
NAMES = ["black_format", "jinja2_render", "sympy_simplify"]


def load(name):
    """Return the program module called ``name`` (ImportError if its package is missing)."""
    if name not in NAMES:
        raise KeyError("unknown program %r (known: %s)" % (name, ", ".join(NAMES)))
    return importlib.import_module("%s.%s" % (__name__, name))


def requirement(name):
    """The distribution program ``name`` needs, without importing it."""
    return {"black_format": "black", "jinja2_render": "jinja2", "sympy_simplify": "sympy"}[name]
