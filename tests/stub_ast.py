"""Reading python/fastprof/_fastprof.pyi with `ast` (no type checker needed,
so it runs on every supported Python): its module-level names and each
class's members as they are on one Python version (the stub's
`if sys.version_info ...` blocks resolved) or on any version.

Used by test_stub.py (stub against the built module) and
test_binding_doc.py (stub against docs/binding-api.md).
"""
import ast
import inspect
import operator
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_STUB = os.path.join(ROOT, "python", "fastprof", "_fastprof.pyi")
TYPE_ONLY_BASES = {"TypedDict", "Protocol"}     # stub-only helper classes (e.g. _ClockInfo)
# typeshed's structseq declares these; the C struct sequences inherit them
STRUCTSEQ_MEMBERS = {"n_fields", "n_sequence_fields", "n_unnamed_fields"}

_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}


def parse(path=SOURCE_STUB):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def _holds(test, version):
    """`sys.version_info OP (X, Y)` on `version`; any other condition is an error."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _COMPARE
            and ast.unparse(test.left) == "sys.version_info"):
        raise ValueError(f"stub condition not understood: {ast.unparse(test)}")
    return _COMPARE[type(test.ops[0])](tuple(version), ast.literal_eval(test.comparators[0]))


def _statements(body, version):
    """The statements of `body` that hold on `version` ((3, 12)); all of them when version is None."""
    out = []
    for node in body:
        if isinstance(node, ast.If):
            if version is None:
                out += _statements(node.body, None) + _statements(node.orelse, None)
            else:
                out += _statements(node.body if _holds(node.test, version) else node.orelse, version)
        else:
            out.append(node)
    return out


def _definitions(body, version):
    names = {}
    for node in _statements(body, version):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign):
            names[node.target.id] = node
    return names


def is_type_only(node):
    return isinstance(node, ast.ClassDef) and any(
        isinstance(b, ast.Name) and b.id in TYPE_ONLY_BASES for b in node.bases)


def is_structseq(node):
    return any(isinstance(b, ast.Subscript) and ast.unparse(b.value) == "structseq" for b in node.bases)


def module_names(tree, version):
    """{name: node} of what the C module defines (imports and stub-only helpers left out)."""
    return {n: node for n, node in _definitions(tree.body, version).items() if not is_type_only(node)}


def class_members(node, version):
    """{name: node} of a stub class's methods, properties and attributes."""
    return _definitions(node.body, version)


def is_property(fn):
    return isinstance(fn, ast.FunctionDef) and any(
        isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def params(args, drop_self):
    """[(name, kind, default)] of an ast.arguments, kinds as inspect names them."""
    positional = [(p, inspect.Parameter.POSITIONAL_ONLY) for p in args.posonlyargs] + \
                 [(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = [(p.arg, kind, d) for (p, kind), d in zip(positional, defaults)]
    if args.vararg:
        out.append((args.vararg.arg, inspect.Parameter.VAR_POSITIONAL, None))
    out += [(p.arg, inspect.Parameter.KEYWORD_ONLY, d) for p, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        out.append((args.kwarg.arg, inspect.Parameter.VAR_KEYWORD, None))
    if drop_self:
        assert out and out[0][0] in ("self", "cls"), ast.unparse(args)
        out = out[1:]
    return [(name, kind, inspect.Parameter.empty if d is None else ast.literal_eval(d))
            for name, kind, d in out]
