"""The "library" of the --only benchmark (``scoped``): pure Python, call-dense.

Every call of ``crunch`` makes a thousand calls of ``step``: the shape of a
parser, a serialiser or an ORM that a user's code calls into.
"""


def step(x):
    return x * 3 % 7


def crunch(n):
    total = 0
    for i in range(n):
        total += step(i)
    return total
