"""An in-process fake Cuebot: a gRPC server on opencue-proto's generated servicers, implementing
just the calls ``sched opencue sync`` makes, with jobs the test controls.

Calls: CueInterface.GetSystemStats (pycue's connection check), JobInterface.GetJobs,
JobInterface.GetComments and JobInterface.SetPriority (recorded in ``set_calls`` and applied
to the job); ShowInterface.FindShow and GetSubscriptions, HostInterface.GetHosts (the show's
hosts: :meth:`FakeCuebot.add_host`, :meth:`FakeCuebot.subscribe`; none by default). Any other
call answers UNIMPLEMENTED, as the generated base servicer does.

Faults a test can ask for: :meth:`FakeCuebot.refuse` (the next calls of one method answer a
gRPC error, as an overloaded or restarting Cuebot does) and :meth:`FakeCuebot.vanish_after_listing`
(a job listed once, then gone: finished and archived, or killed, between the listing and the
calls that follow it), and :meth:`FakeCuebot.list_twice` (GetJobs lists a job twice).
"""

import threading
from concurrent import futures

import grpc
from opencue_proto import (
    comment_pb2,
    cue_pb2,
    cue_pb2_grpc,
    host_pb2,
    host_pb2_grpc,
    job_pb2,
    job_pb2_grpc,
    show_pb2,
    show_pb2_grpc,
    subscription_pb2,
)


