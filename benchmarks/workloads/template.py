"""An application-like program: a tiny template engine (parse once, render many times)."""

import html
import re

DESCRIPTION = "mini template engine: regex lexer, recursive-descent parser, node tree render with filters"
SIZES = {"full": 3600, "smoke": 4}
#: the function --lines and line_profiler look at: the most own time under
#: cProfile after For.render (chosen when a pattern could not name a method
#: on 3.9/3.10; kept so the numbers of record stay comparable)
HOT = "lookup"

PAGE = """<html><head><title>{{ title|upper }}</title></head><body>
<h1>{{ title }}</h1>
{% if user %}<p>Hello, {{ user.name|escape }} ({{ user.email }})</p>{% else %}<p>Hello, guest</p>{% endif %}
<ul>
{% for item in items %}  <li class="{% if item.sale %}sale{% else %}normal{% endif %}">
    {{ item.name|title }} - {{ item.price|money }}
    {% for tag in item.tags %}<span>{{ tag|escape }}</span>{% endfor %}
  </li>
{% endfor %}</ul>
<footer>{{ footer|default }}</footer>
</body></html>"""

TOKEN_RE = re.compile(r"({{.*?}}|{%.*?%})", re.S)

FILTERS = {
    "upper": str.upper,
    "title": str.title,
    "escape": html.escape,
    "money": lambda v: "$%.2f" % v,
    "default": lambda v: v if v else "-",
}


class Text:
    def __init__(self, text):
        self.text = text

    def render(self, ctx, out):
        out.append(self.text)


class Var:
    def __init__(self, expr):
        parts = [p.strip() for p in expr.split("|")]
        self.path = parts[0].split(".")
        self.filters = [FILTERS[f] for f in parts[1:]]

    def render(self, ctx, out):
        value = lookup(ctx, self.path)
        for f in self.filters:
            value = f(value)
        out.append(str(value))


class If:
    def __init__(self, cond, body, orelse):
        self.path = cond.split(".")
        self.body = body
        self.orelse = orelse

    def render(self, ctx, out):
        branch = self.body if lookup(ctx, self.path) else self.orelse
        for node in branch:
            node.render(ctx, out)


class For:
    def __init__(self, var, seq, body):
        self.var = var
        self.path = seq.split(".")
        self.body = body

    def render(self, ctx, out):
        for value in lookup(ctx, self.path):
            inner = Context(ctx, {self.var: value})
            for node in self.body:
                node.render(inner, out)


class Context:
    def __init__(self, parent, local):
        self.parent = parent
        self.local = local

    def get(self, name, default=None):
        if name in self.local:
            return self.local[name]
        return self.parent.get(name, default)


def lookup(ctx, path):
    value = ctx.get(path[0])
    for attr in path[1:]:
        value = value[attr] if isinstance(value, dict) else getattr(value, attr)
    return value


class Parser:
    def __init__(self, source):
        self.tokens = [t for t in TOKEN_RE.split(source) if t]
        self.pos = 0

    def parse(self, until=()):
        nodes = []
        while self.pos < len(self.tokens):
            tok = self.tokens[self.pos]
            if tok.startswith("{%"):
                words = tok[2:-2].split()
                if words[0] in until:
                    return nodes
                self.pos += 1
                if words[0] == "if":
                    body = self.parse(("else", "endif"))
                    orelse = []
                    if self.tokens[self.pos][2:-2].split()[0] == "else":
                        self.pos += 1
                        orelse = self.parse(("endif",))
                    self.pos += 1
                    nodes.append(If(words[1], body, orelse))
                elif words[0] == "for":
                    body = self.parse(("endfor",))
                    self.pos += 1
                    nodes.append(For(words[1], words[3], body))
                else:
                    raise SyntaxError("unknown tag %r" % words[0])
            elif tok.startswith("{{"):
                nodes.append(Var(tok[2:-2]))
                self.pos += 1
            else:
                nodes.append(Text(tok))
                self.pos += 1
        return nodes


class Item:
    def __init__(self, i):
        self.name = "item number %d" % i
        self.price = (i * 7919 % 10000) / 100.0
        self.sale = i % 3 == 0
        self.tags = ["t%d" % (i % 5), "<new>" if i % 4 == 0 else "old"]


def render(nodes, ctx):
    out = []
    for node in nodes:
        node.render(ctx, out)
    return "".join(out)


def run(n):
    total = 0
    for page in range(n):
        # re-parse now and then, as an app reloading templates would
        if page % 50 == 0:
            nodes = Parser(PAGE).parse()
        ctx = {
            "title": "catalogue page %d" % page,
            "user": {"name": "Ann <admin>", "email": "ann@example.org"} if page % 2 else None,
            "items": [Item(page * 10 + i) for i in range(12)],
            "footer": "" if page % 5 else "(c) example",
        }
        total += len(render(nodes, ctx))
    return total
