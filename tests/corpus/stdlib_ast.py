"""ast: parse, visit, transform, unparse and compile (never executed)."""
import ast

SOURCE = '''
import os

def add(a, b=2, *args, **kw):
    """Add things."""
    total = a + b
    for x in args:
        total += x
    return total

class Shape:
    sides = 0

    def area(self):
        raise NotImplementedError

class Square(Shape):
    sides = 4

    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side ** 2

result = [add(i, i * 2) for i in range(10) if i % 2]
squares = {n: Square(n).area() for n in range(5)}
'''


class Counter(ast.NodeVisitor):
    def __init__(self):
        self.functions = []
        self.names = 0

    def visit_FunctionDef(self, node):
        self.functions.append(node.name)
        self.generic_visit(node)

    def visit_Name(self, node):
        self.names += 1


class Renamer(ast.NodeTransformer):
    def visit_Name(self, node):
        if node.id == "total":
            return ast.copy_location(ast.Name(id="acc", ctx=node.ctx), node)
        return node

    def visit_Constant(self, node):
        if isinstance(node.value, int):
            return ast.copy_location(ast.Constant(value=node.value + 1), node)
        return node


def main():
    tree = ast.parse(SOURCE)
    counter = Counter()
    counter.visit(tree)
    kinds = {}
    for node in ast.walk(tree):
        name = type(node).__name__
        kinds[name] = kinds.get(name, 0) + 1
    new = ast.fix_missing_locations(Renamer().visit(tree))
    text = ast.unparse(new)
    code = compile(new, "<corpus>", "exec")
    dumped = ast.dump(ast.parse("x = [1, 2]"))
    lit = ast.literal_eval("{'a': (1, 2.5, None), 'b': [True, -3]}")
    return counter.functions, counter.names, sorted(kinds.items()), len(text), code.co_name, dumped, lit


if __name__ == "__main__":
    print(main())
