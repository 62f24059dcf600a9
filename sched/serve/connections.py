"""The connection guard of ``sched serve``: how long and how much a client may send before
its request is read, and which connection gives way when all slots are taken (docs/serve.md).

uvicorn bounds neither: a connection that sends nothing is never timed out and counts
against ``limit_concurrency`` (99 silent sockets shut every other client out), and its
httptools parser buffers a header of any length (one endless header value took the
server past 500 MB). :class:`GuardedProtocol` is uvicorn's httptools protocol with the
bounds nginx and gunicorn have, counted on the raw bytes before the parser sees them:

- **idle timeout** (``idle_s``): a connection that sends no byte of a request for this
  long, from its opening or from its last answer, is closed (nginx
  ``keepalive_timeout``; uvicorn's ``timeout_keep_alive`` covers only the second case);
- **header timeout** (``header_s``): a request line and headers not complete this long
  after their first byte get 408 and the connection is closed (nginx
  ``client_header_timeout``);
- **header size and count** (``header_bytes``, ``header_fields``): more gets 431 and the
  connection is closed (gunicorn ``limit_request_field_size`` / ``limit_request_fields``,
  nginx ``large_client_header_buffers``);
- **send timeout** (``send_s``): an answer the client does not read (the connection's
  write buffer above asyncio's high-water mark, or left unsent when the connection is
  closed) for this long is given up: the connection is aborted and its buffered bytes
  freed (nginx ``send_timeout``). A client that sends calls with big answers and never
  reads them holds neither a slot nor memory past it, and a shutdown (SIGTERM) never
  waits on it longer;
- **slots** (``max_connections``): when a new connection would pass the limit, the
  connection that has waited longest without a request in progress (silent ones before
  ones still sending headers) is closed to make room; only when every connection is
  busy with a request does the new one get 503. So idle and slow clients can never shut
  out one that sends its request: ``/healthz`` and authenticated calls are answered
  while a thousand idle connections are held.

Each refusal is counted (``sched_http_connections_closed_total{reason}``).
"""

import socket
import struct
import time
from dataclasses import dataclass

from sched.errors import MissingExtraError

try:
    from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
except ImportError as exc:  # tests/test_extras.py checks the message
    raise MissingExtraError.of("sched serve", "serve", exc) from exc


@dataclass(frozen=True)
class Limits:
    """What one connection may hold (``sched serve``'s options; docs/serve.md)."""

    #: connections held at once (idle ones give way to new ones)
    max_connections: int = 100
    #: seconds a connection may stay silent, from its opening or its last answer
    idle_s: float = 5.0
    #: seconds from a request's first byte to the end of its headers
    header_s: float = 10.0
    #: bytes of request line and headers
    header_bytes: int = 32 * 1024
    #: header fields of one request
    header_fields: int = 100
    #: seconds an answer may wait for the client to read it (buffered past the high-water
    #: mark, or unsent at close); then the connection is aborted
    send_s: float = 10.0


