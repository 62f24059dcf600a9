"""``sched serve``: ``rank()`` over HTTP, as a Starlette application (docs/serve.md).

Routes: ``POST /v1/rank`` (the decision), ``GET /healthz`` (alive), ``GET /readyz``
(config and verdicts loaded, 503 with the reason otherwise) and ``GET /metrics``
(Prometheus text format). The guard around them (:class:`Guard`) checks the bearer
token before any body is read and counts every answer by status.

A call's body is read within the byte limit and the read timeout (413, 408, 400), then decided
within its time budget by :mod:`sched.serve.decide` (the fallbacks past the deadline and when
the service's own files are unusable); its answer and its decision-log line are this module's.
The same input always gives the same order (a decision holds no state of a call), whatever the
number of concurrent clients, unless it falls back.
"""

import asyncio
import contextlib
import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from sched.errors import MissingExtraError
from sched.limits import MAX_RANK_BYTES
from sched.ranking import ranker
from sched.ranking import request as rank_request
from sched.ranking.tasks import RankInputError
from sched.serve import answers
from sched.serve.decide import Decider, Unavailable
from sched.serve.metrics import Metrics

try:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route
except ImportError as exc:  # tests/test_extras.py checks the message
    raise MissingExtraError.of("sched serve", "serve", exc) from exc

#: The warm-up call's queue (two tasks: the policy's decision runs once).
_WARM_UP = [
    {"id": "a", "estimate_s": 60, "weight": 1, "due": 60},
    {"id": "b", "estimate_s": 30, "weight": 2, "due": 90},
]

#: Paths the request counter names; any other is counted as "other" (bounded label values).
PATHS = ("/v1/rank", "/healthz", "/readyz", "/metrics")


@dataclass(frozen=True)
class ServiceSettings:
    """What ``sched serve``'s options set (docs/serve.md)."""

    #: config file (None: as ``rank()``: $SCHED_CONFIG, else ./config.yaml, else the defaults)
    config: str | None = None
    #: the bearer token every request but /healthz must carry (None: no authentication)
    token: bytes | None = None
    #: where each call's decision is logged (a :class:`~sched.serve.decision_log.DecisionLog`)
    decision_log: object = None
    #: a call's time budget in milliseconds, from the request's start (plus its budget_ms, plan's own)
    deadline_ms: float = 2000.0
    #: longest time a request body may take to arrive, in seconds (then 408)
    read_timeout_s: float = 10.0
    #: threads running decisions at once (more calls wait for one)
    workers: int = 4
    #: calls of at most this many tasks (a rule, or a learned policy already loaded; not plan,
    #: not explain) and bodies of at most ``inline_bytes`` are decided on the event loop
    inline_tasks: int = 64
    #: bodies longer than this are parsed on a worker thread, not on the event loop
    inline_bytes: int = 64 * 1024
    #: queues longer than this, under a learned policy or the planner, have the tuned rule's
    #: answer computed beside the policy from the start, ready if the deadline passes
    speculate_tasks: int = 2000


class Guard:
    """ASGI middleware: the bearer token (before any body is read) and the request counter."""

    def __init__(self, app, token, metrics):
        self.app, self.token, self.metrics = app, token, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"] if scope["path"] in PATHS else "other"

        async def counted(message):
            if message["type"] == "http.response.start":
                self.metrics.requests.labels(path, str(message["status"])).inc()
            await send(message)

        if self.token is not None and scope["path"] != "/healthz" and not self._authorised(scope):
            response = JSONResponse(
                {"error": "authorization: missing or wrong bearer token"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="sched"'},
            )
            return await response(scope, receive, counted)
        await self.app(scope, receive, counted)

    def _authorised(self, scope):
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                # compare_digest: the time taken does not tell how much of the token matched
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)
        return False


def create_app(settings=None, run=None, on_ready=None):
    """The ASGI application: the Starlette routes behind the :class:`Guard` (``run``: the
    second half of a decision, ``ranker.run`` by default; tests slow it down; ``on_ready()``:
    called once the warm-up is done, before the first request is served)."""
    service = Service(settings or ServiceSettings(), run, on_ready)
    app = Starlette(
        routes=[
            Route("/v1/rank", service.rank, methods=["POST"]),
            Route("/healthz", service.healthz, methods=["GET"]),
            Route("/readyz", service.readyz, methods=["GET"]),
            Route("/metrics", service.metrics_text, methods=["GET"]),
        ],
        lifespan=service.lifespan,
    )
    # No redirect from /v1/rank/ to /v1/rank: Starlette would build it from the client's Host header.
    app.router.redirect_slashes = False
    return Guard(app, service.settings.token, service.metrics)


def uvicorn_config(app, limits, **kw):
    """uvicorn's settings for ``app`` (:func:`create_app`'s) under the connection guard's
    ``limits`` (a :class:`sched.serve.connections.Limits`): the one place the command and the
    tests build the server from."""
    import uvicorn

    from sched.serve.connections import protocol

    return uvicorn.Config(
        app,
        http=protocol(limits, app.metrics.connection_closed),
        timeout_keep_alive=limits.idle_s,  # uvicorn's idle timer after an answer; ours before the first
        limit_concurrency=None,  # the guard's slots instead: idle connections give way
        server_header=False,
        **kw,
    )


