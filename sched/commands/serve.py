"""`sched serve`: rank() as an HTTP service (docs/serve.md; optional extra ``serve``)."""

import ipaddress
import math
import os
import signal
import socket
import sys

from sched.errors import MissingExtraError, UsageError

#: Bytes read of a token file: a token is a line, far shorter.
MAX_TOKEN_BYTES = 4096


def register(sub):
    """The options in the order docs/serve.md's table lists them: where and to whom it answers,
    the decision log, then the limits a hostile or slow client meets."""
    s = sub.add_parser(
        "serve",
        help="rank() over HTTP: POST /v1/rank, GET /healthz, /readyz, /metrics (optional extra serve)",
    )
    _address_options(s)
    _decision_log_options(s)
    _limit_options(s)
    s.add_argument(
        "--log-level",
        dest="log_level",
        default="warning",
        choices=("debug", "info", "warning", "error"),
        help="uvicorn's log level (default warning; info logs every request)",
    )
    s.set_defaults(func=run)


def _address_options(s):
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0: any free port)")
    s.add_argument(
        "--token-file",
        dest="token_file",
        metavar="FILE",
        help="file holding the bearer token every request but /healthz must carry; without one "
        "the service binds to loopback addresses only",
    )


def _decision_log_options(s):
    s.add_argument(
        "--decision-log",
        dest="decision_log",
        metavar="FILE",
        help="append one JSON line per POST /v1/rank call to FILE (rotated by size)",
    )
    s.add_argument(
        "--decision-log-max-bytes",
        dest="log_max_bytes",
        type=int,
        default=64 * 1024**2,
        metavar="N",
        help="rotate the decision log before it grows past N bytes (default 64 MiB)",
    )
    s.add_argument(
        "--decision-log-backups",
        dest="log_backups",
        type=int,
        default=5,
        metavar="N",
        help="rotated decision logs kept: FILE.1 ... FILE.N (default 5)",
    )


def _limit_options(s):
    s.add_argument(
        "--deadline-ms",
        dest="deadline_ms",
        type=float,
        default=2000.0,
        metavar="MS",
        help="time budget of a call (plus its budget_ms with policy plan); past it the tuned rule answers, "
        "with fallback: true (default 2000)",
    )
    s.add_argument(
        "--read-timeout-s",
        dest="read_timeout_s",
        type=float,
        default=10.0,
        metavar="S",
        help="a request body that takes longer to arrive gets 408 (default 10)",
    )
    s.add_argument(
        "--send-timeout-s",
        dest="send_timeout_s",
        type=float,
        default=10.0,
        metavar="S",
        help="an answer the client has not read S seconds after it was sent is given up and the "
        "connection closed (default 10)",
    )
    s.add_argument(
        "--idle-timeout-s",
        dest="idle_timeout_s",
        type=float,
        default=5.0,
        metavar="S",
        help="a connection silent for S seconds, from its opening or its last answer, is closed (default 5)",
    )
    s.add_argument(
        "--header-timeout-s",
        dest="header_timeout_s",
        type=float,
        default=10.0,
        metavar="S",
        help="request headers not complete S seconds after their first byte get 408 (default 10)",
    )
    s.add_argument(
        "--max-header-bytes",
        dest="max_header_bytes",
        type=int,
        default=32 * 1024,
        metavar="N",
        help="request line and headers longer than N bytes get 431 (default 32768)",
    )
    s.add_argument(
        "--max-header-fields",
        dest="max_header_fields",
        type=int,
        default=100,
        metavar="N",
        help="requests with more than N header fields get 431 (default 100)",
    )
    s.add_argument(
        "--workers", type=int, default=4, metavar="N", help="threads running decisions at once (default 4)"
    )
    s.add_argument(
        "--max-connections",
        dest="max_connections",
        type=int,
        default=100,
        metavar="N",
        help="connections held at once; past it the one idle longest is closed, and when none is idle "
        "the new one gets 503 (default 100)",
    )