def protocol(limits, closed=None):
    """A :class:`GuardedProtocol` class bound to ``limits`` (uvicorn's ``http=`` takes a class);
    ``closed(reason)`` is called for each connection the guard closes or refuses."""
    return type("GuardedProtocol", (GuardedProtocol,), {"limits": limits, "closed": staticmethod(closed)})


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the module's bounds (use :func:`protocol`)."""

    limits = Limits()
    closed = None

    def connection_made(self, transport):
        super().connection_made(transport)
        self._head_state()
        self._timer = self.loop.call_later(self.limits.idle_s, self._expire, "idle_timeout")
        if len(self.connections) > self.limits.max_connections:
            self._make_room()

    def connection_lost(self, exc):
        self._cancel()
        self._cancel_send()
        super().connection_lost(exc)

    def pause_writing(self):
        super().pause_writing()  # the client does not read as fast as we answer: its deadline
        self._send_deadline()

    def resume_writing(self):
        super().resume_writing()
        if not self.transport.is_closing():  # once closing, what is left must go by the deadline
            self._cancel_send()

    def shutdown(self):
        super().shutdown()  # SIGTERM: an idle connection is closed, its unread answer given send_s
        self._closing()

    def timeout_keep_alive_handler(self):
        super().timeout_keep_alive_handler()
        self._closing()

    def data_received(self, data):
        if self._in_head and not self._count_head(data):
            return
        super().data_received(data)

    def on_headers_complete(self):
        self._in_head = False
        self._cancel()
        super().on_headers_complete()

    def on_response_complete(self):
        super().on_response_complete()  # arms uvicorn's keep-alive timer: our idle timeout here
        self._head_state()

    # --------------------------------------------------------------------- the bounds

    def _head_state(self):
        """Waiting for a request's first byte, since now."""
        self._in_head, self._head_bytes, self._head_lines, self._tail = True, 0, 0, b""
        self._since = time.monotonic()

    def _count_head(self, data):
        """Count ``data`` against the header bounds; False if the connection was refused."""
        seen = self._tail + data
        end = seen.find(b"\r\n\r\n")
        head = seen if end < 0 else seen[: end + 4]
        if self._head_bytes == 0 and data:  # a request begins: from idle to the header timeout
            self._cancel()
            self._timer = self.loop.call_later(self.limits.header_s, self._expire, "header_timeout")
        self._head_bytes += len(head) - len(self._tail)
        self._head_lines += head.count(b"\n") - self._tail.count(b"\n")
        self._tail = seen[-3:]
        if self._head_bytes > self.limits.header_bytes:
            self._refuse(431, f"request headers: more than {self.limits.header_bytes} bytes", "header_bytes")
            return False
        if self._head_lines > self.limits.header_fields + 2:  # + the request line and the empty line
            self._refuse(
                431, f"request headers: more than {self.limits.header_fields} fields", "header_fields"
            )
            return False
        return True

    def _expire(self, reason):
        self._timer = None
        if self.transport.is_closing() or not self._in_head:
            return
        if reason == "header_timeout":
            self._refuse(408, f"request headers: not received within {self.limits.header_s:g} s", reason)
        else:
            self._close(reason)

    def _make_room(self):
        """Close the connection that has waited longest for a request (silent ones first) to
        make room for this one; 503 to this one when every other is busy with a request."""
        waiting = [
            c
            for c in self.connections
            if c is not self
            and not c.transport.is_closing()
            and getattr(c, "_in_head", False)
            and (c.cycle is None or c.cycle.response_complete)
        ]
        if not waiting:
            self._refuse(503, "the service holds as many connections as it may; try again", "full")
            return
        oldest = min(waiting, key=lambda c: (c._head_bytes > 0, c._since))
        oldest._close("shed")
        if oldest.transport.get_write_buffer_size() > 0:  # its answer unread: its slot freed now
            _reset(oldest.transport)

    def _send_deadline(self):
        """Abort the connection if its buffered answer is not read within ``send_s``."""
        if getattr(self, "_send_timer", None) is None:
            self._send_timer = self.loop.call_later(self.limits.send_s, self._stalled)

    def _closing(self):
        """After a close: bytes still buffered must be read within ``send_s`` (a close waits for them)."""
        if self.transport.is_closing() and self.transport.get_write_buffer_size() > 0:
            self._send_deadline()

    def _stalled(self):
        self._send_timer = None
        if self.closed is not None:
            self.closed("send_timeout")
        self._cancel()
        _reset(self.transport)

    def _cancel_send(self):
        timer, self._send_timer = getattr(self, "_send_timer", None), None
        if timer is not None:
            timer.cancel()

    def _cancel(self):
        timer, self._timer = getattr(self, "_timer", None), None
        if timer is not None:
            timer.cancel()

    def _close(self, reason):
        self._cancel()
        if self.closed is not None:
            self.closed(reason)
        if not self.transport.is_closing():
            self.transport.close()
        self._closing()

    def _refuse(self, status, message, reason):
        """Answer ``status`` with ``message`` as a JSON error, then close the connection."""
        body = ('{"error": "' + message + '"}').encode("ascii")
        head = (
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode("ascii")
        if not self.transport.is_closing():
            self.transport.write(STATUS_LINE[status] + head + body)
        self._close(reason)


def _reset(transport):
    """Abort the connection with a reset: close() would wait for the client to read, and the
    kernel would still hold what it buffered; a reset frees both and tells the client."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()
