"""Regular expressions: module-level functions (cached), compiled patterns,
replacement functions."""
import re

WORD = re.compile(r"[A-Za-z]+")
DATE = re.compile(r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})")

TEXT = """
On 2021-03-04 the release 1.2.3 shipped; on 2022-11-30 came 2.0.0.
Contact: alice@example.com, bob@example.org. Version 10.4 followed on 2023-01-15.
""" * 8


def swap_date(match):
    return "%s/%s/%s" % (match.group("d"), match.group("m"), match.group("y"))


def shout(match):
    return match.group(0).upper()


def main():
    words = WORD.findall(TEXT)
    dates = [m.groupdict() for m in DATE.finditer(TEXT)]
    swapped = DATE.sub(swap_date, TEXT)
    emails = re.findall(r"\b[\w.]+@[\w.]+\.\w+\b", TEXT)
    shouted = re.sub(r"\b(alice|bob)\b", shout, TEXT)
    parts = re.split(r"[;,.]\s*", TEXT)
    versions = [tuple(map(int, v.split("."))) for v in re.findall(r"\b\d+(?:\.\d+)+\b", TEXT)]
    ok = sum(1 for w in words if re.fullmatch(r"[a-z]+", w))
    return len(words), len(dates), len(swapped), emails[:2], len(shouted), len(parts), versions[:3], ok


if __name__ == "__main__":
    print(main())
