"""pstats: the profile file itself, cProfile's format and fastprof's
trailer (fastprof.profile_file), as a row of the format table."""

from typing import BinaryIO, Optional

from ..data.profile_file import ProfileData, write_profile


def write_pstats(data: ProfileData, out: BinaryIO, title: Optional[str] = None) -> None:
    """Write *data* as a .prof file (which has no title)."""
    write_profile(out, data)
