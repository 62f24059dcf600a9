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
"""

import json
import os
import threading

from sched.errors import SchedError


class DecisionLogError(SchedError):
    """The decision log cannot be opened or written; the message names the file."""


class DecisionLog:
    """Appends JSON records to ``path``, one line each (thread-safe)."""

    def __init__(self, path, max_bytes=64 * 1024**2, backups=5):
        if max_bytes < 1:
            raise DecisionLogError(f"--decision-log-max-bytes: expected a number >= 1, got {max_bytes}")
        if backups < 0:
            raise DecisionLogError(f"--decision-log-backups: expected a number >= 0, got {backups}")
        self.path, self.max_bytes, self.backups = os.fspath(path), int(max_bytes), int(backups)
        self._lock = threading.Lock()
        self._fd = self._open()

    def _open(self):
        try:
            return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)
        except OSError as exc:
            raise DecisionLogError(f"{self.path}: cannot open the decision log: {exc.strerror}") from None

    def write(self, record):
        """Append ``record`` (a JSON-ready mapping) as one line."""
        line = (json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            size = os.fstat(self._fd).st_size
            if size > 0 and size + len(line) > self.max_bytes:
                self._rotate()
            view = memoryview(line)
            while view:  # one write in practice; a short write (a full disk) goes on where it stopped
                try:
                    n = os.write(self._fd, view)
                except OSError as exc:
                    raise DecisionLogError(
                        f"{self.path}: cannot write the decision log: {exc.strerror}"
                    ) from None
                view = view[n:]

    def _rotate(self):
        os.close(self._fd)
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
            raise DecisionLogError(f"{self.path}: cannot rotate the decision log: {exc.strerror}") from None
        finally:
            self._fd = self._open()

    def close(self):
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
