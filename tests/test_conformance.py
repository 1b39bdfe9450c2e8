"""cProfile is the oracle: every corpus program, profiled once with cProfile
and once with fastprof in the same interpreter, must give the same call
counts for every function and every caller->callee edge.

Two levels are compared, each with only the profiler-internal rows left out
(helpers.internal_keys; docs/conformance.md lists them):

- getstats(): one entry per code object (or C function) with its callees --
  exact, keyed by the code object itself;
- the pstats dict (create_stats() / .stats), keyed by (file, line, name),
  against cProfile's getstats() summed by label: where several code objects
  share one label (dataclass-generated methods all live at <string>:2 ...),
  cProfile's create_stats keeps an arbitrary one of them, fastprof sums them
  (docs/conformance.md). Between the two cProfile runs (the determinism
  check) and under FASTPROF_TEST_IMPL=cprofile those rows are left out.

cProfile's flags are passed to its enable() too (corpus/_runner.py): since
3.14 a bare enable() resets subcalls and builtins to True, so
Profile(builtins=False) records builtins anyway; fastprof keeps the
documented meaning, and so does the oracle.

Times are not compared here (test_timing.py does); counts must be identical.
"""
import collections
import marshal
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

PROGRAMS = helpers.corpus_programs()
MODES = ["default", "nobuiltins", "nosubcalls", "callpaths", "threads"]
_results = {}


def run_corpus(program, tmp_path_factory):
    if program not in _results:
        out = str(tmp_path_factory.mktemp("conf") / (program + ".marshal"))
        proc = helpers.run_python([os.path.join(helpers.CORPUS_DIR, "_runner.py"), program, out],
                                  timeout=600)
        if proc.returncode != 0:
            _results[program] = proc
        else:
            with open(out, "rb") as f:
                _results[program] = marshal.load(f)
    result = _results[program]
    if not isinstance(result, dict):
        pytest.fail("runner failed for %s (exit %d):\n%s\n%s"
                    % (program, result.returncode, result.stdout[-3000:], result.stderr[-6000:]))
    return result


# -- pstats level -------------------------------------------------------------

def pstats_counts(stats, skip=()):
    """{key: (cc, nc)} and {(caller, callee): (nc, cc)}, rows in `skip` left out."""
    funcs, edges = {}, {}
    for callee, v in stats.items():
        if callee in skip:
            continue
        funcs[callee] = (v[0], v[1])
        for caller, sub in v[4].items():
            edges[(caller, callee)] = (sub[0], sub[1])
    return funcs, edges


# -- getstats level -------------------------------------------------------------

def label(code_key):
    return tuple(code_key[:3])


def entry_counts(entries, internal):
    """{code: (nc, reccallcount)} and {(caller code, callee code): (nc, reccallcount)}.
    Codes are (file, line, name, id); C functions sharing a name are summed."""
    funcs = collections.Counter()
    funcs_rec = collections.Counter()
    edges = collections.Counter()
    edges_rec = collections.Counter()
    for key, nc, rec, calls in entries:
        key = tuple(key)
        if label(key) in internal:
            continue
        funcs[key] += nc
        funcs_rec[key] += rec
        for sub, snc, srec in calls:
            sub = tuple(sub)
            if label(sub) in internal:
                continue
            edges[(key, sub)] += snc
            edges_rec[(key, sub)] += srec
    return ({k: (funcs[k], funcs_rec[k]) for k in funcs},
            {k: (edges[k], edges_rec[k]) for k in edges})


def summed_pstats_counts(entries, internal):
    """What pstats_counts gives for the getstats() entries summed by label
    (fastprof's create_stats): rows and edges with a label in `internal`
    left out."""
    funcs = collections.defaultdict(lambda: [0, 0])
    edges = collections.defaultdict(lambda: [0, 0])
    for key, nc, rec, calls in entries:
        lab = label(key)
        if lab in internal:
            continue
        funcs[lab][0] += nc - rec
        funcs[lab][1] += nc
        for sub, snc, srec in calls:
            if label(sub) in internal:
                continue
            edge = edges[(lab, label(sub))]
            edge[0] += snc
            edge[1] += snc - srec
    return ({k: tuple(v) for k, v in funcs.items()},
            {k: tuple(v) for k, v in edges.items()})


