"""Closures, nonlocal state, decorators (with functools.wraps), partial, lru_cache."""
import functools


def make_counter():
    count = 0

    def increment(step=1):
        nonlocal count
        count += step
        return count
    return increment


def make_adders(n):
    return [lambda x, i=i: x + i for i in range(n)]


def traced(func):
    calls = []

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        calls.append(args)
        return func(*args, **kwargs)
    wrapper.calls = calls
    return wrapper


def repeat(times):
    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            result = None
            for _ in range(times):
                result = func(*args, **kwargs)
            return result
        return wrapper
    return decorator


class CountCalls:
    def __init__(self, func):
        functools.update_wrapper(self, func)
        self.func = func
        self.num_calls = 0

    def __call__(self, *args, **kwargs):
        self.num_calls += 1
        return self.func(*args, **kwargs)


@traced
def square(x):
    return x * x


@repeat(3)
@traced
def greet(name):
    return "hello " + name


@CountCalls
def cube(x):
    return x * x * x


def power(base, exp):
    return base ** exp


def main():
    counter = make_counter()
    for i in range(50):
        counter(i % 3)
    adders = make_adders(20)
    total = sum(f(10) for f in adders)
    total += sum(square(i) for i in range(40))
    greetings = [greet(name) for name in ["a", "b", "c"]]
    total += sum(cube(i) for i in range(30))
    two_to = functools.partial(power, 2)
    total += sum(map(two_to, range(10)))

    @functools.lru_cache(maxsize=None)
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    total += fib(40)
    total += functools.reduce(lambda a, b: a * 3 + b, range(15))
    return counter(0), total, greetings


if __name__ == "__main__":
    print(main())
