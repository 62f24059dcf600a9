"""``sched serve``: ``rank()`` over HTTP, as a Starlette application (docs/serve.md).

Routes: ``POST /v1/rank`` (the decision), ``GET /healthz`` (alive), ``GET /readyz``
(config and verdicts loaded, 503 with the reason otherwise) and ``GET /metrics``
(Prometheus text format). The guard around them (:class:`Guard`) checks the bearer
token before any body is read and counts every answer by status.

A call is read and decided in two halves, ``sched.ranking.ranker.prepare`` (the tasks checked,
the policy chosen) and ``ranker.run``. A small body of a small queue is decided on the event
loop itself; any other on a worker thread, body parsing included, so that a big call never
stalls the loop (the compiled rollouts release the GIL). A call not answered within its time
budget (the service's ``deadline_ms`` from the request's start, plus the body's ``budget_ms``,
policy plan's own anytime budget) is answered by the tuned rule (ATC with the k tuned for the
call's GPUs, else config ``rules.atc_k``), or under the verdict plan by plan's base policy, with
``"fallback": true``: for a long queue under a
learned policy or the planner that answer is computed beside the policy from the start, so it
is ready at the deadline. A policy that cannot run because the service's own files are not
usable (config, verdicts, policy file: a ``RankSetupError``) is answered the same way, never
with a 4xx blaming the client. The same input always gives the same order (a decision holds
no state of a call), whatever the number of concurrent clients, unless it falls back.
"""

# size: one request's path from the body to the answer and its log line, with both fallbacks
# (past the deadline, the service's own files unusable), is one piece to read: split, each half
# would need the other to make sense.

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from sched.errors import MissingExtraError
from sched.limits import MAX_RANK_BYTES
from sched.ranking import ranker
from sched.ranking import request as rank_request
from sched.ranking.tasks import RankInputError, RankSetupError
from sched.serve import answers
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

log = logging.getLogger("sched.serve")

#: The share of the deadline that policy plan samples in when the call gives no budget_ms
#: (the rest: its tail, the base policy's rollout of the queue, and reading the body).
PLAN_SHARE = 0.5

#: Seconds kept at the end of a call's budget to write its answer (a 20,000-id order under
#: load): the fallback is chosen that much before the deadline, so that it arrives by it.
SEND_S = 0.03

#: Seconds a call whose deadline passed while its body arrived waits for a free worker (else 503).
GRACE_S = 0.02


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


