"""What a profile says of the profiler's own cost: the ``compensation``
entry of the ``.prof`` trailer (``{"on": bool, "removed": seconds,
"events": int}``; absent from cProfile's files and older fastprof ones) and
the line the views print for it, e.g. ``profiler cost removed: 41 ns/event,
12.3 M events`` (docs/performance.md, "Profiler cost removed")."""
from typing import Any, Dict, Iterable, Optional

RAW_NOTE = "raw times: the profiler's own cost is included (--no-compensate or a custom timer)"


def record(on: bool, removed: float, calls: int, extra_events: int = 0) -> Dict[str, Any]:
    """The trailer entry of a profile: *removed* seconds taken out over its
    events: a call and a return per call (*calls* in all) and the
    *extra_events* charged that are neither (the profiler's
    ``compensation_info()``: 3.12+'s call-site events, calls nothing
    records, line events)."""
    return {"on": bool(on), "removed": float(removed) if on else 0.0,
            "events": 2 * int(calls) + int(extra_events)}


def check(entry: Any) -> Optional[Dict[str, Any]]:
    """A trailer entry as read back (ValueError if it is not one)."""
    if entry is None:
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("on"), (bool, type(None))):
        raise ValueError("compensation is not a record")
    return {"on": entry["on"], "removed": float(entry.get("removed", 0.0)),
            "events": int(entry.get("events", 0))}


def combine(entries: Iterable[Optional[Dict[str, Any]]]) -> Optional[Dict[str, Any]]:
    """The entry of a sum of profiles (fastprof merge): removed times and
    events add up; ``on`` is None when the inputs differ (or one says nothing)."""
    entries = list(entries)
    if not entries or all(e is None for e in entries):
        return None
    ons = {e["on"] if e is not None else None for e in entries}
    known = [e for e in entries if e is not None]
    return {"on": ons.pop() if len(ons) == 1 else None,
            "removed": sum(e["removed"] for e in known),
            "events": sum(e["events"] for e in known)}


def _events(n: int) -> str:
    if n >= 1e9:
        return "%.1f G" % (n / 1e9)
    if n >= 1e6:
        return "%.1f M" % (n / 1e6)
    if n >= 1e3:
        return "%.1f k" % (n / 1e3)
    return "%d" % n


def note(entry: Optional[Dict[str, Any]]) -> Optional[str]:
    """The header line for *entry*, or None when the file does not say."""
    if entry is None:
        return None
    if entry["on"] is None:
        return ("profiler cost removed from some of the summed profiles only: %.3g s over %s events"
                % (entry["removed"], _events(entry["events"])))
    if not entry["on"]:
        return RAW_NOTE
    per = entry["removed"] / entry["events"] * 1e9 if entry["events"] else 0.0
    return "profiler cost removed: %.0f ns/event, %s events" % (per, _events(entry["events"]))
