"""Regex and text processing: mostly time inside C (sre), with Python callbacks."""

import re
from collections import Counter

DESCRIPTION = "tokenising with re, re.sub with a Python callback, split/findall, Counter"
SIZES = {"full": 8000, "smoke": 15}
#: the function --lines and line_profiler look at (most own time under cProfile)
HOT = "run"

TOKEN = re.compile(r"""
    (?P<number>\d+(?:\.\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<string>"[^"]*")
  | (?P<op>==|!=|<=|>=|[-+*/=<>(),;{}])
  | (?P<ws>\s+)
""", re.VERBOSE)
DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
EMAIL = re.compile(r"\b([\w.]+)@([\w.]+)\.(\w+)\b")
SENTENCE_END = re.compile(r"[.!?]\s+")
VOWELS = str.maketrans("aeiou", "AEIOU")

SNIPPETS = [
    'let total = price * 12 + tax("vat", 0.2);',
    "if (x >= 10) { y = y / 2; } else { y = x - 1; }",
    'Send the report to jane.doe@example.org by 2024-03-15. Thanks!',
    "Meeting moved to 2023-11-02; contact ops.team@corp.example.com now?",
    'print("hello", name, 42, 3.14159) ; return result != none',
    "The quick brown fox jumps over the lazy dog. Again and again!",
]


def tokens(src):
    out = []
    for m in TOKEN.finditer(src):
        kind = m.lastgroup
        if kind != "ws":
            out.append((kind, m.group()))
    return out


def iso_to_us(m):
    y, mo, d = m.groups()
    return "%s/%s/%s" % (mo, d, y)


def mask_email(m):
    user, host, tld = m.group(1), m.group(2), m.group(3)
    return "%s***@%s.%s" % (user[:1], host, tld)


def run(n):
    kinds = Counter()
    words = Counter()
    size = 0
    for i in range(n):
        text = SNIPPETS[i % len(SNIPPETS)] + " " + SNIPPETS[(i * 7 + 3) % len(SNIPPETS)]
        for kind, value in tokens(text):
            kinds[kind] += 1
            if kind == "ident":
                words[value.lower()] += 1
        text = DATE.sub(iso_to_us, text)
        text = EMAIL.sub(mask_email, text)
        parts = SENTENCE_END.split(text)
        size += sum(len(p.translate(VOWELS).strip()) for p in parts)
        size += len(re.findall(r"[A-Z][a-z]+", text))
    top = words.most_common(5)
    return size + sum(kinds.values()) + sum(c for _, c in top)
