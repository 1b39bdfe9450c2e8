"""docs/binding-api.md describes exactly what the type stub declares: each
`## ...` section names the module or one or more of its classes in
backquotes, and its table lists, one row each, every name the stub gives
them on any Python version (a class's constructor under the class's name),
and nothing else; a row for a function writes its parameters as the stub
does (names and defaults). test_stub.py checks the stub against the module.
"""
import ast
import os
import re

import stub_ast

DOC = os.path.join(stub_ast.ROOT, "docs", "binding-api.md")
MODULE = "fastprof._fastprof"
ROW = re.compile(r"^\| `([^`]+)`")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def doc_sections():
    """{tuple of the names a section's heading quotes: [row tokens]}."""
    sections, rows = {}, None
    with open(DOC, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                rows = sections.setdefault(tuple(re.findall(r"`([^`]+)`", line)), [])
            elif rows is not None and ROW.match(line):
                token = ROW.match(line).group(1)
                if token != "name":
                    rows.append(token)
    return sections


def stub_entries(tree, owner):
    """{documented name: stub node} of the module or of one class, all versions."""
    module = stub_ast.module_names(tree, None)
    if owner == MODULE:
        return {n: node for n, node in module.items() if not isinstance(node, ast.ClassDef)}
    members = stub_ast.class_members(module[owner], None)
    return {owner if n in ("__init__", "__new__") else n: node for n, node in members.items()}


def documented(token):
    """(name, [(param, default)] or None) of a row's first quoted token."""
    name = IDENT.match(token).group(0)
    if "(" not in token:
        return name, None
    fn = ast.parse(f"def {name}{token[len(name):]}: pass").body[0]
    return name, [(p, d) for p, _, d in stub_ast.params(fn.args, drop_self=False)]


def test_every_stub_class_and_the_module_have_a_section():
    tree = stub_ast.parse()
    classes = {n for n, node in stub_ast.module_names(tree, None).items() if isinstance(node, ast.ClassDef)}
    headed = {name for heading in doc_sections() for name in heading}
    assert classes | {MODULE} <= headed


def test_each_section_lists_exactly_the_stub_names_with_their_parameters():
    tree = stub_ast.parse()
    sections = doc_sections()
    checked = 0
    for heading, rows in sections.items():
        owners = [n for n in heading if n == MODULE or n in stub_ast.module_names(tree, None)]
        if not owners:
            continue
        stub = {}
        for owner in owners:
            stub.update(stub_entries(tree, owner))
        docs = dict(documented(token) for token in rows)
        assert len(docs) == len(rows), f"a name listed twice under {heading}"
        assert set(docs) == set(stub), heading
        for name, params in docs.items():
            node = stub[name]
            if isinstance(node, ast.FunctionDef) and not stub_ast.is_property(node):
                drop_self = owners != [MODULE]
                want = [(p, d) for p, _, d in stub_ast.params(node.args, drop_self)]
                assert params == want, f"{heading}: {name}"
            else:
                assert params is None, f"{heading}: {name} is not a function"
            checked += 1
    assert checked > 30