class Service:
    """The routes' work: a call's body read, its decision (:class:`sched.serve.decide.Decider`)
    answered, metrics and the decision log."""

    def __init__(self, settings, run=None, on_ready=None):
        self.settings, self.on_ready = settings, on_ready
        self.decider = Decider(settings, run)
        self.metrics = Metrics()

    async def rank(self, req):
        got = time.perf_counter()
        try:
            body = await _body(req, self.settings.read_timeout_s)
        except _Refused as exc:
            self._log(None, got, status=exc.status, error=exc.message)
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        digest = hashlib.sha256(body).hexdigest()
        try:
            asked, d, records, fell = await self.decider.answer(body, got)
        except Unavailable as exc:
            self._log(digest, got, status=503, error=exc.message)
            return JSONResponse({"error": exc.message}, status_code=503, headers={"Retry-After": "1"})
        except Exception as exc:  # the client's input (400, naming the field), else ours (500, logged)
            status, message = answers.refusal(exc)
            self._log(digest, got, status=status, error=message)
            return JSONResponse({"error": self._public(message)}, status_code=status)
        why = self._public(d.why)
        out = {"order": d.ids, "policy": d.policy, "why": why, "decision_id": uuid.uuid4().hex}
        if d.limits is not None:  # a farm verdict's cap: each job's limit, in the order's order
            out["limits"] = [d.limits[i] for i in d.ids]
        if fell is not None:
            out["fallback"] = True
            (self.metrics.setup_faults if fell == "setup" else self.metrics.fallbacks).inc()
            if fell == "base":
                self.metrics.base_fallbacks.inc()
        if records is not None:
            out["plan"] = answers.public_records(records, answers.roots(self.settings.config))
        self.metrics.latency.observe(time.perf_counter() - got)
        self.metrics.ran(asked, d.policy)
        self._log(digest, got, out={**out, "why": d.why})  # the operator's log: paths whole
        return Response(json.dumps(out, allow_nan=False), media_type="application/json")

    async def healthz(self, req):
        return JSONResponse({"alive": True})

    async def readyz(self, req):
        loop = asyncio.get_running_loop()
        try:
            policy, why = await loop.run_in_executor(
                self.decider.spare, partial(ranker.readiness, self.settings.config)
            )
        except RankInputError as exc:
            reason = self._public(answers.one_line(exc))
            return JSONResponse({"ready": False, "reason": reason}, status_code=503)
        return JSONResponse({"ready": True, "policy": policy, "why": why})

    async def metrics_text(self, req):
        return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @contextlib.asynccontextmanager
    async def lifespan(self, app):
        # One small decision before the first call: loads the config, the verdicts and the
        # compiled code, so that the first client does not wait for them (a bad config is
        # /readyz's to report, not a reason not to start).
        loop = asyncio.get_running_loop()
        for policy in ("auto", "plan"):  # plan: its compiled code and its pool of sampled futures
            with contextlib.suppress(RankInputError):
                call = partial(ranker.prepare, _WARM_UP, policy=policy, config=self.settings.config)
                await loop.run_in_executor(self.decider.pool, lambda c=call: self.decider.run(c()))
        if self.on_ready is not None:
            self.on_ready()
        yield
        self.decider.pool.shutdown(wait=False, cancel_futures=True)
        self.decider.spare.shutdown(wait=False, cancel_futures=True)
        if self.settings.decision_log is not None:
            self.settings.decision_log.close()

    def _public(self, text):
        """``text`` without the server's absolute paths (:func:`sched.serve.answers.public`)."""
        return answers.public(text, answers.roots(self.settings.config))

    def _log(self, digest, got, out=None, status=None, error=None):
        """One decision-log line for the call (nothing without --decision-log); a line that
        cannot be written is counted, and the call answered all the same."""
        dlog = self.settings.decision_log
        if dlog is None:
            return
        rec = {
            "decision_id": out["decision_id"] if out else None,
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "input_sha256": digest,
            "latency_ms": round((time.perf_counter() - got) * 1000.0, 3),
        }
        if out is not None:
            rec.update(
                order=out["order"], policy=out["policy"], why=out["why"], fallback=out.get("fallback", False)
            )
        else:
            rec.update(status=status, error=error)
        if not dlog.write(rec):
            self.metrics.log_failures.inc()


class _Refused(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


async def _body(req, timeout_s):
    """The request body, refused (413, 408, 400) before it grows past the byte limit."""
    declared = req.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()):
            raise _Refused(400, f"content-length: expected a number of bytes, got {declared[:40]!r}")
        if len(declared) > 18 or int(declared) > MAX_RANK_BYTES:  # (int() refuses 4,301 digits)
            raise _Refused(413, rank_request.too_large("request body"))
    chunks, size = [], 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in req.stream():
                size += len(chunk)
                if size > MAX_RANK_BYTES:
                    raise _Refused(413, rank_request.too_large("request body"))
                chunks.append(chunk)
    except TimeoutError:
        raise _Refused(408, f"request body: not received within {timeout_s:g} s") from None
    except ClientDisconnect:
        raise _Refused(400, "request body: the client closed the connection") from None
    return b"".join(chunks)
