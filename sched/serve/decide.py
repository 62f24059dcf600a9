"""A call of ``POST /v1/rank`` decided within its time budget (docs/serve.md), for
:mod:`sched.serve.http`.

A call is read and decided in two halves, ``sched.ranking.ranker.prepare`` (the tasks checked,
the policy chosen) and ``ranker.run``. A small body of a small queue is decided on the event
loop itself; any other on a worker thread, body parsing included, so that a big call never
stalls the loop (the compiled rollouts release the GIL). A call not answered within its time
budget (the service's ``deadline_ms`` from the request's start, plus the body's ``budget_ms``,
policy plan's own anytime budget) is answered by the tuned rule (ATC with the k tuned for the
call's GPUs, else config ``rules.atc_k``), or under the verdict plan by plan's base policy, with
``"fallback": true``: for a long queue under a learned policy or the planner that answer is
computed beside the policy from the start, so it is ready at the deadline. A policy that cannot
run because the service's own files are not usable (config, verdicts, policy file: a
``RankSetupError``) is answered the same way, never with a 4xx blaming the client.
"""

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from sched.ranking import ranker
from sched.ranking import request as rank_request
from sched.ranking.tasks import RankSetupError
from sched.serve import answers

log = logging.getLogger("sched.serve")

#: The share of the deadline that policy plan samples in when the call gives no budget_ms
#: (the rest: its tail, the base policy's rollout of the queue, and reading the body).
PLAN_SHARE = 0.5

#: Seconds kept at the end of a call's budget to write its answer (a 20,000-id order under
#: load): the fallback is chosen that much before the deadline, so that it arrives by it.
SEND_S = 0.03

#: Seconds a call whose deadline passed while its body arrived waits for a free worker (else 503).
GRACE_S = 0.02


class Unavailable(Exception):
    """The call cannot be answered now (503): no worker free within its budget, or the service's
    own config unreadable."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class Decider:
    """The decisions of the calls: on the loop or on worker threads (``pool``), the fallbacks
    (on ``spare``), each setup fault logged once. ``settings``: the service's
    (:class:`sched.serve.http.ServiceSettings`); ``run``: the second half of a decision."""

    def __init__(self, settings, run=None):
        self.settings, self.run = settings, run or ranker.run
        self.pool = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="sched-rank")
        self.spare = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sched-fallback")
        self._faults = set()  # setup faults already logged (once each)

    async def answer(self, body, received):
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
        raise Unavailable("the service cannot read its own config; see /readyz")

    def _fault(self, exc):
        """Log a setup fault for the operator, once per message (the client is not told paths)."""
        text = answers.one_line(exc)
        if text not in self._faults and len(self._faults) < 256:
            self._faults.add(text)
            log.error("sched serve: a policy cannot run, calls answered by ATC meanwhile: %s", text)


def _busy(budget_ms):
    return Unavailable(
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
