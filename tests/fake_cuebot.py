"""An in-process fake Cuebot: a gRPC server on opencue-proto's generated servicers, implementing
just the calls ``sched opencue sync`` makes, with jobs the test controls.

Calls: CueInterface.GetSystemStats (pycue's connection check), JobInterface.GetJobs,
JobInterface.GetComments and JobInterface.SetPriority (recorded in ``set_calls`` and applied
to the job). Any other call answers UNIMPLEMENTED, as the generated base servicer does.
"""

import threading
from concurrent import futures

import grpc
from opencue_proto import comment_pb2, cue_pb2, cue_pb2_grpc, job_pb2, job_pb2_grpc


class FakeCuebot:
    def __init__(self):
        self.jobs = {}  # id -> job_pb2.Job
        self.comments = {}  # id -> [comment_pb2.Comment]
        self.set_calls = []  # (job id, priority), in arrival order
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        cue_pb2_grpc.add_CueInterfaceServicer_to_server(_Cue(), self.server)
        job_pb2_grpc.add_JobInterfaceServicer_to_server(_Jobs(self), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop(grace=None)

    def add_job(self, name, show="film", waiting=10, avg_frame_s=60, priority=1, start_time=0, **kw):
        jid = f"job-{len(self.jobs):04d}"
        stats = job_pb2.JobStats(waiting_frames=waiting, avg_frame_sec=avg_frame_s)
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

    def add_comment(self, jid, subject, message, timestamp=0):
        self.comments.setdefault(jid, []).append(
            comment_pb2.Comment(id=f"c{timestamp}", subject=subject, message=message, timestamp=timestamp)
        )
        self.jobs[jid].has_comment = True

    def priorities(self):
        return {j.name: j.priority for j in self.jobs.values()}


class _Cue(cue_pb2_grpc.CueInterfaceServicer):
    def GetSystemStats(self, request, context):
        return cue_pb2.CueGetSystemStatsResponse()


class _Jobs(job_pb2_grpc.JobInterfaceServicer):
    def __init__(self, cue):
        self.cue = cue

    def GetJobs(self, request, context):
        r = request.r
        with self.cue._lock:
            jobs = [
                j
                for j in self.cue.jobs.values()
                if (not r.shows or j.show in r.shows) and (r.include_finished or j.state != job_pb2.FINISHED)
            ]
            return job_pb2.JobGetJobsResponse(jobs=job_pb2.JobSeq(jobs=jobs))

    def GetComments(self, request, context):
        seq = comment_pb2.CommentSeq(comments=self.cue.comments.get(request.job.id, []))
        return job_pb2.JobGetCommentsResponse(comments=seq)

    def SetPriority(self, request, context):
        with self.cue._lock:
            job = self.cue.jobs.get(request.job.id)
            if job is None:
                context.abort(grpc.StatusCode.NOT_FOUND, f"no job {request.job.id}")
            self.cue.set_calls.append((request.job.id, request.val))
            job.priority = request.val
        return job_pb2.JobSetPriorityResponse()
