"""The Prometheus metrics of ``sched serve`` (docs/serve.md lists them), on a registry of its own."""

import threading

from sched.errors import MissingExtraError

try:
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
except ImportError as exc:  # tests/test_extras.py checks the message
    raise MissingExtraError.of("sched serve", "serve", exc) from exc


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
            "sched_rank_fallbacks",
            "calls over their time budget, answered by the tuned rule (the verdict plan: by its base policy)",
            registry=r,
        )
        self.base_fallbacks = Counter(
            "sched_rank_plan_base_fallbacks",
            "calls under the verdict plan over their time budget, answered by plan's base policy "
            "(counted in sched_rank_fallbacks too)",
            registry=r,
        )
        self.setup_faults = Counter(
            "sched_rank_setup_faults",
            "calls whose policy could not run because the service's own files are not usable "
            "(config, verdicts, policy file), answered by ATC",
            registry=r,
        )
        self.log_failures = Counter(
            "sched_decision_log_failures", "decision-log records that could not be written", registry=r
        )
        self.closed = Counter(
            "sched_http_connections_closed",
            "connections closed or refused by the connection guard, by reason",
            ["reason"],
            registry=r,
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

    def connection_closed(self, reason):
        """The connection guard's callback (:func:`sched.serve.connections.protocol`)."""
        self.closed.labels(reason).inc()
