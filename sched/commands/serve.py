"""`sched serve`: rank() as an HTTP service (docs/serve.md; optional extra ``serve``)."""

import ipaddress
import os
import socket
import sys

from sched.errors import MissingExtraError, UsageError

#: Bytes read of a token file: a token is a line, far shorter.
MAX_TOKEN_BYTES = 4096


def register(sub):
    s = sub.add_parser(
        "serve",
        help="rank() over HTTP: POST /v1/rank, GET /healthz, /readyz, /metrics (optional extra serve)",
    )
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0: any free port)")
    s.add_argument(
        "--token-file",
        dest="token_file",
        metavar="FILE",
        help="file holding the bearer token every request but /healthz must carry; without one "
        "the service binds to loopback addresses only",
    )
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
        "--workers", type=int, default=4, metavar="N", help="threads running decisions at once (default 4)"
    )
    s.add_argument(
        "--max-connections",
        dest="max_connections",
        type=int,
        default=100,
        metavar="N",
        help="connections served at once; more get 503 (default 100)",
    )
    s.add_argument(
        "--log-level",
        dest="log_level",
        default="warning",
        choices=("debug", "info", "warning", "error"),
        help="uvicorn's log level (default warning; info logs every request)",
    )
    s.set_defaults(func=run)


def read_token(path):
    """The bearer token in ``path``: one line of printable ASCII without spaces."""
    from sched import files

    class TokenFileError(UsageError):
        def __init__(self, message):
            super().__init__(f"--token-file: {message}")

    data = files.read_bytes(path, TokenFileError, MAX_TOKEN_BYTES)  # a regular file, bounded
    token = data.strip()
    if not token:
        raise UsageError(f"--token-file: {path}: empty (expected one line holding the token)")
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
    if not value > 0:
        raise UsageError(f"{option}: expected a number > 0, got {value}")


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
    _positive(args.workers, "--workers")
    _positive(args.max_connections, "--max-connections")
    from sched.serve.decision_log import DecisionLog
    from sched.serve.http import ServiceSettings, create_app

    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError(
            f"sched serve needs the optional extra serve ({exc.name} is missing): "
            f"pip install 'render-queue-sched[serve]'"
        ) from exc

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
    # The address actually bound (with --port 0, the port the system chose), for whoever started us.
    print(f"sched serve: listening on http://{shown}:{port}", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        create_app(settings),
        log_level=args.log_level,
        access_log=args.log_level in ("debug", "info"),
        limit_concurrency=args.max_connections,
        timeout_keep_alive=5,
        server_header=False,
    )
    uvicorn.Server(config).run(sockets=[sock])


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
