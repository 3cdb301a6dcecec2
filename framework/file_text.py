"""The text of a spec (or claims) file: a regular file of UTF-8 text, at most `MAX_FILE_BYTES` (a
UTF-8 byte-order mark is skipped; a UTF-16/32 one, a byte that is not UTF-8 are errors at their
line and column); and how a file is named in messages and told apart from another (`extends`).
Reading only: `framework.loader.SpecFiles` reads each file once per command and notes each use for
the validate cache."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path as FsPath

from framework.errors import Mark, Problem, SpecError

MAX_FILE_BYTES = 1 << 20


def read_bytes(path: FsPath) -> tuple[str | None, bytes | None]:
    """(why `path` cannot be read as a spec file, None) or (None, its bytes): at most
    MAX_FILE_BYTES + 1 of them, so that a larger file is known to be one."""
    reason, data = unreadable(path), None
    if reason is None:
        try:
            with open(path, "rb") as file:
                # Read what the file holds, not MAX_FILE_BYTES: `read(n)` allocates n bytes first
                # (1 MiB: 3x the cost of reading a spec). A file grown since `fstat` is read on.
                expected = min(os.fstat(file.fileno()).st_size, MAX_FILE_BYTES) + 1
                data = file.read(expected)
                if len(data) == expected <= MAX_FILE_BYTES:
                    data += file.read(MAX_FILE_BYTES + 1 - len(data))
        except OSError as error:
            reason, data = f"cannot read the file: {(error.strerror or str(error)).lower()}", None
    return reason, data


def unreadable(path: FsPath) -> str | None:
    """Why `path` cannot be read as a spec file, or None when it is a regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "file not found"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "cannot read the file: it is a symlink loop (too many levels of symbolic links)"
        return f"cannot read the file: {error.strerror or error}"
    if stat.S_ISDIR(mode):
        return "is a directory, not a spec file"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a spec is a YAML text file)"
    return None


def decode(reason: str | None, data: bytes | None, source: str) -> str:
    """The text of a spec file from `read_bytes` (module docstring: a regular UTF-8 file, at most
    MAX_FILE_BYTES), or a SpecError at `source`."""
    if reason or data is None:
        raise SpecError([Problem(Mark(source), (), reason)])
    if len(data) > MAX_FILE_BYTES:
        raise SpecError([Problem(Mark(source), (), f"file is larger than {MAX_FILE_BYTES} bytes: a spec "
                                                   "is a short YAML text written by hand (is this a spec?)")])
    for bom, encoding in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                          (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")):
        if data.startswith(bom):
            raise SpecError([Problem(Mark(source, 1, 1), (), f"the file is {encoding} text (it starts with a "
                                                             f"{encoding} byte-order mark); save it as UTF-8")])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        line = data.count(b"\n", 0, error.start) + 1
        column = len(data[line_start:error.start].decode("utf-8", "replace")) + 1
        raise SpecError([Problem(Mark(source, line, column), (), f"byte 0x{data[error.start]:02x} is not valid "
                                                                 "UTF-8; save the file as UTF-8")]) from None


def display_name(path: FsPath) -> str:
    """The path as messages name it: relative to the working folder when it lies under it (`..`
    folded by text), else as given. No symlink is followed: this runs for every file read, and
    resolving a path costs a system call per folder in it."""
    cwd = os.getcwd()
    full = os.path.normpath(os.path.join(cwd, path))
    return full[len(cwd) + 1:] if full.startswith(cwd + os.sep) else str(path)


def file_identity(path: FsPath) -> tuple[int, int] | str:
    """What makes two paths one file, for the `extends` cycle check: its device and inode (symlinks
    and `..` followed by the one stat), or the absolute path of a file that cannot be stat'ed."""
    try:
        found = os.stat(path)
    except OSError:
        return os.path.abspath(path)
    return found.st_dev, found.st_ino
