"""A program with 200,000 distinct functions profiles without trouble, and
the tables stay within 256 bytes per function plus 128 per caller->callee
edge (plus 128 per call-path node when call paths are recorded), as
Profile.memory() reports them (the C-heap side of the same budget is checked
by tests/c/test_memory.c)."""
import pytest

import fastprof

N_FUNCTIONS = 200_000
BYTES_PER_FUNCTION = 256
BYTES_PER_EDGE = 128
BYTES_PER_NODE = 128


def _template():
    return None


def _distinct_functions(n):
    """n functions with n distinct code objects (same body, distinct first lines)."""
    code = _template.__code__
    glb = _template.__globals__
    return [type(_template)(code.replace(co_firstlineno=i + 1, co_name="f%d" % i), glb)
            for i in range(n)]


def _call_all(functions):
    for f in functions:
        f()


@pytest.mark.parametrize("callpaths", [False, True])
def test_200k_distinct_functions(callpaths):
    functions = _distinct_functions(N_FUNCTIONS)
    pr = fastprof.Profile(builtins=False, callpaths=callpaths)
    pr.enable()
    _call_all(functions)
    pr.disable()

    pr.create_stats()
    by_name = {key[2]: value for key, value in pr.stats.items()}
    made = [name for name in by_name if name.startswith("f") and name[1:].isdigit()]
    assert len(made) == N_FUNCTIONS
    assert all(by_name["f%d" % i][:2] == (1, 1) for i in range(0, N_FUNCTIONS, 997))
    caller = by_name["_call_all"]
    assert caller[:2] == (1, 1)

    n_functions = len(pr.stats)
    n_edges = sum(len(value[4]) for value in pr.stats.values())
    assert n_edges >= N_FUNCTIONS  # every f is called from _call_all
    n_nodes = len(pr.profile_data().callpaths.nodes) if callpaths else 0
    assert n_nodes >= (N_FUNCTIONS if callpaths else 0)
    used = pr.memory()
    budget = (BYTES_PER_FUNCTION * n_functions + BYTES_PER_EDGE * n_edges
              + BYTES_PER_NODE * n_nodes)
    assert 0 < used <= budget, (used, budget, n_functions, n_edges, n_nodes)

    pr.clear()
    assert pr.memory() < used // 100