def read_token(path):
    """The bearer token in ``path``: one line of printable ASCII without spaces."""
    from sched import files

    class TokenFileError(UsageError):
        def __init__(self, message):
            super().__init__(f"--token-file: {message}")

    # a regular file, bounded: the token and its line end (LF or CRLF)
    data = files.read_bytes(path, TokenFileError, MAX_TOKEN_BYTES + 2)
    token = data.strip()
    if not token:
        raise UsageError(f"--token-file: {path}: empty (expected one line holding the token)")
    if len(token) > MAX_TOKEN_BYTES:
        raise UsageError(f"--token-file: {path}: a token of more than {MAX_TOKEN_BYTES} bytes")
    if not all(0x21 <= b <= 0x7E for b in token):
        raise UsageError(
            f"--token-file: {path}: the token must be one line of printable ASCII without spaces"
        )
    return token


def is_loopback(host):
    """Whether every address ``host`` names is a loopback address."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        raise UsageError(f"--host: cannot resolve {host!r}") from None
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def _positive(value, option):
    if not (value > 0 and math.isfinite(value)):
        raise UsageError(f"{option}: expected a finite number > 0, got {value}")


def run(args):
    token = read_token(args.token_file) if args.token_file else None
    if token is None and not is_loopback(args.host):
        raise UsageError(
            f"--host {args.host}: not a loopback address; without --token-file the service binds to "
            f"loopback addresses only (127.0.0.1, ::1)"
        )
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port: expected 0 to 65535, got {args.port}")
    _positive(args.deadline_ms, "--deadline-ms")
    _positive(args.read_timeout_s, "--read-timeout-s")
    _positive(args.send_timeout_s, "--send-timeout-s")
    _positive(args.idle_timeout_s, "--idle-timeout-s")
    _positive(args.header_timeout_s, "--header-timeout-s")
    _positive(args.max_header_bytes, "--max-header-bytes")
    _positive(args.max_header_fields, "--max-header-fields")
    _positive(args.workers, "--workers")
    _positive(args.max_connections, "--max-connections")
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError.of("sched serve", "serve", exc) from exc
    from sched.serve.connections import Limits
    from sched.serve.decision_log import DecisionLog
    from sched.serve.http import ServiceSettings, create_app, uvicorn_config

    log = DecisionLog(args.decision_log, args.log_max_bytes, args.log_backups) if args.decision_log else None
    config = os.path.abspath(args.config) if args.config else None
    settings = ServiceSettings(
        config=config,
        token=token,
        decision_log=log,
        deadline_ms=args.deadline_ms,
        read_timeout_s=args.read_timeout_s,
        workers=args.workers,
    )
    sock = _listen(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host

    def ready():
        # The address actually bound (with --port 0, the port the system chose), for whoever
        # started us; once the warm-up is done, so that the first call is answered at once.
        print(f"sched serve: listening on http://{shown}:{port}", file=sys.stderr, flush=True)

    limits = Limits(
        max_connections=args.max_connections,
        idle_s=args.idle_timeout_s,
        header_s=args.header_timeout_s,
        header_bytes=args.max_header_bytes,
        header_fields=args.max_header_fields,
        send_s=args.send_timeout_s,
    )
    config = uvicorn_config(
        create_app(settings, on_ready=ready),
        limits,
        log_level=args.log_level,
        access_log=args.log_level in ("debug", "info"),
        timeout_graceful_shutdown=grace_s(args),
    )
    if log is not None:
        # What log rotation tools send after moving the file away: begin a new one. (uvicorn
        # handles SIGINT and SIGTERM only; without this, SIGHUP would end the service.)
        signal.signal(signal.SIGHUP, lambda signum, frame: log.reopen())
    else:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    uvicorn.Server(config).run(sockets=[sock])


def grace_s(args):
    """Seconds SIGTERM waits for the calls in progress (docs/serve.md): a body's arrival, its
    deadline and the sending of its answer, plus a second; past it, they are cancelled."""
    return args.read_timeout_s + args.deadline_ms / 1000.0 + args.send_timeout_s + 1.0


def _listen(host, port):
    """A listening TCP socket on ``host``:``port``."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: without it, an answer's body waits for the client's
        # delayed acknowledgement of its headers (about 40 ms on Linux) on a kept-alive connection.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as exc:
        raise UsageError(f"--host {host} --port {port}: cannot listen: {exc.strerror or exc}") from None
    return sock
