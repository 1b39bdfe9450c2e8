"""Call-dense pure-Python recursion: the profiler's per-call cost, undiluted."""

DESCRIPTION = "recursive fib + mutual recursion + Ackermann: nearly all time is call/return"
SIZES = {"full": 31, "smoke": 12}
#: the function --lines and line_profiler look at (most own time under cProfile)
HOT = "fib"


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


def run(n):
    total = fib(n)
    # mutual recursion, moderately deep (stays far below the recursion limit)
    for k in range(n * 8):
        total += is_even(200 + k % 50)
    total += ackermann(2, n * 10)
    return total


def size_for(factor):
    """Size whose run time is about ``factor`` times the full size's (fib is exponential)."""
    import math
    return max(SIZES["smoke"], SIZES["full"] + int(round(math.log(factor) / math.log(1.618))))
