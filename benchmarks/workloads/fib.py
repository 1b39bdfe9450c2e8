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


def timed_run(n, clock=None):
    """``run(n)`` with its phases timed: (checksum, {function: own seconds}).

    The exact reference the accuracy mode holds profiles and samplers to (no
    sampler sees deep recursion without bias: py-spy under-samples it).
    fib and ackermann call nothing but themselves, so a phase's time is
    their own time; is_even and is_odd share theirs by their calls (the same
    body each); run's own loop (under 1% of the whole) goes with them.
    """
    import time
    clock = clock or time.perf_counter
    ms = [200 + k % 50 for k in range(n * 8)]
    even_calls = sum(m // 2 + 1 for m in ms)   # is_even(m) .. down to 0: is_even at m, m-2, ...
    odd_calls = sum((m + 1) // 2 for m in ms)
    t0 = clock()
    total = fib(n)
    t1 = clock()
    for m in ms:
        total += is_even(m)
    t2 = clock()
    total += ackermann(2, n * 10)
    t3 = clock()
    mutual = t2 - t1
    return total, {fib: t1 - t0, ackermann: t3 - t2,
                   is_even: mutual * even_calls / (even_calls + odd_calls),
                   is_odd: mutual * odd_calls / (even_calls + odd_calls)}


def size_for(factor):
    """Size whose run time is about ``factor`` times the full size's (fib is exponential)."""
    import math
    return max(SIZES["smoke"], SIZES["full"] + int(round(math.log(factor) / math.log(1.618))))