def duplicate_labels(entries):
    seen = collections.defaultdict(set)
    for key, _nc, _rec, _calls in entries:
        seen[label(key)].add(tuple(key))
    return {lab for lab, keys in seen.items() if len(keys) > 1}


def fmt_code(key):
    text = helpers.fmt_key(label(key))
    return text if key[3] == 0 else "%s@%x" % (text, key[3])


def diff(expected, actual, what, fmt):
    lines = []
    for key in sorted(set(expected) | set(actual), key=repr):
        e, a = expected.get(key), actual.get(key)
        if e != a:
            lines.append("  %s %s: cProfile %s, fastprof %s" % (what, fmt(key), e, a))
    return lines


def fmt_edge(fmt):
    return lambda edge: "%s -> %s" % (fmt(edge[0]), fmt(edge[1]))


def compare_pstats(ref, test, skip):
    ref_f, ref_e = pstats_counts(ref, skip)
    test_f, test_e = pstats_counts(test, skip)
    return (diff(ref_f, test_f, "function", helpers.fmt_key)
            + diff(ref_e, test_e, "edge", fmt_edge(helpers.fmt_key)))


def compare_summed_pstats(ref_entries, ref_internal, test):
    ref_f, ref_e = summed_pstats_counts(ref_entries, ref_internal)
    test_f, test_e = pstats_counts(test)
    return (diff(ref_f, test_f, "function", helpers.fmt_key)
            + diff(ref_e, test_e, "edge", fmt_edge(helpers.fmt_key)))


