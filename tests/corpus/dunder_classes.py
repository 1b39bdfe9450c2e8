"""Classes with properties, descriptors and dunder methods."""
import functools


class Vector:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.y)

    def __sub__(self, other):
        return Vector(self.x - other.x, self.y - other.y)

    def __mul__(self, k):
        return Vector(self.x * k, self.y * k)

    __rmul__ = __mul__

    def __eq__(self, other):
        return isinstance(other, Vector) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self):
        return hash((self.x, self.y))

    def __iter__(self):
        yield self.x
        yield self.y

    def __getitem__(self, index):
        return (self.x, self.y)[index]

    def __len__(self):
        return 2

    def __abs__(self):
        return (self.x * self.x + self.y * self.y) ** 0.5

    def __repr__(self):
        return "Vector(%r, %r)" % (self.x, self.y)


@functools.total_ordering
class Version:
    def __init__(self, text):
        self._parts = tuple(int(p) for p in text.split("."))

    @property
    def major(self):
        return self._parts[0]

    @property
    def parts(self):
        return self._parts

    @parts.setter
    def parts(self, value):
        self._parts = tuple(value)

    def __eq__(self, other):
        return self._parts == other._parts

    def __lt__(self, other):
        return self._parts < other._parts

    def __hash__(self):
        return hash(self._parts)


class Matrix:
    def __init__(self, rows):
        self.rows = [list(r) for r in rows]

    def __getitem__(self, ij):
        i, j = ij
        return self.rows[i][j]

    def __setitem__(self, ij, value):
        i, j = ij
        self.rows[i][j] = value

    def __contains__(self, value):
        return any(value in row for row in self.rows)

    def __matmul__(self, other):
        n, m, p = len(self.rows), len(other.rows), len(other.rows[0])
        return Matrix([[sum(self[i, k] * other[k, j] for k in range(m)) for j in range(p)]
                       for i in range(n)])

    def __iter__(self):
        return iter(self.rows)


class Positive:
    """A data descriptor."""

    def __set_name__(self, owner, name):
        self.name = "_" + name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return getattr(obj, self.name)

    def __set__(self, obj, value):
        if value <= 0:
            raise ValueError(value)
        setattr(obj, self.name, value)


class Account:
    balance = Positive()

    def __init__(self, balance):
        self.balance = balance

    def __getattr__(self, name):
        if name.startswith("x_"):
            return name[2:]
        raise AttributeError(name)


def main():
    vectors = [Vector(i, i * 2) for i in range(30)]
    acc = Vector(0, 0)
    for v in vectors:
        acc = acc + v * 2 - Vector(1, 1)
    unique = {v for v in vectors + vectors[:10]}
    coords = [x + y for v in vectors for x, y in [tuple(v)]]
    firsts = [v[0] for v in vectors]
    norms = sorted(abs(v) for v in vectors)
    versions = sorted(Version(t) for t in ["1.2.3", "1.10.0", "0.9", "2.0", "1.2.10", "1.2"])
    newest = max(versions)
    newest.parts = [9, 9]
    majors = [v.major for v in versions]
    ge = sum(1 for v in versions if v >= Version("1.2.3"))
    a = Matrix([[1, 2], [3, 4]])
    b = Matrix([[5, 6], [7, 8]])
    c = a @ b
    c[0, 0] = 0
    found = 50 in c
    acct = Account(10)
    acct.balance = 20
    extra = acct.x_hello
    try:
        acct.missing
    except AttributeError:
        pass
    return (repr(acc), len(unique), sum(coords), sum(firsts), round(norms[-1], 3),
            [v.parts for v in versions], majors, ge, list(c), found, acct.balance, extra)


if __name__ == "__main__":
    print(main())
