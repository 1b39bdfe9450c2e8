"""Files written whole or not at all: every profile and export fastprof
writes to a path (``-o FILE``, ``dump_stats``, the exports, per-test and
per-process profiles) goes to a new file beside it, renamed over it
(``os.replace``) once complete.  A write that fails or is interrupted
leaves the previous file as it was and no temporary file behind; a reader
polling the file sees the old profile or the new one, never half of one.

Imports nothing but os (``python -m fastprof`` may import it late).
"""

import os


def create_beside(path):
    """A new file in *path*'s directory, under a name nobody can guess or plant
    first (O_EXCL: never an existing file or symlink), with the permissions a
    new *path* would get (0666 less the umask): (its name, binary file)."""
    directory, base = os.path.split(path)
    for _attempt in range(100):
        tmp = os.path.join(directory, ".%s.%s.tmp" % (base, os.urandom(6).hex()))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        return tmp, os.fdopen(fd, "wb")
    raise FileExistsError("cannot create a temporary file next to %s" % path)


def write_atomically(path, write):
    """Call ``write(f)`` with a binary file that replaces *path* once
    ``write`` returns; if it raises, *path* is untouched and the temporary
    file removed.  A device or FIFO (/dev/stdout) is written in place."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "wb") as f:
            write(f)
        return
    tmp, f = create_beside(path)
    try:
        with f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