def compare_entries(ref, test, ref_internal, test_internal):
    ref_f, ref_e = entry_counts(ref, ref_internal)
    test_f, test_e = entry_counts(test, test_internal)
    return (diff(ref_f, test_f, "getstats entry (nc, rec)", fmt_code)
            + diff(ref_e, test_e, "getstats subentry (nc, rec)", fmt_edge(fmt_code)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("program", PROGRAMS)
def test_same_counts_as_cprofile(program, mode, tmp_path_factory):
    result = run_corpus(program, tmp_path_factory)
    fastprof_dir = result["fastprof_dir"] or None
    run = result[mode]
    ref_a, ref_a_internal = helpers.strip_internal(run["ref_a"]["stats"])
    ref_b, ref_b_internal = helpers.strip_internal(run["ref_b"]["stats"])
    test, test_internal = helpers.strip_internal(run["test"]["stats"], fastprof_dir)
    dups = duplicate_labels(run["ref_a"]["entries"]) | duplicate_labels(run["test"]["entries"])

    nondeterministic = (
        compare_pstats(ref_a, ref_b, dups)
        + compare_entries(run["ref_a"]["entries"], run["ref_b"]["entries"],
                          set(ref_a_internal), set(ref_b_internal)))
    assert not nondeterministic, (
        "corpus program %s is not deterministic: two cProfile runs differ\n%s"
        % (program, "\n".join(nondeterministic[:40])))
    assert ref_a, "cProfile saw nothing"

    problems = compare_entries(run["ref_a"]["entries"], run["test"]["entries"],
                               set(ref_a_internal), set(test_internal))
    if helpers.USING_CPROFILE:  # cProfile drops all but one of each shared label
        problems += compare_pstats(ref_a, test, dups)
    else:
        problems += compare_summed_pstats(run["ref_a"]["entries"], set(ref_a_internal), test)
    assert not problems, (
        "%s [%s, Python %s]: fastprof differs from cProfile in %d place(s)\n%s"
        "\n(internal rows dropped: cProfile %s; fastprof %s)"
        % (program, mode, sys.version.split()[0], len(problems), "\n".join(problems[:60]),
           [helpers.fmt_key(k) for k in ref_a_internal],
           [helpers.fmt_key(k) for k in test_internal]))

    for key, (cc, nc, tt, ct, callers) in test.items():
        assert 0 <= cc <= nc, (key, cc, nc)
        assert tt >= 0 and ct >= 0, (key, tt, ct)
        assert ct >= tt - 1e-6, (helpers.fmt_key(key), tt, ct)
        for caller, sub in callers.items():
            assert 0 <= sub[1] <= sub[0] and sub[2] >= 0 and sub[3] >= 0, (key, caller, sub)
    if mode == "nobuiltins":
        c_rows = [helpers.fmt_key(k) for k in run["test"]["stats"] if k[0] == "~"]
        assert not c_rows, "builtins=False but C functions profiled: %s" % c_rows
    if mode == "nosubcalls":
        with_callers = [helpers.fmt_key(k) for k, v in run["test"]["stats"].items() if v[4]]
        assert not with_callers, "subcalls=False but callers recorded: %s" % with_callers[:10]


# The only rows ever dropped as profiler-internal (docs/conformance.md).
DOCUMENTED_INTERNAL = {
    "cProfile": {"<method 'disable' of '_lsprof.Profiler' objects>"},
    "fastprof": {"<method 'disable' of 'fastprof.Profile' objects>"},
}


@pytest.mark.parametrize("program", PROGRAMS[:3])
def test_internal_rows_are_documented(program, tmp_path_factory):
    result = run_corpus(program, tmp_path_factory)
    fastprof_dir = result["fastprof_dir"] or None
    impl = "cProfile" if helpers.USING_CPROFILE else "fastprof"
    for mode in MODES:
        for which, allowed in (("ref_a", DOCUMENTED_INTERNAL["cProfile"]),
                               ("test", DOCUMENTED_INTERNAL[impl])):
            stats = result[mode][which]["stats"]
            dropped = helpers.internal_keys(stats, fastprof_dir if which == "test" else None)
            names = {helpers.fmt_key(k) for k in dropped}
            assert names <= allowed, (mode, which, names)
            if mode == "nobuiltins":
                assert not names, (mode, which, names)


# -- call paths agree with the flat stats ---------------------------------------

MAX_DEPTH = 128  # Profile's default max_depth: deeper paths are cut there


def path_totals(paths):
    """{code key: [calls, inlinetime, cumtime, cut]} summed over the call-path
    nodes of each function.  Cumtime counts only the nodes with no ancestor
    of the same function (its outermost activations, as the flat cumtime);
    `cut` tells that some node of it sits at the depth bound, where ancestry
    is no longer exact."""
    ancestry, depth = [], []
    out = {}
    for parent, key, calls, inline, total in paths:
        key = tuple(key)
        above = ancestry[parent] if parent >= 0 else frozenset()
        ancestry.append(above | {key})
        depth.append(depth[parent] + 1 if parent >= 0 else 1)
        row = out.setdefault(key, [0, 0.0, 0.0, False])
        row[0] += calls
        row[1] += inline
        if key not in above:
            row[2] += total
        row[3] = row[3] or depth[-1] >= MAX_DEPTH
    return out


@pytest.mark.skipif(helpers.USING_CPROFILE, reason="call paths are fastprof-only")
@pytest.mark.parametrize("program", PROGRAMS)
def test_callpath_totals_agree_with_flat_stats(program, tmp_path_factory):
    """Summed over its call paths, every function has its flat calls and
    tottime, and its outermost paths add up to its cumtime."""
    run = run_corpus(program, tmp_path_factory)["callpaths"]["test"]
    flat = {tuple(k): v for k, v in run["flat_times"].items()}
    paths = path_totals(run["paths"])
    assert paths, "no call paths recorded"
    problems = []
    for key in sorted(set(flat) | set(paths), key=repr):
        f = flat.get(key, [0, 0.0, 0.0])
        p = paths.get(key, [0, 0.0, 0.0, False])
        if f[0] != p[0]:
            problems.append("%s: %d calls flat, %d over its paths" % (fmt_code(key), f[0], p[0]))
        if abs(f[1] - p[1]) > 1e-9 + 1e-9 * abs(f[1]):
            problems.append("%s: tottime %r flat, %r over its paths" % (fmt_code(key), f[1], p[1]))
        if not p[3] and abs(f[2] - p[2]) > 1e-9 + 1e-9 * abs(f[2]):
            problems.append("%s: cumtime %r flat, %r over its paths" % (fmt_code(key), f[2], p[2]))
    assert not problems, "%s: call paths disagree with the flat stats\n%s" % (
        program, "\n".join(problems[:40]))
