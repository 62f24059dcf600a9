"""``sched serve --decision-log FILE``: one JSON line per ``POST /v1/rank`` call, rotated by size.

Each line goes to the file in one ``write(2)`` on a descriptor opened with ``O_APPEND``:
the kernel places it at the end of the file whole, so lines never interleave and a reader
(``tail -f``, a log shipper) never sees half of one from a torn buffered write.
``logging.handlers.RotatingFileHandler`` rotates the same way but writes through a
buffered stream, which splits a long line (an order of 20,000 ids) into several writes.

Rotation: before a line would take the file past ``max_bytes``, ``FILE`` becomes
``FILE.1`` (``FILE.1`` becomes ``FILE.2``, ..., up to ``backups``; the oldest is
dropped) and a new ``FILE`` is started. A line longer than ``max_bytes`` is still
written whole, alone in its file.

Failures never reach the caller (the service answers the call whatever becomes of its
log line): :meth:`DecisionLog.write` returns False, the first failure of an outage is
logged once on the ``sched.serve`` logger, and the log resumes as soon as it can (a
missing folder that comes back, a disk with room again). Three rules keep a failure
from doing worse than losing lines:

- the descriptor is forgotten the moment it is closed, and before every write the
  descriptor is checked to be the regular file this log opened: a closed descriptor's
  number, reused by the next accepted socket, is never written to;
- a write that fails part-way (a full disk) is cut back to the record's start, so no
  half line stays for the next one to be glued to;
- a file moved or deleted under the log (``logrotate``, ``rm``) is noticed on the next
  write (the path no longer names the open file) and a new one is begun; so is a
  request to reopen (:meth:`reopen`, on SIGHUP);
- the path is opened without blocking (``O_NONBLOCK``) and only a regular file is
  written to: a FIFO, a device or a folder at the path (at start: refused, naming the
  path; swapped in while serving, then reopened or rotated to) is refused, its records
  counted lost, and the event loop, which writes the log, never waits on it.

The message that ends an outage names the records lost during that outage;
:attr:`DecisionLog.failures` counts them since the start (the service's metric).
"""

import errno
import json
import logging
import os
import stat
import threading
import time

from sched.errors import SchedError

log = logging.getLogger("sched.serve")

#: Seconds between two attempts to reopen a log that cannot be opened (a missing folder).
RETRY_S = 1.0


class DecisionLogError(SchedError):
    """The decision log cannot be opened at start; the message names the file."""


class _Down(DecisionLogError):
    """Inside :meth:`DecisionLog.write`: there is no file to write to now (the reason, in words)."""

    @property
    def strerror(self):
        return str(self)


