"""Files written whole or not at all: every profile and export fastprof
writes to a path (``-o FILE``, ``dump_stats``, the exports, per-test and
per-process profiles) goes to a new file beside it, renamed over it
(``os.replace``) once complete.  A write that fails or is interrupted
leaves the previous file as it was and no temporary file behind; a reader
polling the file sees the old profile or the new one, never half of one.

Imports nothing but os (``python -m fastprof`` may import it late).
"""

import os


def _open_beside(path):
    """(name, fd) of a new file in *path*'s directory, under a name nobody
    can guess or plant first (O_EXCL: never an existing file or symlink),
    with the permissions a new *path* would get (0666 less the umask)."""
    directory, base = os.path.split(path)
    for _attempt in range(100):
        tmp = os.path.join(directory, ".%s.%s.tmp" % (base, os.urandom(6).hex()))
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError("cannot create a temporary file next to %s" % path)


def create_beside(path):
    """A new file beside *path* (``_open_beside``): (its name, binary file)."""
    tmp, fd = _open_beside(path)
    return tmp, os.fdopen(fd, "wb")


def _remove(tmp):
    try:
        os.unlink(tmp)
    except OSError:
        pass


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
        _remove(tmp)
        raise


def write_bytes_atomically(path, data):
    """Replace *path* with the bytes *data*, as ``write_atomically`` does
    with a regular file, through the file descriptor alone: os.fdopen
    imports the io module, whose import registers ABCs and so empties every
    ABC cache of a program in progress (the calibration cache is written
    while the program runs; on 3.15 io is not imported at startup)."""
    path = os.fspath(path)
    tmp, fd = _open_beside(path)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
