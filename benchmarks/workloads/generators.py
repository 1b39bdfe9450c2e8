"""Generators, generator pipelines and comprehensions: resume/yield events."""

import itertools

DESCRIPTION = "generator pipelines, yield from, genexps, list/dict/set comprehensions, itertools"
SIZES = {"full": 1200000, "smoke": 500}
#: the function --lines and line_profiler look at (most own time under cProfile)
HOT = "run"


def numbers(n):
    for i in range(n):
        yield i


def evens(it):
    for x in it:
        if x % 2 == 0:
            yield x


def squares(it):
    for x in it:
        yield x * x


def chunks(it, size):
    buf = []
    for x in it:
        buf.append(x)
        if len(buf) == size:
            yield buf
            buf = []
    if buf:
        yield buf


def flatten(nested):
    for part in nested:
        yield from part


def run(n):
    total = 0
    for chunk in chunks(squares(evens(numbers(n))), 16):
        total += sum(x % 1000 for x in chunk)
    pairs = [(i, i * 3 % 17) for i in range(n // 4)]
    by_mod = {k: v for k, v in pairs if v > 4}
    seen = {v for _, v in pairs}
    total += len(by_mod) + sum(seen)
    total += sum(flatten([range(i % 7) for i in range(n // 16)]))
    total += sum(itertools.islice(itertools.accumulate(numbers(n // 4)), 0, None, 97))
    total += sum(1 for _ in filter(None, (x % 3 for x in numbers(n // 4))))
    return total
