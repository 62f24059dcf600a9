"""``sched serve``: ``rank()`` over HTTP, as a Starlette application (docs/serve.md).

Routes: ``POST /v1/rank`` (the decision), ``GET /healthz`` (alive), ``GET /readyz``
(config and verdicts loaded, 503 with the reason otherwise) and ``GET /metrics``
(Prometheus text format). The guard around them (:class:`Guard`) checks the bearer
token before any body is read and counts every answer by status.

A call runs ``sched.serve.ranker.decide`` on a worker thread, so the event loop keeps
reading other requests (a small queue is decided on the loop itself: :meth:`Service._decision`).
A call not answered within its time budget (the service's ``deadline_ms``, plus the body's
``budget_ms``, policy plan's own anytime budget) is answered by the tuned rule (ATC with
the k tuned for the call's GPUs, else config ``rules.atc_k``) with ``"fallback": true``.
The same input always gives the same order (``decide`` holds no state of a call),
whatever the number of concurrent clients, unless it falls back.
"""

import asyncio
import contextlib
import hashlib
import hmac
import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from sched.errors import MissingExtraError
from sched.limits import MAX_RANK_BYTES
from sched.serve import request as rank_request
from sched.serve.tasks import RankInputError

try:
    from prometheus_client import (
        CONTENT_TYPE_LATEST,
        CollectorRegistry,
        Counter,
        Gauge,
        Histogram,
        generate_latest,
    )
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route
except ImportError as exc:  # tests/test_extras.py checks the message
    raise MissingExtraError(
        f"sched serve needs the optional extra serve ({exc.name} is missing): "
        f"pip install 'render-queue-sched[serve]'"
    ) from exc

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
    #: a call's time budget in milliseconds (plus its budget_ms, policy plan's own)
    deadline_ms: float = 2000.0
    #: longest time a request body may take to arrive, in seconds (then 408)
    read_timeout_s: float = 10.0
    #: threads running decisions at once (more calls wait for one)
    workers: int = 4
    #: calls of at most this many tasks (not plan, not explain) are decided on the event loop
    inline_tasks: int = 64


class Metrics:
    """The service's Prometheus metrics, on a registry of its own."""

    def __init__(self):
        self.registry = r = CollectorRegistry()
        self.requests = Counter(
            "sched_http_requests", "HTTP requests answered", ["path", "status"], registry=r
        )
        self.latency = Histogram(
            "sched_rank_latency_seconds",
            "POST /v1/rank: time from the body read to the answer",
            buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30),
            registry=r,
        )
        self.calls = Counter(
            "sched_rank_calls", "decisions answered, by the policy that ran", ["policy"], registry=r
        )
        self.fallbacks = Counter(
            "sched_rank_fallbacks", "calls over their time budget, answered by the tuned rule", registry=r
        )
        self.in_use = Gauge(
            "sched_rank_policy_in_use",
            "1 for the policy the last policy=auto call ran",
            ["policy"],
            registry=r,
        )
        self.switches = Counter(
            "sched_rank_policy_switches",
            "times policy auto ran another policy than the call before",
            registry=r,
        )
        self._auto = None
        self._lock = threading.Lock()

    def ran(self, asked, policy):
        self.calls.labels(policy).inc()
        if asked != "auto":
            return
        with self._lock:
            if policy == self._auto:
                return
            if self._auto is not None:
                self.in_use.labels(self._auto).set(0)
                self.switches.inc()
            self._auto = policy
            self.in_use.labels(policy).set(1)


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


def create_app(settings=None, decide=None):
    """The Starlette application (``decide``: the decision function, ``ranker.decide`` by default)."""
    service = Service(settings or ServiceSettings(), decide)
    app = Starlette(
        routes=[
            Route("/v1/rank", service.rank, methods=["POST"]),
            Route("/healthz", service.healthz, methods=["GET"]),
            Route("/readyz", service.readyz, methods=["GET"]),
            Route("/metrics", service.metrics_text, methods=["GET"]),
        ],
        lifespan=service.lifespan,
    )
    return Guard(app, service.settings.token, service.metrics)


