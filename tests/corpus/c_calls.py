"""Calls to C functions and methods through every calling convention."""
import io
import operator


class Item:
    def __init__(self, name, price):
        self.name = name
        self.price = price


def price_of(item):
    return item.price


def main():
    out = []
    counts = {}
    words = "the quick brown fox jumps over the lazy dog the end".split()
    for w in words:
        out.append(w.upper())
        counts[w] = counts.get(w, 0) + 1
        counts.setdefault(w[0], 0)
    text = ", ".join(sorted(counts, key=len))
    items = [Item("n%d" % i, (i * 37) % 11) for i in range(25)]
    by_price = sorted(items, key=price_of)
    by_price.sort(key=operator.attrgetter("name"), reverse=True)
    cheapest = min(items, key=price_of)
    priciest = max(items, key=lambda it: (it.price, it.name))
    lengths = list(map(len, words))
    kept = list(filter(str.isalpha, words + ["a1", "b2"]))
    total = sum(lengths) + len(kept)
    # unbound method descriptors and builtins called with keywords
    upper = list(map(str.upper, words[:5]))
    list.append(out, "x")
    dict.get(counts, "the")
    total += int("42", base=10) + max([3, 1, 2], key=abs)
    total += sum(isinstance(x, int) for x in (1, "a", 2.0, 3))
    d = dict.fromkeys(words, 0)
    d.update(a=1)
    buf = io.StringIO()
    for k, v in sorted(d.items()):
        buf.write("%s=%d;" % (k, v))
    print("done", file=buf)
    total += len(buf.getvalue())
    joined = "-".join(str(i) for i in range(20))
    total += joined.count("1") + joined.find("19") + len(joined.replace("-", ""))
    s = set(words)
    s.add("new")
    s.discard("the")
    total += len(s)
    getter = getattr(out, "pop")
    getter()
    data = bytes(range(10)).hex()
    total += len(bytearray.fromhex(data))
    total += sum(divmod(100, 7)) + abs(-3) + round(2.5) + pow(2, 5)
    total += len(repr(sorted(counts.items())))
    return total, text, upper, cheapest.name, priciest.name


if __name__ == "__main__":
    print(main())
