"""A fake AWS Deadline Cloud queue, served two ways to ``sched deadline sync``:

* :func:`stub_sync` queues, on botocore's ``Stubber`` around a real ``boto3.client("deadline")``,
  the responses of one sync in the order the adapter calls (ListJobs pages, BatchGetJob,
  SearchTasks, BatchUpdateJob), each with the parameters it must be called with; the Stubber
  checks both against the installed botocore's service model;
* :class:`DeadlineServer`: an HTTP server on 127.0.0.1 answering the REST paths of those
  operations (``GET .../queues/{q}/jobs``, ``POST /2023-10-12/batch-get-job``,
  ``POST .../search/tasks``, ``PATCH /2023-10-12/batch-update-job``) with JSON bodies, for a
  sync through boto3's real transport, signing, serialisation and retries.

Both apply the priorities the adapter sets to the queue's jobs and record them in
``queue.updates`` ((job id, priority), in arrival order).

Repeats, as a service may answer them: ``queue.relisted`` (job ids ListJobs lists a second time,
after every job: on a later page when pages are small), ``queue.detailed_twice`` (BatchGetJob
answers their items twice), a Job's ``tasks_twice`` (SearchTasks lists each of its tasks twice).
"""

import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

FARM, QUEUE = "farm-" + "a" * 32, "queue-" + "b" * 32
#: The fields of a job summary that a BatchGetJob item has too (ours: the required ones)
ITEM_KEYS = (
    "jobId",
    "name",
    "lifecycleStatus",
    "lifecycleStatusMessage",
    "priority",
    "createdAt",
    "createdBy",
)


@dataclass
class Job:
    id: str
    name: str
    created: datetime
    waiting: int
    priority: int = 50
    #: run times of its succeeded tasks, seconds
    done_s: list = field(default_factory=list)
    running: int = 0
    status: str = "READY"
    lifecycle: str = "CREATE_COMPLETE"
    #: its targetTaskRunStatus (None: none given)
    target: str = None
    description: str = ""
    parameters: dict = field(default_factory=dict)
    #: SearchTasks lists each of its tasks twice
    tasks_twice: bool = False
    #: its maxWorkerCount (None: not given)
    max_workers: int = None

    def counts(self):
        c = {"READY": self.waiting, "RUNNING": self.running, "SUCCEEDED": len(self.done_s)}
        return {k: v for k, v in c.items() if v}

    def summary(self):
        return {
            "jobId": self.id,
            "name": self.name,
            "lifecycleStatus": self.lifecycle,
            "lifecycleStatusMessage": "",
            "priority": self.priority,
            "createdAt": self.created,
            "createdBy": "artist",
            "taskRunStatus": self.status,
            "taskRunStatusCounts": self.counts(),
            **({"targetTaskRunStatus": self.target} if self.target else {}),
            **({"maxWorkerCount": self.max_workers} if self.max_workers is not None else {}),
        }

    def item(self):
        out = {
            "farmId": FARM,
            "queueId": QUEUE,
            **{k: v for k, v in self.summary().items() if k in ITEM_KEYS},
        }
        if self.description:
            out["description"] = self.description
        if self.parameters:
            out["parameters"] = self.parameters
        return out

    def tasks(self):
        t0 = self.created + timedelta(minutes=5)
        return (2 if self.tasks_twice else 1) * [
            {
                "taskId": f"task-{self.id[4:]}-{k}",
                "stepId": "step-" + "c" * 32,
                "jobId": self.id,
                "queueId": QUEUE,
                "runStatus": "SUCCEEDED",
                "startedAt": t0,
                "endedAt": t0 + timedelta(seconds=s),
            }
            for k, s in enumerate(self.done_s)
        ]


class Queue:
    """The jobs of one queue, in the order ListJobs returns them."""

    def __init__(self):
        self.jobs, self.updates = {}, []
        #: fleet id -> (association status, workerCount): the queue's fleets (none by default)
        self.fleets = {}
        self.relisted, self.detailed_twice = [], set()
        self._lock = threading.Lock()

    def listing(self):
        """The jobs as ListJobs lists them: each in order, then those of ``relisted`` again."""
        return list(self.jobs.values()) + [self.jobs[j] for j in self.relisted]

    def items(self, wanted):
        """BatchGetJob's items of the jobs ``wanted`` (Jobs), those of ``detailed_twice`` twice."""
        return [j.item() for j in wanted for _ in range(2 if j.id in self.detailed_twice else 1)]

    def add(self, name, waiting=10, created=None, **kw):
        jid = f"job-{len(self.jobs):032x}"
        self.jobs[jid] = Job(jid, name, created or datetime(2027, 1, 15, tzinfo=UTC), waiting, **kw)
        return jid

    def priorities(self):
        return {j.name: j.priority for j in self.jobs.values()}

    def by_priority(self):
        return [j.name for j in sorted(self.jobs.values(), key=lambda j: -j.priority)]

    def apply(self, items):
        with self._lock:
            for it in items:
                self.updates.append((it["jobId"], it["priority"]))
                self.jobs[it["jobId"]].priority = it["priority"]

    def waiting(self):
        """The jobs the adapter reads in detail, in its order (by name, then id)."""
        ranked = [j for j in self.jobs.values() if j.waiting > 0 and j.status in ("READY", "RUNNING")]
        ranked = [j for j in ranked if j.lifecycle == "CREATE_COMPLETE" and j.target in (None, "READY")]
        return sorted(ranked, key=lambda j: (j.name, j.id))


