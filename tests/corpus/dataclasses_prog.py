"""dataclasses: generated __init__/__eq__/__lt__/__hash__/__repr__,
__post_init__, default factories, asdict/astuple/replace.

The classes are created at import time: a dataclass created inside main()
would compile fresh code objects on every call."""
import dataclasses
from dataclasses import dataclass, field
from typing import List


@dataclass(order=True)
class Task:
    priority: int
    name: str = field(compare=False)
    tags: List[str] = field(default_factory=list, compare=False)
    done: bool = field(default=False, compare=False)

    def __post_init__(self):
        self.name = self.name.strip()


@dataclass(frozen=True)
class Point:
    x: int
    y: int

    def moved(self, dx, dy):
        return dataclasses.replace(self, x=self.x + dx, y=self.y + dy)


@dataclass
class Project:
    title: str
    tasks: List[Task] = field(default_factory=list)

    @property
    def open_tasks(self):
        return [t for t in self.tasks if not t.done]

    def add(self, task):
        self.tasks.append(task)
        return self


def main():
    project = Project("corpus")
    for i in range(30):
        project.add(Task((i * 7) % 10, "  task %d  " % i, ["t%d" % (i % 3)]))
    for t in project.tasks[::3]:
        t.done = True
    ordered = sorted(project.open_tasks)
    top = ordered[:5]
    same = sum(1 for a, b in zip(ordered, ordered[1:]) if a == b)
    points = {Point(i % 5, i % 3) for i in range(40)}
    moved = [p.moved(1, -1) for p in sorted(points, key=lambda p: (p.x, p.y))]
    as_dicts = [dataclasses.asdict(t) for t in top]
    as_tuples = [dataclasses.astuple(p) for p in moved[:5]]
    fields = [f.name for f in dataclasses.fields(Task)]
    text = repr(top[0]) + repr(moved[0])
    return len(ordered), same, len(points), as_dicts[0], as_tuples, fields, text


if __name__ == "__main__":
    print(main())
