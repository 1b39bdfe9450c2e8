"""difflib: sequence matching, unified/ndiff diffs and close matches."""
import difflib

OLD = """def greet(name):
    print("Hello, " + name)
    return len(name)

def farewell(name):
    print("Bye " + name)
""".splitlines(keepends=True) * 3

NEW = """def greet(name, punctuation="!"):
    print("Hello, " + name + punctuation)
    return len(name)

def farewell(name):
    print("Goodbye " + name)
    return None
""".splitlines(keepends=True) * 3

WORDS = ["apple", "apply", "ample", "maple", "angle", "people", "apples", "pineapple", "applet"]


def main():
    unified = list(difflib.unified_diff(OLD, NEW, "old.py", "new.py"))
    ndiff = list(difflib.ndiff(OLD[:6], NEW[:7]))
    matcher = difflib.SequenceMatcher(None, "".join(OLD), "".join(NEW), autojunk=False)
    ratio = round(matcher.ratio(), 6)
    opcodes = matcher.get_opcodes()
    close = difflib.get_close_matches("appel", WORDS, n=3, cutoff=0.5)
    blocks = difflib.SequenceMatcher(None, "abxcdeyfg", "abcdefgz").get_matching_blocks()
    return len(unified), len(ndiff), ratio, len(opcodes), close, [tuple(b) for b in blocks]


if __name__ == "__main__":
    print(main())
