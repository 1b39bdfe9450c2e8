"""Direct recursion: linear, tree-shaped, and recursion through a C call."""


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def factorial(n):
    return 1 if n <= 1 else n * factorial(n - 1)


def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


def flatten(tree, out):
    if isinstance(tree, list):
        for child in tree:
            flatten(child, out)
    else:
        out.append(tree)
    return out


def depth(tree):
    # recursion through a C function (max over a map of Python calls)
    if not isinstance(tree, list) or not tree:
        return 0
    return 1 + max(map(depth, tree))


def countdown(n):
    # deep enough to grow any shadow stack well past its first block
    return 0 if n == 0 else 1 + countdown(n - 1)


def build(level):
    if level == 0:
        return level
    return [build(level - 1), level, [build(level - 1)]]


def main():
    total = fib(16)
    total += factorial(30) % 1000
    total += ackermann(2, 3)
    tree = build(6)
    total += sum(flatten(tree, []))
    total += depth(tree)
    total += countdown(600)
    return total


if __name__ == "__main__":
    print(main())