class FakeCuebot:
    def __init__(self):
        self.jobs = {}  # id -> job_pb2.Job
        self.comments = {}  # id -> [comment_pb2.Comment]
        self.set_calls = []  # (job id, priority), in arrival order
        self.refusals = {}  # method name -> [gRPC status code of each next call to refuse]
        self.calls = {}  # method name -> calls received, refused ones included
        self.vanishing = set()  # ids of jobs GetJobs lists once, then removes
        self.twice = []  # ids of jobs GetJobs lists a second time, after the others
        self.hosts = []  # host_pb2.Host
        self.subscriptions = {}  # show name -> [allocation names]
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        cue_pb2_grpc.add_CueInterfaceServicer_to_server(_Cue(), self.server)
        job_pb2_grpc.add_JobInterfaceServicer_to_server(_Jobs(self), self.server)
        show_pb2_grpc.add_ShowInterfaceServicer_to_server(_Shows(self), self.server)
        host_pb2_grpc.add_HostInterfaceServicer_to_server(_Hosts(self), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop(grace=None)

    def add_job(
        self, name, show="film", waiting=10, avg_frame_s=60, priority=1, start_time=0, running=0, **kw
    ):
        jid = f"job-{len(self.jobs):04d}"
        stats = job_pb2.JobStats(waiting_frames=waiting, avg_frame_sec=avg_frame_s, running_frames=running)
        self.jobs[jid] = job_pb2.Job(
            id=jid,
            name=name,
            show=show,
            priority=priority,
            state=kw.pop("state", job_pb2.PENDING),
            start_time=start_time,
            job_stats=stats,
            **kw,
        )
        return jid

    def add_host(self, name, alloc="local.general", up=True, locked=False):
        """A host of allocation ``alloc`` (``up``: state UP, else DOWN; ``locked``: LOCKED, else OPEN)."""
        self.hosts.append(
            host_pb2.Host(
                id=f"host-{len(self.hosts):04d}",
                name=name,
                alloc_name=alloc,
                state=host_pb2.UP if up else host_pb2.DOWN,
                lock_state=host_pb2.LOCKED if locked else host_pb2.OPEN,
            )
        )

    def subscribe(self, show, alloc):
        """``show`` subscribes to allocation ``alloc``."""
        self.subscriptions.setdefault(show, []).append(alloc)

    def add_comment(self, jid, subject, message, timestamp=0):
        self.comments.setdefault(jid, []).append(
            comment_pb2.Comment(id=f"c{timestamp}", subject=subject, message=message, timestamp=timestamp)
        )
        self.jobs[jid].has_comment = True

    def refuse(self, method, code, times):
        """The next ``times`` calls of ``method`` (``GetJobs``, ``GetComments``, ``SetPriority``)
        answer ``code`` (a ``grpc.StatusCode``)."""
        self.refusals.setdefault(method, []).extend([code] * times)

    def list_twice(self, jid):
        """GetJobs lists the job a second time, after every other job."""
        self.twice.append(jid)

    def vanish_after_listing(self, jid):
        """The job is listed by the next GetJobs, then gone: later calls naming it answer NOT_FOUND."""
        self.vanishing.add(jid)

    def _enter(self, method, context):
        with self._lock:
            self.calls[method] = self.calls.get(method, 0) + 1
            queue = self.refusals.get(method)
            code = queue.pop(0) if queue else None
        if code is not None:
            context.abort(code, f"{method} refused by the test (Cuebot busy)")

    def priorities(self):
        return {j.name: j.priority for j in self.jobs.values()}


class _Cue(cue_pb2_grpc.CueInterfaceServicer):
    def GetSystemStats(self, request, context):
        return cue_pb2.CueGetSystemStatsResponse()


class _Jobs(job_pb2_grpc.JobInterfaceServicer):
    def __init__(self, cue):
        self.cue = cue

    def GetJobs(self, request, context):
        self.cue._enter("GetJobs", context)
        r = request.r
        with self.cue._lock:
            jobs = [
                j
                for j in self.cue.jobs.values()
                if (not r.shows or j.show in r.shows) and (r.include_finished or j.state != job_pb2.FINISHED)
            ]
            jobs += [self.cue.jobs[jid] for jid in self.cue.twice if self.cue.jobs[jid] in jobs]
            for jid in self.cue.vanishing:
                self.cue.jobs.pop(jid, None)
                self.cue.comments.pop(jid, None)
            self.cue.vanishing.clear()
            return job_pb2.JobGetJobsResponse(jobs=job_pb2.JobSeq(jobs=jobs))

    def GetComments(self, request, context):
        self.cue._enter("GetComments", context)
        with self.cue._lock:
            if request.job.id not in self.cue.jobs:
                context.abort(grpc.StatusCode.NOT_FOUND, f"no job {request.job.id}")
            seq = comment_pb2.CommentSeq(comments=self.cue.comments.get(request.job.id, []))
        return job_pb2.JobGetCommentsResponse(comments=seq)

    def SetPriority(self, request, context):
        self.cue._enter("SetPriority", context)
        with self.cue._lock:
            job = self.cue.jobs.get(request.job.id)
            if job is None:
                context.abort(grpc.StatusCode.NOT_FOUND, f"no job {request.job.id}")
            self.cue.set_calls.append((request.job.id, request.val))
            job.priority = request.val
        return job_pb2.JobSetPriorityResponse()

    def _change(self, name, request, context, **fields):
        """Pause, Resume, SetMaxCores: recorded in ``calls`` and applied to the job."""
        self.cue._enter(name, context)
        with self.cue._lock:
            job = self.cue.jobs.get(request.job.id)
            if job is None:
                context.abort(grpc.StatusCode.NOT_FOUND, f"no job {request.job.id}")
            for k, v in fields.items():
                setattr(job, k, v)

    def Pause(self, request, context):
        self._change("Pause", request, context, is_paused=True)
        return job_pb2.JobPauseResponse()

    def Resume(self, request, context):
        self._change("Resume", request, context, is_paused=False)
        return job_pb2.JobResumeResponse()

    def SetMaxCores(self, request, context):
        self._change("SetMaxCores", request, context, max_cores=request.val)
        return job_pb2.JobSetMaxCoresResponse()


class _Shows(show_pb2_grpc.ShowInterfaceServicer):
    def __init__(self, cue):
        self.cue = cue

    def FindShow(self, request, context):
        self.cue._enter("FindShow", context)
        return show_pb2.ShowFindShowResponse(show=show_pb2.Show(id=f"show-{request.name}", name=request.name))

    def GetSubscriptions(self, request, context):
        self.cue._enter("GetSubscriptions", context)
        subs = [
            subscription_pb2.Subscription(id=f"sub-{a}", name=f"{a}.{request.show.name}", allocation_name=a)
            for a in self.cue.subscriptions.get(request.show.name, [])
        ]
        seq = subscription_pb2.SubscriptionSeq(subscriptions=subs)
        return show_pb2.ShowGetSubscriptionResponse(subscriptions=seq)


class _Hosts(host_pb2_grpc.HostInterfaceServicer):
    def __init__(self, cue):
        self.cue = cue

    def GetHosts(self, request, context):
        self.cue._enter("GetHosts", context)
        allocs = set(request.r.allocs)
        hosts = [h for h in self.cue.hosts if not allocs or h.alloc_name in allocs]
        return host_pb2.HostGetHostsResponse(hosts=host_pb2.HostSeq(hosts=hosts))
