"""An application-like pipeline: JSON text -> validated objects -> aggregates -> text report."""

import json
from dataclasses import dataclass
from datetime import date, timedelta

DESCRIPTION = "json.loads -> dataclasses with validation (some raise) -> group/sort -> formatted report"
SIZES = {"full": 16000, "smoke": 20}
#: the function --lines and line_profiler look at (most own time under cProfile)
HOT = "make_document"

REGIONS = ["north", "south", "east", "west"]
PRODUCTS = [("widget", 2.50), ("gadget", 12.00), ("doohickey", 7.25), ("gizmo", 99.99),
            ("sprocket", 0.75)]


class ValidationError(ValueError):
    pass


@dataclass
class Line:
    product: str
    qty: int
    unit_price: float

    @property
    def amount(self):
        return self.qty * self.unit_price


@dataclass
class Order:
    id: int
    customer: str
    region: str
    day: date
    lines: list

    @property
    def total(self):
        return sum(line.amount for line in self.lines)


def make_document(n):
    """Build the input deterministically (a linear congruential generator, no random)."""
    seed = 12345
    orders = []
    start = date(2024, 1, 1)
    for i in range(n):
        lines = []
        for _ in range(1 + i % 4):
            seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
            name, price = PRODUCTS[seed % len(PRODUCTS)]
            qty = (seed >> 8) % 9 - 1          # sometimes -1 / 0: invalid lines
            lines.append({"product": name, "qty": qty, "unit_price": price})
        orders.append({
            "id": i,
            "customer": "cust-%03d" % (i * 37 % 211),
            "region": REGIONS[i % len(REGIONS)] if i % 53 else "",
            "day": (start + timedelta(days=i % 90)).isoformat(),
            "lines": lines,
        })
    # compact separators and no indent: the C encoder on every version (with
    # indent=, 3.9-3.12 fall back to the pure-Python one, which would dominate)
    return json.dumps({"orders": orders}, separators=(",", ":"))


def parse_line(raw):
    qty = int(raw["qty"])
    if qty <= 0:
        raise ValidationError("bad qty %r" % qty)
    return Line(raw["product"], qty, float(raw["unit_price"]))


def parse_order(raw):
    if not raw.get("region"):
        raise ValidationError("order %s has no region" % raw["id"])
    lines = []
    for rl in raw["lines"]:
        try:
            lines.append(parse_line(rl))
        except ValidationError:
            continue
    if not lines:
        raise ValidationError("order %s has no valid line" % raw["id"])
    return Order(raw["id"], raw["customer"], raw["region"],
                 date.fromisoformat(raw["day"]), lines)


def report(orders, rejected):
    by_region = {}
    by_product = {}
    by_month = {}
    for o in orders:
        by_region.setdefault(o.region, []).append(o)
        month = o.day.strftime("%Y-%m")
        by_month[month] = by_month.get(month, 0.0) + o.total
        for line in o.lines:
            p = by_product.setdefault(line.product, [0, 0.0])
            p[0] += line.qty
            p[1] += line.amount
    out = ["SALES REPORT", "=" * 40]
    for region in sorted(by_region):
        rs = by_region[region]
        top = sorted(rs, key=lambda o: (-o.total, o.id))[:3]
        out.append("%-8s orders=%5d revenue=%12.2f" % (region, len(rs), sum(o.total for o in rs)))
        for o in top:
            out.append("    #%-6d %-9s %10.2f" % (o.id, o.customer, o.total))
    out.append("-" * 40)
    for name, (qty, amount) in sorted(by_product.items(), key=lambda kv: -kv[1][1]):
        out.append("%-10s qty=%7d amount=%12.2f" % (name, qty, amount))
    for month in sorted(by_month):
        out.append("%s %12.2f" % (month, by_month[month]))
    out.append("rejected: %d" % rejected)
    return "\n".join(out)


def run(n):
    doc = json.loads(make_document(n))
    orders = []
    rejected = 0
    for raw in doc["orders"]:
        try:
            orders.append(parse_order(raw))
        except ValidationError:
            rejected += 1
    text = report(orders, rejected)
    return len(text) + sum(map(ord, text[-200:]))
