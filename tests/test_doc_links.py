"""Every relative link in README.md, CHANGELOG.md and docs/*.md leads
somewhere: the file exists and, for a `#anchor`, the file has a heading
with that anchor as GitHub makes them (lower case, punctuation dropped,
spaces to hyphens, -1, -2 ... for repeats). Code blocks are left out: a
`# comment` there is no heading and a `[x](y)` no link.
"""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted([os.path.join(ROOT, "README.md"), os.path.join(ROOT, "CHANGELOG.md")]
               + glob.glob(os.path.join(ROOT, "docs", "*.md")))
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def prose_lines(path):
    """The lines of a markdown file outside ``` fences."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced:
                yield line


def anchor(heading):
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return slug.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for line in prose_lines(path):
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            a = anchor(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else "%s-%d" % (a, n))
    return out


def links(path):
    for line in prose_lines(path):
        for target in LINK.findall(line):
            if not re.match(r"[a-z]+:", target):          # http:, https:, mailto:
                yield target


def test_the_pages_are_found():
    names = {os.path.relpath(p, ROOT) for p in PAGES}
    assert {"README.md", "CHANGELOG.md", "docs/api.md", "docs/cli.md"} <= names


def test_the_anchor_rule_is_githubs():
    assert anchor("`fastprof diff BASE NEW`") == "fastprof-diff-base-new"
    assert anchor("Any Python (3.9+): a dormant profiler: `--signal`") == "any-python-39-a-dormant-profiler---signal"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_relative_links_lead_somewhere(page):
    broken = []
    for target in links(page):
        path, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(dest):
            broken.append(target + " (no such file)")
        elif frag and dest.endswith(".md") and frag not in anchors(dest):
            broken.append(target + " (no such heading)")
    assert not broken, broken
