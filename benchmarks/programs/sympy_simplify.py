"""sympy simplifying, factoring and expanding expressions (its cache cleared on every call)."""

import random

import sympy
import sympy.core.random
from sympy.core.cache import clear_cache

DESCRIPTION = "sympy: simplify, factor, expand, trigsimp, integrate on a dozen expressions"
SIZES = {"full": 2, "smoke": 1}
REQUIRES = "sympy"

x, y, z = sympy.symbols("x y z")


def _exprs(i):
    return [
        (sympy.simplify, sympy.sin(x) ** 2 + sympy.cos(x) ** 2 + i),
        (sympy.simplify, (x ** 2 - 1) / (x - 1) + (y ** 3 - 8) / (y - 2)),
        (sympy.factor, x ** 6 - 1 + i * 0),
        (sympy.factor, x ** 4 - 2 * x ** 2 * y ** 2 + y ** 4),
        (sympy.expand, (x + y + z + i) ** 6),
        (sympy.trigsimp, sympy.sin(x) * sympy.cos(y) + sympy.cos(x) * sympy.sin(y)),
        (sympy.simplify, sympy.exp(x) * sympy.exp(y) / sympy.exp(x + y)),
        (sympy.integrate, x ** 2 * sympy.exp(x)),
        (sympy.apart, 1 / ((x + 1) * (x + 2) * (x + i + 3))),
        (sympy.simplify, sympy.gamma(x + 1) / sympy.gamma(x)),
    ]


def run(n):
    """Clear sympy's cache and seed its random numbers (its factoring shuffles),
    then transform every expression ``n`` times (a slightly different one each
    pass); return the results' total length."""
    clear_cache()
    random.seed(0)
    sympy.core.random.seed(0)
    total = 0
    for i in range(n):
        for fn, expr in _exprs(i):
            total += len(str(fn(expr)))
    return total
