"""The compat headers tell the truth: csrc/fpy_compat.h (the public API's
version differences and backports) and csrc/fpy_cpython_internals.h (the
private CPython internals) are the only C files that test the Python
version; the internals header is the only one that touches a private
CPython internal, and every internal it touches is in its list of them
(with the versions they were checked on)."""
import re
from pathlib import Path

CSRC = Path(__file__).resolve().parent.parent / "csrc"
COMPAT = CSRC / "fpy_compat.h"
INTERNALS = CSRC / "fpy_cpython_internals.h"

VERSION_TEST = re.compile(r"PY_VERSION_HEX")
# Private (underscore) API, and the private struct fields the internals
# header wraps.
PRIVATE = re.compile(r"\b_Py[A-Za-z]\w*|\bc_profile(?:func|obj)\b|\bc_trace(?:func|obj)\b"
                     r"|\bgi_frame_state\b|\bf_stacktop\b|->f_state\b|\buse_tracing\b|\bcframe\b"
                     r"|->tracing\b|->f_code\b|\bf_trace_lines\b|\bf_lineno\b|\bnative_thread_id\b"
                     r"|\bco_code_adaptive\b")


def _code(text):
    """C source without its comments and string literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def _offenders(pattern, allowed):
    found = {}
    for path in sorted(CSRC.glob("*.[ch]")):
        if path in allowed:
            continue
        names = sorted(set(pattern.findall(_code(path.read_text(encoding="utf-8")))))
        if names:
            found[path.name] = names
    return found


def test_only_the_compat_headers_test_versions():
    assert _offenders(VERSION_TEST, {COMPAT, INTERNALS}) == {}


def test_only_the_internals_header_touches_internals():
    assert _offenders(PRIVATE, {INTERNALS}) == {}


def test_every_internal_the_internals_header_uses_is_listed():
    text = INTERNALS.read_text(encoding="utf-8")
    start = text.index("Private CPython internals ===")
    listing = text[start:text.index("*/", start)]
    used = {name.lstrip("->") for name in PRIVATE.findall(_code(text))}
    assert used, "the pattern no longer finds what it checks"
    assert sorted(name for name in used if name not in listing) == []
