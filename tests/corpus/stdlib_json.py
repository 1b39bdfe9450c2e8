"""json encoding and decoding with Python hooks."""
import json


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


def encode_default(obj):
    if isinstance(obj, Point):
        return {"__point__": [obj.x, obj.y]}
    raise TypeError(type(obj).__name__)


def decode_hook(d):
    if "__point__" in d:
        return Point(*d["__point__"])
    return d


class CustomEncoder(json.JSONEncoder):
    def default(self, obj):
        if isinstance(obj, set):
            return sorted(obj)
        return super().default(obj)


def main():
    doc = {
        "name": "corpus",
        "values": list(range(50)),
        "nested": [{"id": i, "tags": ["t%d" % j for j in range(i % 4)], "p": Point(i, -i)}
                   for i in range(40)],
        "flags": {"a": True, "b": None, "c": 1.5},
    }
    text = json.dumps(doc, default=encode_default, sort_keys=True)
    pretty = json.dumps(json.loads(text), indent=2, sort_keys=True)
    back = json.loads(text, object_hook=decode_hook)
    points = sum(item["p"].x for item in back["nested"])
    custom = json.dumps({"s": {3, 1, 2}}, cls=CustomEncoder)
    lines = [json.loads(json.dumps({"k": i, "v": [i] * 3})) for i in range(20)]
    return len(text), len(pretty), points, custom, len(lines)


if __name__ == "__main__":
    print(main())