def stub_fleets(stubber, queue):
    """Queue on ``stubber`` the fleet calls of a sync without --machines (ListQueueFleetAssociations,
    then GetFleet of each ACTIVE fleet)."""
    assoc = [
        {
            "queueId": QUEUE,
            "fleetId": f,
            "status": st,
            "createdAt": datetime(2027, 1, 1, tzinfo=UTC),
            "createdBy": "a",
        }
        for f, (st, _) in queue.fleets.items()
    ]
    stubber.add_response(
        "list_queue_fleet_associations", {"queueFleetAssociations": assoc}, {"farmId": FARM, "queueId": QUEUE}
    )
    for f, (st, n) in queue.fleets.items():
        if st == "ACTIVE":
            stubber.add_response("get_fleet", _fleet(f, n), {"farmId": FARM, "fleetId": f})


def _fleet(fleet_id, workers):
    return {
        "fleetId": fleet_id,
        "farmId": FARM,
        "displayName": fleet_id,
        "status": "ACTIVE",
        "minWorkerCount": 0,
        "maxWorkerCount": 1000,
        "workerCount": workers,
        "configuration": {
            "serviceManagedEc2": {
                "instanceCapabilities": {
                    "vCpuCount": {"min": 1},
                    "memoryMiB": {"min": 512},
                    "osFamily": "LINUX",
                    "cpuArchitectureType": "x86_64",
                },
                "instanceMarketOptions": {"type": "spot"},
            }
        },
        "roleArn": "arn:aws:iam::123456789012:role/fleet",
        "createdAt": datetime(2027, 1, 1, tzinfo=UTC),
        "createdBy": "admin",
    }


def stub_sync(stubber, queue, page=100, updates=0, measured=True, fleets=True):
    """Queue on ``stubber`` the responses of one sync of ``queue``: ListJobs pages of ``page``
    jobs, BatchGetJob, SearchTasks (none when not ``measured``: every job's task times known
    from the last sync), the fleet calls (``fleets``: a sync without --machines), and ``updates``
    BatchUpdateJob calls (their parameters are the
    adapter's choice: recorded and applied by :func:`record_updates`, not expected)."""
    jobs = queue.listing()
    for k in range(0, max(len(jobs), 1), page):
        params = {"farmId": FARM, "queueId": QUEUE, "maxResults": 100}
        if k:
            params["nextToken"] = f"page-{k}"
        body = {"jobs": [j.summary() for j in jobs[k : k + page]]}
        if k + page < len(jobs):
            body["nextToken"] = f"page-{k + page}"
        stubber.add_response("list_jobs", body, params)
    waiting = queue.waiting()
    for k in range(0, len(waiting), 100):
        ids = [{"farmId": FARM, "queueId": QUEUE, "jobId": j.id} for j in waiting[k : k + 100]]
        stubber.add_response(
            "batch_get_job",
            {"jobs": queue.items(waiting[k : k + 100]), "errors": []},
            {"identifiers": ids},
        )
    for j in waiting:
        if j.done_s and measured:
            params = {"farmId": FARM, "queueIds": [QUEUE], "jobId": j.id, "itemOffset": 0, "pageSize": 100}
            tasks = j.tasks()
            stubber.add_response("search_tasks", {"tasks": tasks, "totalResults": len(tasks)}, params)
    if fleets and waiting:  # a sync without --machines asks for the fleets' workers
        stub_fleets(stubber, queue)
    for _ in range(updates):
        stubber.add_response("batch_update_job", {"errors": []})


def record_updates(client, queue):
    """Apply each BatchUpdateJob the client makes to ``queue`` (its parameters, as the
    adapter gave them, before the Stubber answers)."""

    def hook(params, **_):
        queue.apply(params["jobs"])

    client.meta.events.register("before-parameter-build.deadline.BatchUpdateJob", hook)


def _json(value):
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    raise TypeError(type(value))


