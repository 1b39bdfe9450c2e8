"""The "library" of test_only.py: pure Python, call-dense, out of scope."""
import time


def step(x):
    return x * 3 % 7


def crunch(n):
    total = 0
    for i in range(n):
        total += step(i)
    return sum([total, len(str(total))])


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        step(1)


def call_back(fn, n):
    return [fn(i) for i in range(n)]
