#!/usr/bin/env python3
"""The house rules of python/fastprof that import-linter cannot state
(`make lint` runs this after lint-imports; tests/test_house_rules.py
shows each rule failing on a tree that breaks it).

1. Every module is on a floor: each module of the package is named in the
   `layers` of the contract of its wing (pyproject.toml
   [tool.importlinter], the contract whose container is the module's
   package); each top-level module and wing in the "wings" contract.
2. Profile's private names stay in recording/profiler.py: no other module
   reads or writes an underscore attribute that Profile (or its C base,
   typed in _fastprof.pyi) defines; they use its named methods.
3. A run mode keeps out of its siblings' private names: a module of modes/
   reaches no underscore name another module of modes/ defines (through
   the module, ``from .x import _y``, or an object of its classes).

Usage: check_house.py [PACKAGE_DIR [PYPROJECT]] (defaults: this checkout's
python/fastprof and pyproject.toml). Prints one line per breach; exit 1 if
any.
"""

import ast
import os
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILER = os.path.join("recording", "profiler.py")
STUB = "_fastprof.pyi"
# C-base private names whose job is another module's, each with the reason
OWNERS = {
    # the delivery costs are measured and set by the calibration, on C
    # profilers of its own (the C base's one setter of them)
    "_set_compensation": os.path.join("recording", "calibration.py"),
}


def _read_toml(path):
    with open(path, "rb") as f:
        if tomllib is not None:
            return tomllib.load(f)
    raise SystemExit("check_house.py: needs Python 3.11+ (tomllib) to read %s" % path)


def modules_of(package_dir):
    """{dotted name relative to the package: path} of every .py module,
    packages as their dotted name (their __init__)."""
    found = {}
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(root, f), package_dir)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            found[".".join(rel)] = os.path.join(root, f)
    return found


def floors_check(package_dir, config):
    """Rule 1: the modules on no floor of their wing's contract."""
    root = config["tool"]["importlinter"]["root_package"]
    named = {}  # container -> set of names on its floors
    for contract in config["tool"]["importlinter"].get("contracts", []):
        if contract.get("type") != "layers":
            continue
        for container in contract.get("containers", []):
            names = named.setdefault(container, set())
            for layer in contract["layers"]:
                names.update(n.strip() for n in layer.split("|") if n.strip())
    problems = []
    for dotted in modules_of(package_dir):
        if not dotted:
            continue  # the package face itself
        parts = dotted.split(".")
        container = ".".join([root] + parts[:-1])
        if parts[-1] in named.get(container, ()):
            continue
        problems.append("%s.%s is on no floor: add it to the layers of the contract of %s "
                        "(pyproject.toml [tool.importlinter])" % (root, dotted, container))
    return problems


def _underscore(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_names(tree, class_name=None):
    """Underscore names a module defines: module-level functions, classes,
    assignments; and in its classes (only *class_name* if given) methods,
    class attributes and ``self._x = ...``."""
    names = set()

    def add_targets(targets):
        for t in targets:
            for node in ast.walk(t):
                if isinstance(node, ast.Name) and _underscore(node.id):
                    names.add(node.id)
                elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                        and node.value.id in ("self", "cls") and _underscore(node.attr):
                    names.add(node.attr)

    for node in tree.body:
        if class_name is None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and _underscore(node.name):
            names.add(node.name)
        if class_name is None and isinstance(node, (ast.Assign, ast.AnnAssign)):
            add_targets(node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(node, ast.ClassDef) and (class_name is None or node.name == class_name):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and _underscore(sub.name):
                    names.add(sub.name)
                elif isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    add_targets(sub.targets if isinstance(sub, ast.Assign) else [sub.target])
    return names


def _attribute_reads(tree):
    """(line, object text, attribute) of each ``obj._x`` whose object is not
    self/cls."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _underscore(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            out.append((node.lineno, ast.unparse(node.value) if hasattr(ast, "unparse") else "?", node.attr))
    return out


def profile_private_names(package_dir):
    """Underscore names of Profile (recording/profiler.py) and of its C base
    (the stub's Profiler class)."""
    with open(os.path.join(package_dir, PROFILER)) as f:
        names = _defined_names(ast.parse(f.read()), "Profile")
    stub = os.path.join(package_dir, STUB)
    if os.path.exists(stub):
        with open(stub) as f:
            names |= _defined_names(ast.parse(f.read()), "Profiler")
    return names


def reach_in_check(package_dir):
    """Rules 2 and 3."""
    problems = []
    private = profile_private_names(package_dir)
    modules = modules_of(package_dir)
    trees = {}
    for dotted, path in modules.items():
        with open(path) as f:
            trees[dotted] = ast.parse(f.read(), path)
    own = {dotted: _defined_names(tree) for dotted, tree in trees.items()}
    modes = {d for d in modules if d.startswith("modes.")}
    for dotted, tree in sorted(trees.items()):
        rel = os.path.relpath(modules[dotted], package_dir)
        if rel != PROFILER:
            for line, obj, attr in _attribute_reads(tree):
                if attr in private and attr not in own[dotted] and OWNERS.get(attr) != rel:
                    problems.append("%s:%d: %s.%s is Profile's private name: use a named method of "
                                    "Profile (recording/profiler.py)" % (rel, line, obj, attr))
        if dotted not in modes:
            continue
        siblings = {}  # underscore name -> the sibling mode that defines it
        for other in sorted(modes - {dotted}):
            for name in own[other]:
                siblings.setdefault(name, other)
        for line, obj, attr in _attribute_reads(tree):
            if attr in siblings and attr not in own[dotted] and attr not in private:
                problems.append("%s:%d: %s.%s is a private name of fastprof.%s: give that mode a "
                                "named function or method" % (rel, line, obj, attr, siblings[attr]))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if _underscore(a.name) and node.module and node.module.split(".")[-1] in \
                            {m.split(".")[-1] for m in modes}:
                        problems.append("%s:%d: imports %s from %s, a sibling mode's private name"
                                        % (rel, node.lineno, a.name, node.module))
    return problems


def main(argv):
    package_dir = argv[1] if len(argv) > 1 else os.path.join(HERE, "python", "fastprof")
    pyproject = argv[2] if len(argv) > 2 else os.path.join(HERE, "pyproject.toml")
    problems = floors_check(package_dir, _read_toml(pyproject)) + reach_in_check(package_dir)
    for p in problems:
        print(p)
    if problems:
        print("check_house: %d breach(es) of the house rules (scripts/check_house.py)" % len(problems))
        return 1
    print("check_house: every module on a floor, no private reach-in")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