class DeadlineServer:
    """Deadline Cloud's REST paths for ``queue`` on 127.0.0.1 (a free port), in a thread.

    ``fail``: operation name -> [(status, error code), ...] answered, in turn, before the real
    answer; ``throttle``: operation name -> k, every k-th request throttled (429), as a service
    under load does; ``calls``: (operation,) of every request, in arrival order ((operation, job id) for
    SearchTasks)."""

    def __init__(self, queue, page=100):
        self.queue, self.page, self.fail, self.calls = queue, page, {}, []
        #: operation name -> k: every k-th request of it (the 1st, the k+1-th, ...) throttled (429)
        self.throttle, self._seen = {}, {}
        self._count = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())

    @property
    def url(self):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def calls_of(self, op):
        return [c for c in self.calls if c[0] == op]

    def answer(self, method, path, query, body):
        """(status, error code or None, JSON body) of one request."""
        base = f"/2023-10-12/farms/{FARM}/queues/{QUEUE}"
        if method == "GET" and path == base + "/jobs":
            return self._guard("ListJobs") or self._list(query)
        if method == "GET" and path.startswith("/2023-10-12/farms/") and path.endswith("/jobs"):
            return 404, "ResourceNotFoundException", {"message": "Resource not found: queue"}
        if method == "POST" and path == "/2023-10-12/batch-get-job":
            wanted = [self.queue.jobs[i["jobId"]] for i in body["identifiers"]]
            jobs = self.queue.items(wanted)
            return self._guard("BatchGetJob") or (200, None, {"jobs": jobs, "errors": []})
        if method == "POST" and path == f"/2023-10-12/farms/{FARM}/search/tasks":
            tasks = self.queue.jobs[body["jobId"]].tasks()
            found = (200, None, {"tasks": tasks, "totalResults": len(tasks)})
            return self._guard("SearchTasks", body["jobId"]) or found
        if method == "GET" and path == f"/2023-10-12/farms/{FARM}/queue-fleet-associations":
            assoc = [
                {"queueId": QUEUE, "fleetId": f, "status": st, "createdAt": datetime(2027, 1, 1, tzinfo=UTC),
                 "createdBy": "a"}
                for f, (st, _) in self.queue.fleets.items()
            ]  # fmt: skip
            return self._guard("ListQueueFleetAssociations") or (200, None, {"queueFleetAssociations": assoc})
        if method == "GET" and path.startswith(f"/2023-10-12/farms/{FARM}/fleets/"):
            f = path.rsplit("/", 1)[1]
            return self._guard("GetFleet") or (200, None, _fleet(f, self.queue.fleets[f][1]))
        if method == "PATCH" and path == "/2023-10-12/batch-update-job":
            denied = self._guard("BatchUpdateJob")
            if denied:
                return denied
            self.queue.apply(body["jobs"])
            return 200, None, {"errors": []}
        return 404, "UnknownOperationException", {"message": f"no route {method} {path}"}

    def _guard(self, op, job=None):
        self.calls.append((op,) if job is None else (op, job))
        with self._count:
            k = self._seen[op] = self._seen.get(op, -1) + 1
        if op in self.throttle and k % self.throttle[op] == 0:
            return 429, "ThrottlingException", {"message": "Rate exceeded (from the test's server)"}
        queued = self.fail.get(op) or []
        if queued:
            status, code = queued.pop(0)
            return status, code, {"message": f"{code} (from the test's server)"}
        return None

    def _list(self, query):
        jobs = self.queue.listing()
        start = int(query.get("nextToken", ["0"])[0])
        size = min(self.page, int(query.get("maxResults", ["100"])[0]))
        body = {"jobs": [j.summary() for j in jobs[start : start + size]]}
        if start + size < len(jobs):
            body["nextToken"] = str(start + size)
        return 200, None, body

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                url = urlparse(self.path)
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                status, code, out = server.answer(self.command, url.path, parse_qs(url.query), body)
                data = json.dumps(out, default=_json).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if code:
                    self.send_header("x-amzn-ErrorType", code)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = _serve

            def log_message(self, *args):
                pass

        return Handler


#: The AWS settings every run against the fake gets: fake keys (the server checks no signature),
#: no config or credentials file of this machine, no instance metadata, no proxy.
AWS = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "AWS_DEFAULT_REGION": "us-west-2",
    "AWS_EC2_METADATA_DISABLED": "true",
}
UNSET = (
    "AWS_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_MAX_ATTEMPTS",
    "AWS_RETRY_MODE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
)


def fake_aws_env(monkeypatch, tmp_path):
    """Set this process's AWS environment as a run against the fake needs it (:data:`AWS`, no
    file of this machine's, no proxy); returns the environment, for a subprocess."""
    import os

    env = {
        **AWS,
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for k in UNSET + tuple(k.lower() for k in UNSET if "PROXY" in k):
        monkeypatch.delenv(k, raising=False)
    return dict(os.environ)
