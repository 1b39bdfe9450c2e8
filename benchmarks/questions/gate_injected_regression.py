"""Does the count gate catch a real regression in exactly the tests it reaches?

    python benchmarks/questions/gate_injected_regression.py PROJECT
           --function FILE:QUALNAME --helper NAME [--tests tests] [--xdist]
           [--deselect NODEID ...]

The second half of issue 32's protocol. In a copy of PROJECT (an unpacked
sdist, or NAME==VERSION, fetched as gate_cost.py fetches it) a baseline is
recorded with the gate's defaults (the copy's package first on
PYTHONPATH, ahead of any installed one); then the function QUALNAME of FILE (a
path inside the project) is made to call its helper NAME twice where it
called it once (its first call ``NAME(args)`` becomes
``(NAME(args), NAME(args))[1]``: same result, the helper's work done
twice), and the suite is run again under the gate.

The tests the gate must flag are those that made the second call: the
injected code appends the running test's node id to a log between the two
calls, which says so independently of the gate. They are the tests whose
baseline holds the edge QUALNAME -> NAME, but those whose first call
raises (listed); each must name that edge among its changes. Prints the
expected and flagged tests, those missed and those flagged beyond them, and
exits 1 unless the two sets are equal and every flagged test names the edge.
The interpreter running this script runs the suite (pytest, the project's
test dependencies installed in it, fastprof importable).
"""

import argparse
import ast
import glob
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gate_cost import fetch, plugin_args  # noqa: E402  (a sibling script)
from gate_false_alarms import run  # noqa: E402

from fastprof.tools.counts import EDGE, parse_tables  # noqa: E402

LOG_ENV = "GATE_REGRESSION_LOG"
# between the two calls: the running test's node id appended to the log, so
# the tests that reached the second call are known independently of the gate
MARK = ('__import__("builtins").open(__import__("os").environ["%s"], "a").write('
        '__import__("os").environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0] + "\\n")' % LOG_ENV)


def find_function(tree, qualname):
    """The def of *qualname* (``Class.method`` or ``function``) in *tree*."""
    scope = tree
    for part in qualname.split("."):
        for node in ast.iter_child_nodes(scope):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == part:
                scope = node
                break
        else:
            raise SystemExit("gate_injected_regression: no %s in the file" % qualname)
    return scope


def call_twice(source, qualname, helper):
    """*source* with the first call of *helper* inside *qualname* made twice."""
    func = find_function(ast.parse(source), qualname)
    calls = [n for n in ast.walk(func) if isinstance(n, ast.Call)
             and getattr(n.func, "id", getattr(n.func, "attr", None)) == helper]
    if not calls:
        raise SystemExit("gate_injected_regression: %s calls no %s" % (qualname, helper))
    call = min(calls, key=lambda n: (n.lineno, n.col_offset))
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode("utf-8")))
    data = source.encode("utf-8")
    begin = starts[call.lineno - 1] + call.col_offset
    end = starts[call.end_lineno - 1] + call.end_col_offset
    text = data[begin:end].decode("utf-8")
    return (data[:begin].decode("utf-8") + "(%s, %s, %s)[2]" % (text, MARK, text)
            + data[end:].decode("utf-8"))


def callee_name(entry):
    """The plain name of an edge's callee: ``pkg/mod.py:Class.helper`` and
    ``~:<built-in method module.helper>`` are both ``helper``."""
    callee = entry.partition(EDGE)[2].rsplit(":", 1)[-1]
    if callee.startswith("<") and callee.endswith(">"):
        callee = callee[1:-1].split()[-1]
    return callee.rsplit(".", 1)[-1]


def tests_with_edge(counts_dir, caller, helper):
    """{test node id: count} of the tests whose baseline holds the edge
    *caller* -> (a function named) *helper*."""
    found = {}
    for path in glob.glob(os.path.join(counts_dir, "py*", "**", "*.counts"), recursive=True):
        module = os.path.relpath(path, glob.glob(os.path.join(counts_dir, "py*"))[0])[:-len(".counts")]
        with open(path, encoding="utf-8") as f:
            tables = parse_tables(f.read(), path)
        for test, table in tables.items():
            for entry, count in table.items():
                if entry.partition(EDGE)[0] == caller and callee_name(entry) == helper:
                    found["%s::%s" % (module.replace(os.sep, "/"), test)] = count
    return found