class Service:
    """The routes' work: decisions on worker threads, the fallback, metrics and the decision log."""

    def __init__(self, settings, decide=None):
        from sched.serve import ranker

        self.settings, self.decide = settings, decide or ranker.decide
        self.metrics = Metrics()
        self.pool = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="sched-rank")
        self.spare = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sched-fallback")

    async def rank(self, req):
        got = time.perf_counter()
        try:
            body = await _body(req, self.settings.read_timeout_s)
        except _Refused as exc:
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        digest = hashlib.sha256(body).hexdigest()
        try:
            kw = rank_request.rank_body(body)
            # plan's budget_ms is its own (it answers within it, its tail aside); the deadline
            # guards the rest of the call, as it guards every call
            budget_ms = self.settings.deadline_ms + (kw["budget_ms"] or 0.0)
            d, fallback = await self._decision(kw, budget_ms)
        except RankInputError as exc:
            _log(self.settings, digest, got, error=str(exc))
            return JSONResponse({"error": _one_line(exc)}, status_code=400)
        out = {"order": d.ids, "policy": d.policy, "why": d.why, "decision_id": uuid.uuid4().hex}
        if fallback:
            out["fallback"] = True
            self.metrics.fallbacks.inc()
        if d.frame is not None:
            from sched.serve.explain import explain_records

            out["plan"] = explain_records(d.frame)
        self.metrics.latency.observe(time.perf_counter() - got)
        self.metrics.ran(kw["policy"], d.policy)
        _log(self.settings, digest, got, out=out)
        return Response(json.dumps(out, allow_nan=False), media_type="application/json")

    async def _decision(self, kw, budget_ms):
        """(Decision, fell back?) of the call, within its budget."""
        call = partial(self.decide, config=self.settings.config, **kw)
        fallen = partial(_fallback, self.decide, self.settings.config, kw, budget_ms)
        if len(kw["tasks"]) <= self.settings.inline_tasks and kw["policy"] != "plan" and not kw["explain"]:
            # On the event loop: a rule's or a policy's order of a few dozen tasks takes a fraction
            # of a millisecond, less than the hand-over to a worker thread and back under load.
            started = time.perf_counter()
            d = call()
            if (time.perf_counter() - started) * 1000.0 <= budget_ms:
                return d, False
            return fallen(), True
        loop = asyncio.get_running_loop()
        work = loop.run_in_executor(self.pool, call)
        try:
            return await asyncio.wait_for(asyncio.shield(work), budget_ms / 1000.0), False
        except TimeoutError:
            work.add_done_callback(_discard)
        return await loop.run_in_executor(self.spare, fallen), True

    async def healthz(self, req):
        return JSONResponse({"alive": True})

    async def readyz(self, req):
        from sched.serve.ranker import readiness

        loop = asyncio.get_running_loop()
        try:
            policy, why = await loop.run_in_executor(self.spare, partial(readiness, self.settings.config))
        except RankInputError as exc:
            return JSONResponse({"ready": False, "reason": _one_line(exc)}, status_code=503)
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
                warm = partial(self.decide, _WARM_UP, policy=policy, config=self.settings.config)
                await loop.run_in_executor(self.pool, warm)
        yield
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.spare.shutdown(wait=False, cancel_futures=True)
        if self.settings.decision_log is not None:
            self.settings.decision_log.close()


def _fallback(decide, config, kw, budget_ms):
    """The call's decision by the tuned rule (ATC with the tuned k, else config rules.atc_k)."""
    rule_kw = {**kw, "budget_ms": None}
    try:
        d = decide(config=config, **{**rule_kw, "policy": "atc-tuned"})
        how = d.why.split("; ", 1)[-1]  # where its k was tuned
    except RankInputError:  # no tuned k for these GPUs
        d = decide(config=config, **{**rule_kw, "policy": "atc"})
        how = "no tuned k for these GPUs, config rules.atc_k"
    why = f"fallback: the call ran past its time budget of {budget_ms:g} ms; answered by {d.policy} ({how})"
    return d._replace(why=why)


def _discard(future):
    """A decision that came too late: its result (or error) is dropped, unreported."""
    if not future.cancelled():
        future.exception()


class _Refused(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


async def _body(req, timeout_s):
    """The request body, refused (413, 408, 400) before it grows past the byte limit."""
    declared = req.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise _Refused(400, f"content-length: expected a number of bytes, got {declared[:40]!r}")
        if int(declared) > MAX_RANK_BYTES:
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


def _one_line(exc):
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _log(settings, digest, got, out=None, error=None):
    """One decision-log line for the call (nothing without --decision-log)."""
    if settings.decision_log is None:
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
        rec.update(status=400, error=_one_line(error))
    settings.decision_log.write(rec)
