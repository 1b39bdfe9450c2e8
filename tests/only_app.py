"""The "app" of test_only.py: the code in scope, calling only_lib."""
import only_lib


def square(x):
    return x * x


def work(n):
    values = [only_lib.crunch(i) for i in range(n)]
    return len(values) + max(values)


def slow():
    only_lib.busy(0.03)
    return abs(-1)


def gen(n):
    for i in range(n):
        yield only_lib.step(i)


def main():
    work(20)
    slow()
    total = sum(gen(5))
    only_lib.call_back(square, 4)
    try:
        only_lib.crunch(None)
    except TypeError:
        total += 1
    return total