def names_edge(changes, caller, helper):
    return any(c["entry"].partition(EDGE)[0] == caller and callee_name(c["entry"]) == helper
               for c in changes)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("project", metavar="PROJECT")
    ap.add_argument("--function", required=True, metavar="FILE:QUALNAME",
                    help="the function made to call its helper twice (FILE: a path in the project)")
    ap.add_argument("--helper", required=True, metavar="NAME", help="the helper it calls")
    ap.add_argument("--tests", default="tests", help="the test path inside the project (default: tests)")
    ap.add_argument("--xdist", action="store_true", help="run the suite under pytest -n 2")
    ap.add_argument("--deselect", action="append", default=[], metavar="NODEID",
                    help="a test to leave out (one that fails unchanged here)")
    args = ap.parse_args(argv)
    path, _, qualname = args.function.rpartition(":")
    work = tempfile.mkdtemp(prefix="gate-regression-")
    env = dict(os.environ, PYTEST_ADDOPTS="")
    try:
        root = os.path.join(work, "project")   # a copy: the change is made to it
        shutil.copytree(fetch(args.project, work), root)
        # the copy's package first on the path (not an installed one)
        src = os.path.join(root, "src")
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (src if os.path.isdir(src) else root, os.environ.get("PYTHONPATH")) if p)
        counts_dir = os.path.join(work, "counts")
        report = os.path.join(work, "report.json")
        pytest = ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"] + plugin_args()
                  + (["-n", "2"] if args.xdist else [])
                  + ["--deselect=%s" % d for d in args.deselect]
                  + ["--fastprof-counts=%s" % counts_dir, "--fastprof-counts-report=%s" % report, args.tests])
        status, out = run(pytest, root, env)
        if status != 0:
            raise SystemExit("gate_injected_regression: recording failed:\n%s" % out[-3000:])
        # the caller's name as the tables write it: the file relative to its sys.path entry
        module_path = path
        for prefix in ("src/", "lib/"):
            if module_path.startswith(prefix):
                module_path = module_path[len(prefix):]
        caller = "%s:%s" % (module_path, qualname)
        edge_tests = tests_with_edge(counts_dir, caller, args.helper)
        if not edge_tests:
            raise SystemExit("gate_injected_regression: no baseline holds %s -> %s" % (caller, args.helper))
        target = os.path.join(root, path)
        with open(target, encoding="utf-8") as f:
            source = f.read()
        with open(target, "w", encoding="utf-8") as f:
            f.write(call_twice(source, qualname, args.helper))
        for pyc in glob.glob(os.path.join(root, "**", "__pycache__"), recursive=True):
            shutil.rmtree(pyc, ignore_errors=True)
        log = os.path.join(work, "second-calls")
        open(log, "w").close()
        status, out = run(pytest, root, dict(env, **{LOG_ENV: log}))
        with open(report, encoding="utf-8") as f:
            changed = json.load(f)["changed"]
        with open(log, encoding="utf-8") as f:
            reached = set(f.read().split())
        outside = "?" in reached   # at collection (a module's top level): in no test
        reached.discard("?")
        flagged = set(changed)
        missed = sorted(reached - flagged)
        extra = sorted(flagged - reached)
        unnamed = sorted(t for t in flagged & reached if not names_edge(changed[t], caller, args.helper))
        print("%s: %s made to call %s twice" % (args.project, caller, args.helper))
        print("  tests whose baseline holds the edge: %d" % len(edge_tests))
        print("  of them, tests that made the second call: %d (the others: their first call raised)"
              % len(reached & set(edge_tests)))
        for t in sorted(set(edge_tests) - reached):
            print("    no second call: %s" % t)
        if outside:
            print("  (the second call was also made outside any test: at collection)")
        print("  tests that made the second call: %d; flagged: %d (exit status %d)"
              % (len(reached), len(flagged), status))
        for t in missed:
            print("  missed: %s" % t)
        for t in extra:
            print("  flagged beyond them: %s: %s" % (t, ", ".join(c["entry"] for c in changed[t][:3])))
        for t in unnamed:
            print("  flagged without naming the edge: %s" % t)
        exact = not (missed or extra or unnamed) and status != 0
        print("  %s" % ("exact: every test that reaches the edge, and no other, naming it"
                        if exact else "NOT exact"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