class DecisionLog:
    """Appends JSON records to ``path``, one line each (thread-safe)."""

    def __init__(self, path, max_bytes=64 * 1024**2, backups=5):
        if max_bytes < 1:
            raise DecisionLogError(f"--decision-log-max-bytes: expected a number >= 1, got {max_bytes}")
        if backups < 0:
            raise DecisionLogError(f"--decision-log-backups: expected a number >= 0, got {backups}")
        self.path, self.max_bytes, self.backups = os.fspath(path), int(max_bytes), int(backups)
        self._lock = threading.Lock()
        self._fd = self._id = None
        self._retry_at = 0.0
        self._reopen = False
        self._rotation_failing = None
        self._failing = None  # the reason of the outage in progress (None: writing)
        self._lost = 0  # records not written during the outage in progress
        self.failures = 0  # records not written since the start
        try:
            self._fd, self._id = self._open()
        except (OSError, _Down) as exc:  # at start, a bad path is the operator's error: say so and stop
            raise DecisionLogError(f"{self.path}: cannot open the decision log: {exc.strerror}") from None

    def _open(self):
        """(descriptor, (device, inode)) of the regular file at ``path``, opened without blocking.
        Raises _Down naming what is there instead (a FIFO, a device, a folder), or OSError."""
        try:
            there = os.stat(self.path)
        except FileNotFoundError:
            there = None
        except OSError:
            there = None  # os.open says why
        if there is not None and not stat.S_ISREG(there.st_mode):
            raise _Down(f"not a regular file: {_kind(there.st_mode)}")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags, 0o640)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO swapped in since the stat, with no reader
                raise _Down(f"not a regular file: {_kind(stat.S_IFIFO)}") from None
            raise
        s = os.fstat(fd)
        if not stat.S_ISREG(s.st_mode):
            os.close(fd)
            raise _Down(f"not a regular file: {_kind(s.st_mode)}")
        return fd, (s.st_dev, s.st_ino)

    def reopen(self):
        """Begin a new file at ``path`` on the next write (what log rotation tools ask with SIGHUP).

        Only sets a flag: safe to call from a signal handler, even one that interrupts a write."""
        self._reopen = True

    def write(self, record):
        """Append ``record`` (a JSON-ready mapping) as one line; False if it could not be written."""
        line = (json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            try:
                fd = self._ready(len(line))
                before = os.fstat(fd).st_size
                try:
                    view = memoryview(line)
                    while view:  # one write in practice; a short write goes on where it stopped
                        view = view[os.write(fd, view) :]
                except OSError:
                    _cut(fd, before)  # no half line left for the next record to be glued to
                    raise
            except (OSError, _Down) as exc:
                self.failures += 1
                self._lost += 1
                self._failed(exc.strerror or str(exc))
                return False
            if self._failing is not None:
                log.warning(
                    "decision log %s: writing again (%d records lost during this outage, %d since the start)",
                    self.path,
                    self._lost,
                    self.failures,
                )
                self._failing, self._lost = None, 0
            return True

    def _ready(self, size):
        """The descriptor to append ``size`` bytes to: this log's file at ``path``, reopened or
        rotated when needed. Raises OSError or _Down when there is none to write to."""
        if self._fd is not None and (self._reopen or not self._still_ours()):
            self._close()
        if self._fd is None:
            now = time.monotonic()
            if now < self._retry_at:  # the last attempt just failed: don't retry on every call
                raise _Down(self._failing or "cannot be opened")
            self._reopen = False
            try:
                self._fd, self._id = self._open()
            except (OSError, _Down):
                self._retry_at = now + RETRY_S
                raise
        current = os.fstat(self._fd).st_size
        if current > 0 and current + size > self.max_bytes:
            self._rotate()
        return self._fd

    def _still_ours(self):
        """Whether ``path`` still names the file open on our descriptor (both checked: the
        descriptor is never a number some other file or socket now holds)."""
        try:
            mine, there = os.fstat(self._fd), os.stat(self.path)
        except OSError:
            return False
        same = (mine.st_dev, mine.st_ino) == self._id == (there.st_dev, there.st_ino)
        return same and stat.S_ISREG(mine.st_mode)

    def _rotate(self):
        """FILE -> FILE.1 -> ... -> FILE.<backups>, then a new FILE. A rename that fails
        leaves the current file open: the record goes there, past the size, not lost."""
        try:
            if self.backups == 0:
                os.unlink(self.path)
            else:
                for i in range(self.backups - 1, 0, -1):
                    older = f"{self.path}.{i}"
                    if os.path.exists(older):
                        os.replace(older, f"{self.path}.{i + 1}")
                os.replace(self.path, f"{self.path}.1")
        except OSError as exc:
            if self._rotation_failing is None:
                log.error(
                    "decision log %s: cannot rotate (%s); writing on past its size", self.path, exc.strerror
                )
            self._rotation_failing = exc.strerror
            return
        self._rotation_failing = None
        self._close()
        self._fd, self._id = self._open()

    def _close(self):
        fd, self._fd, self._id = self._fd, None, None  # forgotten before it is closed
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def _failed(self, reason):
        if self._failing is None:
            log.error(
                "decision log %s: cannot write (%s); calls are still answered, retrying", self.path, reason
            )
        self._failing = reason

    def close(self):
        with self._lock:
            self._close()


def _kind(mode):
    """What a file of ``mode`` is, in words."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def _cut(fd, size):
    """Truncate ``fd`` back to ``size`` bytes, if the file system lets us."""
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass
