"""Generators, `yield from`, generator expressions and itertools pipelines."""
import itertools


def count_up(n):
    i = 0
    while i < n:
        yield i
        i += 1


def squares(source):
    for x in source:
        yield x * x


def evens_then_odds(n):
    yield from (x for x in range(n) if x % 2 == 0)
    yield from count_odd(n)


def count_odd(n):
    for x in range(n):
        if x % 2:
            yield x
    return "done"


def delegator(n):
    result = yield from count_odd(n)
    yield result


def chunked(iterable, size):
    it = iter(iterable)
    while True:
        chunk = list(itertools.islice(it, size))
        if not chunk:
            return
        yield chunk


def key_mod3(x):
    return x % 3


def add(a, b):
    return a + b


def main():
    total = sum(squares(count_up(200)))
    total += sum(evens_then_odds(50))
    total += len(list(delegator(20)))
    pipeline = itertools.accumulate(
        itertools.starmap(add, zip(count_up(100), itertools.repeat(3))))
    total += sum(itertools.islice(pipeline, 50))
    grouped = {k: len(list(g)) for k, g in itertools.groupby(sorted(range(60), key=key_mod3), key=key_mod3)}
    total += sum(grouped.values())
    left, right = itertools.tee(count_up(30))
    total += sum(a * b for a, b in zip(left, right))
    total += sum(len(c) for c in chunked(range(47), 5))
    total += sum(itertools.chain.from_iterable([count_up(3), squares(range(4))]))
    total += sum(1 for _ in itertools.filterfalse(key_mod3, count_up(40)))
    return total


if __name__ == "__main__":
    print(main())
