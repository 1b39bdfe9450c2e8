"""Object-oriented code: methods, properties, dataclasses, inheritance, dunders."""

from dataclasses import dataclass, field

DESCRIPTION = "classes, bound methods, properties, dataclasses, super(), __dunder__ methods"
SIZES = {"full": 130000, "smoke": 60}
#: the function --lines and line_profiler look at (most own time under cProfile)
HOT = "run"


@dataclass(frozen=True)
class Vec:
    x: float
    y: float

    def __add__(self, other):
        return Vec(self.x + other.x, self.y + other.y)

    def scale(self, k):
        return Vec(self.x * k, self.y * k)

    @property
    def norm1(self):
        return abs(self.x) + abs(self.y)


class Shape:
    def __init__(self, origin):
        self._origin = origin

    @property
    def origin(self):
        return self._origin

    def area(self):
        raise NotImplementedError

    def describe(self):
        return "%s@%d" % (type(self).__name__, int(self.origin.norm1))


class Rect(Shape):
    def __init__(self, origin, w, h):
        super().__init__(origin)
        self.w = w
        self.h = h

    def area(self):
        return self.w * self.h


class Square(Rect):
    def __init__(self, origin, side):
        super().__init__(origin, side, side)


class Circle(Shape):
    def __init__(self, origin, r):
        super().__init__(origin)
        self.r = r

    def area(self):
        return 3 * self.r * self.r


@dataclass
class Scene:
    shapes: list = field(default_factory=list)

    def add(self, shape):
        self.shapes.append(shape)
        return self

    def total_area(self):
        return sum(s.area() for s in self.shapes)

    def centroid(self):
        acc = Vec(0, 0)
        for s in self.shapes:
            acc = acc + s.origin
        return acc.scale(1 / max(1, len(self.shapes)))


def run(n):
    total = 0
    names = {}
    for batch in range(n // 20):
        scene = Scene()
        for i in range(20):
            o = Vec(i, batch % 7)
            k = (i + batch) % 3
            if k == 0:
                scene.add(Rect(o, i + 1, 2))
            elif k == 1:
                scene.add(Square(o, i % 5 + 1))
            else:
                scene.add(Circle(o, i % 4 + 1))
        total += scene.total_area() + int(scene.centroid().norm1)
        for s in scene.shapes[:3]:
            d = s.describe()
            names[d] = names.get(d, 0) + 1
        if scene.shapes[0].origin == Vec(0, batch % 7):
            total += 1
    return total + len(names)
