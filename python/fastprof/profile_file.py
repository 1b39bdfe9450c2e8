"""Reading and writing profile files (the public face; the format and its
code: ``fastprof.data.profile_file``).

    from fastprof.profile_file import load_profile
    data = load_profile("out.prof")     # a cProfile or fastprof file
    data.stats                          # the pstats dict
"""

from .data.profile_file import (
    CallPaths,
    ProfileData,
    ProfileFileError,
    file_bytes,
    load_profile,
    same_file,
    write_profile,
)

__all__ = ["CallPaths", "ProfileData", "ProfileFileError", "file_bytes", "load_profile", "same_file",
           "write_profile"]
