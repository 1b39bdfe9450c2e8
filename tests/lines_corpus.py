"""Functions whose line hits test_lines.py compares with sys.settrace's line
events: loops, branches, early returns, exceptions caught and uncaught,
generators, async functions, comprehensions, lambdas, nested functions."""
import asyncio


def loop_branches(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            total += i
        elif i % 3 == 1:
            total -= 1
        else:
            continue
    while n > 0: n -= 1  # noqa: E701 - one-line loop: a line event per iteration
    return total


def early_return(values):
    for v in values:
        if v < 0:
            return v
    return None


def caught(n):
    out = 0
    for i in range(n):
        try:
            if i % 2:
                raise ValueError(i)
            out += 1
        except ValueError:
            out -= 1
        finally:
            out += 2
    return out


def uncaught(x):
    y = x + 1
    if y:
        raise KeyError(y)
    return y


def generator(n):
    for i in range(n):
        yield i * 2
    yield -1


def comprehensions(n):
    squares = [i * i for i in range(n)]
    evens = {i for i in squares if i % 2 == 0}
    total = sum(x for x in evens)
    key = (lambda v: -v)  # noqa: E731 - a lambda inside a matched function
    return sorted(evens, key=key), total, {k: k + 1 for k in range(3)}


def nested(n):
    def inner(k):
        return k + 1

    acc = 0
    for _i in range(n):
        acc = inner(acc)
    return acc


async def coro(n):
    total = 0
    for i in range(n):
        await asyncio.sleep(0)
        total += i
    return total


class Widget:
    def method(self, n):
        if n > 2:
            return self.method(n - 1) + 1
        return n


def run_all():
    loop_branches(20)
    early_return([3, 2, -1, 5])
    early_return([1, 2])
    caught(7)
    for i in range(3):
        try:
            uncaught(i)
        except KeyError:
            pass
    list(generator(5))
    g = generator(10)
    next(g)
    next(g)
    g.close()
    comprehensions(6)
    nested(4)
    asyncio.run(coro(3))
    Widget().method(5)