class _Unavailable(Exception):
    """The call cannot be answered now (503): no worker free within its budget, or the service's
    own config unreadable."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class Service:
    """The routes' work: decisions on the loop or on worker threads, the fallbacks, metrics and
    the decision log."""

    def __init__(self, settings, run=None, on_ready=None):
        self.settings, self.run, self.on_ready = settings, run or ranker.run, on_ready
        self.metrics = Metrics()
        self.pool = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="sched-rank")
        self.spare = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sched-fallback")
        self._faults = set()  # setup faults already logged (once each)

    async def rank(self, req):
        got = time.perf_counter()
        try:
            body = await _body(req, self.settings.read_timeout_s)
        except _Refused as exc:
            self._log(None, got, status=exc.status, error=exc.message)
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        digest = hashlib.sha256(body).hexdigest()
        try:
            asked, d, records, fell = await self._answer(body, got)
        except _Unavailable as exc:
            self._log(digest, got, status=503, error=exc.message)
            return JSONResponse({"error": exc.message}, status_code=503, headers={"Retry-After": "1"})
        except Exception as exc:  # the client's input (400, naming the field), else ours (500, logged)
            status, message = answers.refusal(exc)
            self._log(digest, got, status=status, error=message)
            return JSONResponse({"error": self._public(message)}, status_code=status)
        why = self._public(d.why)
        out = {"order": d.ids, "policy": d.policy, "why": why, "decision_id": uuid.uuid4().hex}
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

    # ----------------------------------------------------------------- the decision

    async def _answer(self, body, received):
        """(policy asked, Decision, explain records or None, None or why it fell back) of the
        call, within its budget from ``received`` (a ``time.perf_counter()``: when the request's
        headers were read, so that the budget is the one the client sees)."""
        if len(body) <= self.settings.inline_bytes:
            kw = rank_request.rank_body(body)
            if (
                len(kw["tasks"]) <= self.settings.inline_tasks
                and kw["policy"] != "plan"
                and not kw["explain"]
            ):
                inline = self._inline(kw, received)
                if inline is not None:
                    return inline
            return await self._threaded(kw, received)
        return await self._threaded(body, received)

    def _budget_ms(self, kw):
        # plan's budget_ms is its own (it answers within it, its tail aside); the deadline
        # guards the rest of the call, as it guards every call
        return self.settings.deadline_ms + (kw["budget_ms"] or 0.0)

    def _planned(self, kw):
        """``kw`` for ``prepare``: policy plan without a budget of its own samples within a share
        of the deadline (an anytime planner stops itself: the call is answered by plan, not by
        the fallback, and no worker is left sampling for seconds after the answer)."""
        if kw["policy"] != "plan" or kw["budget_ms"] is not None:
            return kw
        return {**kw, "budget_ms": PLAN_SHARE * self.settings.deadline_ms}

    def _inline(self, kw, received):
        """The call decided on the event loop: a rule's or a loaded policy's order of a few dozen
        tasks takes a fraction of a millisecond, less than the hand-over to a worker thread and
        back under load. None when its policy is not ready to run that fast (a policy file not
        loaded yet: that takes a second, on a worker thread)."""
        try:
            call = ranker.prepare(config=self.settings.config, **kw)
        except RankSetupError as exc:
            return self._setup_fallback(kw, exc)
        if not ranker.is_ready(call):
            return None
        try:
            d = self.run(call)
        except RankSetupError as exc:
            return self._fallback(call, kw, exc)
        budget_ms = self._budget_ms(kw)
        if (time.perf_counter() - received) * 1000.0 <= budget_ms:
            return kw["policy"], d, None, None
        return self._fallback(call, kw, budget_ms)  # cannot be interrupted: replaced once done

    async def _threaded(self, body, received):
        """The call read and decided on a worker thread, answered by the tuned rule at its deadline."""
        loop = asyncio.get_running_loop()
        started, parsed, prepared = (loop.create_future() for _ in range(3))

        def note(future, value):
            loop.call_soon_threadsafe(_settle, future, value)

        def work():
            note(started, True)
            kw = body if isinstance(body, dict) else rank_request.rank_body(body)
            note(parsed, kw)
            try:
                # plan's budget from the request's arrival: a wait for this worker is spent from it
                call = ranker.prepare(config=self.settings.config, started=received, **self._planned(kw))
            except RankSetupError as exc:
                return self._setup_fallback(kw, exc)
            spare = None
            if call.q.n > self.settings.speculate_tasks and not ranker.is_rule(call):
                spare = self.spare.submit(self._fallback, call, kw)
            note(prepared, (call, kw, spare))
            try:
                d = self.run(call)
            except RankSetupError as exc:
                return self._fallback(call, kw, exc)
            finally:
                if spare is not None:
                    spare.cancel()  # not begun yet: not needed (else it ends, unused or used)
            return kw["policy"], d, _records(d), None

        job = self.pool.submit(work)
        done = asyncio.wrap_future(job)
        if isinstance(body, dict):
            _settle(parsed, body)
        # the budget is known once the body is parsed; until then, the service's deadline (a
        # body that arrived after it still gets a moment to find a free worker)
        left = self.settings.deadline_ms / 1000.0 - (time.perf_counter() - received)
        await asyncio.wait({done, parsed}, timeout=max(left, GRACE_S), return_when=asyncio.FIRST_COMPLETED)
        if not parsed.done() and not done.done():
            if not started.done() and job.cancel():
                raise _busy(self.settings.deadline_ms)
            await asyncio.wait({done, parsed}, return_when=asyncio.FIRST_COMPLETED)  # parsing: bounded
        if not parsed.done():
            return done.result()  # the body was refused: its RankInputError
        budget_ms = self._budget_ms(parsed.result())
        left = budget_ms / 1000.0 - SEND_S - (time.perf_counter() - received)
        if left > 0:
            await asyncio.wait({done}, timeout=left)
        if done.done():
            return done.result()
        # Past the deadline: the tuned rule answers, from the queue the worker read.
        done.add_done_callback(_discard)
        if not started.done() and job.cancel():
            raise _busy(budget_ms)
        await asyncio.wait({done, prepared}, return_when=asyncio.FIRST_COMPLETED)
        if done.done():
            return done.result()
        call, kw, spare = prepared.result()
        if spare is None:
            spare = self.spare.submit(self._fallback, call, kw, budget_ms)
        rule = asyncio.wrap_future(spare)
        await asyncio.wait({done, rule}, return_when=asyncio.FIRST_COMPLETED)
        if rule.done() and not rule.cancelled():
            asked, d, records, fell = rule.result()
            why = f"{_late(budget_ms)}; {d.why}"
            return asked, d._replace(why=why), records, fell
        return done.result()

    def _fallback(self, call, kw, cause=None):
        """The prepared call answered by the tuned rule, or past its deadline under the verdict
        plan by plan's base policy (``ranker.fallback``). ``cause``: its budget in ms (it ran
        past it), a RankSetupError (its policy cannot run: the tuned rule), or None (computed
        ahead; the caller says why)."""
        late = not isinstance(cause, RankSetupError)
        d, how = ranker.fallback(call) if late else ranker.tuned_rule(call)
        answered = f"answered by {d.policy} ({how})"
        if isinstance(cause, RankSetupError):
            self._fault(cause)
            why, fell = f"fallback: {_cannot_run(kw)}; {answered}", "setup"
        else:
            fell = "base" if call.choice.plan is not None and call.choice.name == "plan" else "deadline"
            why = f"{_late(cause)}; {answered}" if cause is not None else answered
        d = d._replace(why=why)
        return kw["policy"], d, _records(d), fell

    def _setup_fallback(self, kw, exc):
        """The call whose policy cannot be chosen (the service's config or verdicts unusable)
        answered by ATC: on the config's k, else, the config itself unreadable, on the defaults'."""
        self._fault(exc)
        plain = {**kw, "policy": "atc", "budget_ms": None}
        for config in (self.settings.config, {}):
            try:
                call = ranker.prepare(config=config, **plain)
            except RankSetupError:
                continue
            d = ranker.run(call)
            k = call.choice.k
            src = "the default rules.atc_k" if config == {} else "config rules.atc_k"
            why = f"fallback: {_cannot_run(kw)}; answered by atc (k = {k:g}, {src})"
            d = d._replace(why=why)
            return kw["policy"], d, _records(d), "setup"
        raise _Unavailable("the service cannot read its own config; see /readyz")

    def _fault(self, exc):
        """Log a setup fault for the operator, once per message (the client is not told paths)."""
        text = answers.one_line(exc)
        if text not in self._faults and len(self._faults) < 256:
            self._faults.add(text)
            log.error("sched serve: a policy cannot run, calls answered by ATC meanwhile: %s", text)

    # ----------------------------------------------------------------- the other routes

    async def healthz(self, req):
        return JSONResponse({"alive": True})

    async def readyz(self, req):
        loop = asyncio.get_running_loop()
        try:
            policy, why = await loop.run_in_executor(
                self.spare, partial(ranker.readiness, self.settings.config)
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
                await loop.run_in_executor(self.pool, lambda c=call: self.run(c()))
        if self.on_ready is not None:
            self.on_ready()
        yield
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.spare.shutdown(wait=False, cancel_futures=True)
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


def _busy(budget_ms):
    return _Unavailable(
        f"the service is busy: no worker was free within the call's budget of {budget_ms:g} ms; try again"
    )


def _late(budget_ms):
    return f"fallback: the call ran past its time budget of {budget_ms:g} ms"


def _cannot_run(kw):
    return f"policy {kw['policy']!r} cannot run: the service's own files are not usable (see /readyz)"


def _records(d):
    """The explain rows of a decision (None without explain), built off the event loop."""
    if d.frame is None:
        return None
    from sched.ranking.explain import explain_records

    return explain_records(d.frame)


def _settle(future, value):
    if not future.done():
        future.set_result(value)


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
