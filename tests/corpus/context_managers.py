"""Context managers: class based (one suppresses), contextlib generators,
ExitStack, suppress, nullcontext."""
import contextlib


class Tracker:
    def __init__(self, log, name, swallow=False):
        self.log = log
        self.name = name
        self.swallow = swallow

    def __enter__(self):
        self.log.append("enter " + self.name)
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append("exit %s %s" % (self.name, exc_type.__name__ if exc_type else "-"))
        return self.swallow


@contextlib.contextmanager
def tagged(log, tag):
    log.append("<" + tag + ">")
    try:
        yield tag
    finally:
        log.append("</" + tag + ">")


@contextlib.contextmanager
def converting(log):
    try:
        yield
    except KeyError as exc:
        log.append("converted")
        raise LookupError(str(exc)) from None


def work(log, i):
    with Tracker(log, "outer%d" % i):
        with tagged(log, "t%d" % i) as tag:
            with Tracker(log, "inner", swallow=True):
                if i % 2:
                    raise ValueError(tag)
            log.append("after " + tag)


def main():
    log = []
    for i in range(12):
        work(log, i)
    with contextlib.ExitStack() as stack:
        for i in range(5):
            stack.enter_context(tagged(log, "s%d" % i))
        stack.callback(log.append, "callback")
    for i in range(8):
        with contextlib.suppress(ZeroDivisionError):
            log.append(str(10 // (i % 3)))
    try:
        with converting(log):
            {}["missing"]
    except LookupError:
        log.append("lookup")
    with contextlib.nullcontext(log) as same:
        same.append("null")
    return len(log), log[:6]


if __name__ == "__main__":
    print(main())
