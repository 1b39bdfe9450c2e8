"""pstats: the profile file itself, cProfile's format and fastprof's
trailer, as a row of the format table: written by the one writer of pstats
output, fastprof.data.profile_file.write_profile."""

from typing import BinaryIO, Optional

from ..data.profile_file import ProfileData, write_profile


def write_pstats(data: ProfileData, out: BinaryIO, title: Optional[str] = None) -> None:
    """Write *data* as a .prof file (which has no title)."""
    write_profile(out, data)
