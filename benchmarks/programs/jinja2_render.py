"""jinja2 compiling and rendering templates: inheritance, macros, loops, filters, autoescape."""

import jinja2

DESCRIPTION = "jinja2 compiles a page (inheritance, macros, filters) and renders it for many rows"
SIZES = {"full": 60, "smoke": 2}
REQUIRES = "jinja2"

TEMPLATES = {
    "base.html": """<!doctype html>
<html><head><title>{% block title %}{% endblock %}</title></head>
<body>{% block body %}{% endblock %}
<footer>{{ footer | default("no footer") | upper }}</footer></body></html>
""",
    "macros.html": """{% macro row(item, loop) -%}
<tr class="{{ loop.cycle('odd', 'even') }}"><td>{{ loop.index }}</td>
<td>{{ item.name | title }}</td><td>{{ "%.2f" | format(item.price) }}</td>
<td>{% for t in item.tags | sort %}<span>{{ t | e }}</span>{% if not loop.last %}, {% endif %}{% endfor %}</td>
<td>{{ item.note | truncate(20) }}</td></tr>
{%- endmacro %}""",
    "page.html": """{% extends "base.html" %}
{% import "macros.html" as m %}
{% block title %}{{ title }} ({{ items | length }} items){% endblock %}
{% block body %}
<h1>{{ title }}</h1>
<table>{% for item in items %}{{ m.row(item, loop) }}{% endfor %}</table>
{% for group, members in items | groupby("group") %}
<h2>{{ group }}</h2><p>{{ members | map(attribute="name") | join(", ") }}</p>
<p>total {{ members | sum(attribute="price") | round(2) }}</p>
{% endfor %}
{% endblock %}
""",
}


def _items(n):
    return [{"name": "item %d" % i, "price": (i * 37 % 1000) / 7.0,
             "tags": ["t%d" % (i * k % 11) for k in range(1, 4)],
             "note": "<note> & %s" % ("x" * (i % 40)), "group": "g%d" % (i % 6)}
            for i in range(n)]


_ITEMS = _items(200)


def run(n):
    """Compile the templates once, render the page ``n`` times; return the output size."""
    env = jinja2.Environment(loader=jinja2.DictLoader(TEMPLATES), autoescape=True, cache_size=0)
    page = env.get_template("page.html")
    total = 0
    for i in range(n):
        total += len(page.render(title="Report %d" % i, items=_ITEMS, footer="page %d" % i))
    return total
