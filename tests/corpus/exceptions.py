"""Exceptions raised several frames deep and caught higher up."""


class AppError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class NotFound(AppError):
    pass


def lookup(table, key):
    try:
        return table[key]
    except KeyError as exc:
        raise NotFound(404, "missing %r" % (key,)) from exc


def level3(table, key):
    value = lookup(table, key)
    return value + 1


def level2(table, key):
    return level3(table, key) * 2


def level1(table, key):
    try:
        return level2(table, key)
    finally:
        table.setdefault("_visits", 0)
        table["_visits"] += 1


def deep(n):
    if n == 0:
        raise ValueError("bottom")
    return deep(n - 1)


def reraiser(n):
    try:
        deep(n)
    except ValueError:
        raise


def parse_int(text):
    try:
        return int(text)
    except ValueError:
        return None


def gen_raising(n):
    for i in range(n):
        if i == 3:
            raise RuntimeError("from generator")
        yield i


def main():
    table = {"a": 1, "b": 2, "c": 3}
    results = []
    for key in ["a", "x", "b", "y", "c", "z"] * 10:
        try:
            results.append(level1(table, key))
        except NotFound as exc:
            results.append(-exc.code)
    caught = 0
    for n in range(15):
        try:
            reraiser(n)
        except ValueError:
            caught += 1
    parsed = [parse_int(t) for t in ["1", "x", "22", "", "333", "4a"] * 5]
    collected = []
    try:
        for x in gen_raising(10):
            collected.append(x)
    except RuntimeError:
        pass
    return results, caught, parsed, collected, table["_visits"]


if __name__ == "__main__":
    print(main())
