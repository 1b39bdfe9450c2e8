"""Inheritance and super(), class/static methods, __init_subclass__,
a metaclass __call__, __slots__ and __missing__."""


class Registry(type):
    instances = 0

    def __call__(cls, *args, **kwargs):
        Registry.instances += 1
        return super().__call__(*args, **kwargs)


class Base(metaclass=Registry):
    kinds = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Base.kinds.append(cls.__name__)

    def __init__(self, value):
        self.value = value

    def describe(self):
        return "%s(%s)" % (type(self).__name__, self.render())

    def render(self):
        return str(self.value)

    @classmethod
    def from_text(cls, text):
        return cls(cls.parse(text))

    @staticmethod
    def parse(text):
        return int(text)


class Doubled(Base):
    def render(self):
        return super().render() * 2


class Tripled(Doubled):
    def render(self):
        return super().render() + "|" + Base.render(self)

    @staticmethod
    def parse(text):
        return int(text) * 3


class DefaultDict(dict):
    def __missing__(self, key):
        value = self[key] = len(key)
        return value


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b

    def total(self):
        return self.a + self.b


def main():
    objects = []
    for i in range(20):
        cls = (Base, Doubled, Tripled)[i % 3]
        objects.append(cls(i) if i % 2 else cls.from_text(str(i)))
    descriptions = [o.describe() for o in objects]
    dd = DefaultDict()
    lengths = [dd[w] for w in ["alpha", "beta", "alpha", "gamma", "beta", "delta"]]
    slots = sum(Slotted(i, i + 1).total() for i in range(25))
    return descriptions[:4], lengths, slots, sorted(Base.kinds)


if __name__ == "__main__":
    print(main())
