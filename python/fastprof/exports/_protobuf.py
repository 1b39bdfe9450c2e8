"""The protocol-buffer wire encoding, as much of it as pprof's profile.proto needs.

A message is written as a ``bytearray`` of fields, each a key (field number
and wire type, as a varint) and a value: a varint (wire type 0: ints,
bools, enums; int64 fields carry negatives as 10-byte two's complement) or
length-delimited bytes (wire type 2: strings, sub-messages, packed repeated
varints).  Writing it here keeps fastprof free of runtime dependencies.
"""

from typing import Iterable

VARINT = 0
LENGTH_DELIMITED = 2

_MASK64 = (1 << 64) - 1
_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def varint(value: int) -> bytes:
    """*value* as a base-128 varint; negatives as their 64-bit two's complement."""
    if 0 <= value < 0x80:  # most ids and counts: one byte
        return _ONE_BYTE[value]
    value = int(value) & _MASK64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return varint((field << 3) | wire_type)


class Message:
    """One message being written; fields are appended in the order given."""

    __slots__ = ("buf",)

    def __init__(self):
        self.buf = bytearray()

    def int(self, field: int, value: int) -> "Message":
        """A scalar varint field (int64, uint64, bool); 0 is the default and left out."""
        if value:
            self.buf += _key(field, VARINT)
            self.buf += varint(value)
        return self

    def bytes(self, field: int, value: bytes) -> "Message":
        """A length-delimited field (always written: repeated strings keep their empties)."""
        self.buf += _key(field, LENGTH_DELIMITED)
        self.buf += varint(len(value))
        self.buf += value
        return self

    def string(self, field: int, value: str) -> "Message":
        return self.bytes(field, value.encode("utf-8"))

    def message(self, field: int, sub: "Message") -> "Message":
        return self.bytes(field, bytes(sub.buf))

    def packed(self, field: int, values: Iterable[int]) -> "Message":
        """A packed repeated varint field (left out when empty)."""
        body = b"".join(varint(v) for v in values)
        if body:
            self.bytes(field, body)
        return self

    def to_bytes(self) -> bytes:
        return bytes(self.buf)
