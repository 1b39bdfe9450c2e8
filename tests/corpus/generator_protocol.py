"""Generators driven with send(), throw() and close(), directly and through
`yield from`."""


class Reset(Exception):
    pass


def averager():
    total = 0.0
    count = 0
    average = None
    while True:
        try:
            value = yield average
        except Reset:
            total, count, average = 0.0, 0, None
            continue
        total += value
        count += 1
        average = total / count


def delegate(log):
    result = yield from averager_wrapper(log)
    log.append(("result", result))


def averager_wrapper(log):
    try:
        yield from averager()
    except GeneratorExit:
        log.append("wrapper closed")
        raise
    return "never"


def guarded(log):
    try:
        for i in range(100):
            try:
                yield i
            except ValueError as exc:
                log.append("handled %s" % exc)
    finally:
        log.append("cleanup")


def finishing():
    try:
        yield 1
        yield 2
    except GeneratorExit:
        return


def main():
    log = []
    avg = averager()
    next(avg)
    values = [avg.send(v) for v in range(1, 20)]
    avg.throw(Reset)
    values.append(avg.send(10))
    avg.close()

    d = delegate(log)
    next(d)
    for v in (4, 8, 15, 16, 23, 42):
        d.send(v)
    d.throw(Reset)
    d.send(1)
    d.close()

    g = guarded(log)
    got = [next(g), next(g)]
    for i in range(5):
        got.append(g.throw(ValueError(i)))
    g.close()

    f = finishing()
    next(f)
    f.close()
    f.close()

    exhausted = finishing()
    list(exhausted)
    try:
        exhausted.throw(KeyError("late"))
    except KeyError:
        log.append("late throw")
    return values, got, log


if __name__ == "__main__":
    print(main())
