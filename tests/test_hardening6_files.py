"""Issue 58 (hardening round 6), classes 4, 5, 6, 11, 13 and the policy-file item of 16.

4: a policy file's every record carries a CRC-32 that ``torch.load`` does not check: a flipped
bit in a stored weight is refused wherever the file is named (auto, ppo-<S>, a path, the CLI's
--policy-file, the benchmark's). 16: a folder or a device named as a policy file says so.
5: a verdict file whose fields disagree is refused and rank() falls back, saying why.
6: the studio's verdict is followed only when the fit's sources are the config's history now.
11: every file the project reads goes through the bounded, non-blocking reader (an AST scan of
sched/, and a FIFO and /dev/zero fed to each reader). 13: records are checked, where they are
read, for every field a later step uses.
"""

import ast
import hashlib
import json
import os
import struct
import threading
import zipfile
from pathlib import Path

import pytest

from sched import RankInputError, rank

from .conftest import ROOT, run_here
from .test_policy_file import write_policy
from .test_rank import NOW, conf, static_queue, winner, write_json

# --------------------------------------------------------------------------- class 4 and 16


def flip_weight_bit(src, dst):
    """``src``'s bytes with one bit flipped inside the data of its first stored tensor."""
    data = bytearray(Path(src).read_bytes())
    with zipfile.ZipFile(src) as z:
        info = next(i for i in z.infolist() if i.filename.endswith("/data/0"))
    off = info.header_offset
    name_len, extra_len = struct.unpack("<HH", data[off + 26 : off + 30])
    data[off + 30 + name_len + extra_len + 5] ^= 0x10
    Path(dst).write_bytes(bytes(data))
    return Path(dst)


@pytest.fixture
def flipped(tmp_path):
    from sched import layout

    good = write_policy(tmp_path / "good.pt")
    bad = tmp_path / layout.policy_file("1")  # the workflow's file of ppo-1, under the config's root
    bad.parent.mkdir(parents=True)
    flip_weight_bit(good, bad)
    import torch

    torch.load(bad, weights_only=True)  # torch itself reads it: only the CRC-32 tells
    return good, bad


def test_a_flipped_weight_bit_is_refused_wherever_the_file_is_named(tmp_path, flipped):
    from sched.learn.policy import policy_file as PF

    good, bad = flipped
    PF.load(good)
    with pytest.raises(PF.PolicyFileError, match=r"politique\.pt: damaged policy file: record .*data/0"):
        PF.load(bad)
    tasks = static_queue(seed=1, n=6)
    c = {**conf(tmp_path), "root": str(tmp_path)}
    calls = [
        dict(policy="ppo", policy_file=bad),
        dict(policy="ppo-1"),  # the workflow's file under the config's root
        dict(policy=str(bad)),
    ]
    for kw in calls:
        with pytest.raises(RankInputError, match="damaged policy file") as exc:
            rank(tasks, now=NOW, config=c, **kw)
        assert "\n" not in str(exc.value), kw
    # auto: the winner names it, and its sha256 is that of the flipped bytes (only the CRC tells)
    sha = hashlib.sha256(bad.read_bytes()).hexdigest()
    write_json(tmp_path / "winner.json", {**winner("ppo-1", policy_file=str(bad)), "policy_sha256": sha})
    with pytest.raises(RankInputError, match="damaged policy file"):
        rank(tasks, now=NOW, config=c)


def test_the_cli_refuses_a_flipped_policy_file_in_one_line(tmp_path, flipped):
    _, bad = flipped
    queue = tmp_path / "q.json"
    queue.write_text(json.dumps(static_queue(seed=1, n=4)))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps(conf(tmp_path)))
    r = run_here("--config", cfg, "rank", queue, "--policy-file", bad)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged policy file" in lines[0] and str(bad) in lines[0], r.stderr


def test_the_benchmark_and_plan_refuse_a_flipped_policy_file(flipped):
    from sched.evaluate.runs import schedule_scenarios
    from sched.learn.policy import policy_file as PF

    _, bad = flipped
    # the benchmark's scheduling of a learned policy (sched simulate --policy ppo, sched benchmark)
    with pytest.raises(PF.PolicyFileError, match="damaged"):
        schedule_scenarios([], "ppo", 1, policy_file=bad)
    with pytest.raises(PF.PolicyFileError, match="damaged"):
        PF.load_cached(bad)  # rank(), plan's base (sched.ranking.plan_rank)
    # every policy file load goes through policy_file.load: no other torch.load reads one
    loaders = [p for p in (ROOT / "sched").rglob("*.py") if "torch.load(" in p.read_text()]
    assert {p.name for p in loaders} <= {"policy_file.py", "checkpoint.py"}, loaders


def special_paths(tmp_path):
    """A folder, a device and a FIFO (with no writer) as a policy file."""
    fifo = tmp_path / "fifo.pt"
    os.mkfifo(fifo)
    (tmp_path / "folder.pt").mkdir()
    return {"folder": (tmp_path / "folder.pt", "is a folder"), "device": ("/dev/zero", "not a regular file"),
            "fifo": (fifo, "not a regular file")}  # fmt: skip


@pytest.mark.parametrize("kind", ["folder", "device", "fifo"])
def test_a_folder_or_device_as_a_policy_file_says_so_everywhere(tmp_path, kind):
    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.policies import parse_policy_files, resolve_policies
    from sched.learn.policy import policy_file as PF

    path, said = special_paths(tmp_path)[kind]
    tasks = static_queue(seed=1, n=4)
    c = conf(tmp_path)
    for kw in (dict(policy="ppo", policy_file=path), dict(policy=str(path))):
        with pytest.raises(RankInputError, match=said) as exc:
            rank(tasks, now=NOW, config=c, **kw)
        assert "not found" not in str(exc.value) and str(path) in str(exc.value)
    for load in (PF.load, PF.load_cached):
        with pytest.raises(PF.PolicyFileError, match=said):
            load(path)
    from sched.config import validate_config

    cfg = validate_config({}, "test")
    with pytest.raises(BenchmarkError, match=said):
        resolve_policies(cfg, ["ppo-1"], policy_files=parse_policy_files([f"ppo-1={path}"]))
    # auto: the winner names it
    write_json(tmp_path / "winner.json", winner("ppo-1", policy_file=str(path)))
    with pytest.raises(RankInputError, match=said):
        rank(tasks, now=NOW, config=c)


# --------------------------------------------------------------------------- class 5 and 13


@pytest.fixture
def queue():
    return static_queue(seed=5, n=30)


def by_rule(queue, c, name):
    return rank(queue, now=NOW, policy=name, config=c)


def held(chosen, best, deployed, **more):
    return {"days": 7, "chosen": chosen, "best_rule": best, "deployed": deployed, **more}


GRID = [{"atc_k": 1.0, "mean_twt_s": 3.0}, {"atc_k": 2.0, "mean_twt_s": 2.0}]
ONE_GPU = {"machines": 1, "speeds": None, "load": 0.85}

CONTRADICTIONS = [
    ("ppo-1 with rule fifo", winner("ppo-1", rule="fifo"), "rule"),
    ("fifo with rule edd", winner("fifo", rule="edd"), "rule"),
    ("atc-tuned with atc_k null", winner("atc-tuned", rule="atc"), "atc_k is null"),
    ("atc-tuned with rule edd", winner("atc-tuned", rule="edd", atc_k=0.5), "rule"),
    ("edd with a k", winner("edd", rule="edd", atc_k=0.5), "atc_k"),
    ("a rule with a policy file", winner("edd", rule="edd", policy_file="x.pt"), "policy_file"),
    ("ppo-1 with a k", winner("ppo-1", atc_k=0.5, policy_file="x.pt"), "atc_k"),
    ("an unknown policy", winner("magic", rule="edd"), "neither a rule"),
    (
        "a held-out record that contradicts policy",
        {**winner("edd", rule="edd"), "held_out": held("wmdd", "spt", False)},
        "held_out",
    ),
    (
        "a held-out record deployed its chosen, another runs",
        {**winner("edd", rule="edd"), "held_out": held("wmdd", "edd", True)},
        "held_out",
    ),
    (
        "held_out confirmed and deployed disagree",
        {**winner("edd", rule="edd"), "held_out": held("edd", "edd", True, confirmed=False)},
        "disagree",
    ),
    ("a policy file part over 255 bytes", winner("ppo-1", policy_file="p/" + "x" * 300 + ".pt"), "255"),
    ("a policy file of a NUL byte", winner("ppo-1", policy_file="a\0b.pt"), "NUL"),
]  # fmt: skip


@pytest.mark.parametrize("label, record, field", CONTRADICTIONS, ids=[c[0] for c in CONTRADICTIONS])
def test_a_winner_whose_fields_disagree_is_not_followed_and_rank_says_why(
    tmp_path, queue, label, record, field
):
    c = conf(tmp_path)
    write_json(tmp_path / "winner.json", record)
    table = rank(queue, now=NOW, explain=True, config=c)
    why = table.why.iloc[0]
    assert set(table.policy) == {"atc"}, (label, why)  # the fallback: ATC with config rules.atc_k
    assert table.id.tolist() == by_rule(queue, c, "atc")
    assert "winner.json" in why and field in why and "not followed" in why, why
    # with a tuned k for the GPUs: that one, saying why too
    write_json(
        tmp_path / "tuned.json", {"atc_k": 0.5, "setting": {"machines": 1, "speeds": None, "load": 0.85}}
    )
    d = rank(queue, now=NOW, explain=True, config=c)
    assert set(d.policy) == {"atc-tuned"} and "not followed" in d.why.iloc[0]
    # the service's readiness does not fail on it either (no OSError, no 500)
    from sched.ranking.ranker import readiness

    name, why = readiness(c)
    assert name == "atc-tuned" and "not followed" in why


def test_the_same_winner_agreeing_is_followed(tmp_path, queue):
    c = conf(tmp_path)
    write_json(
        tmp_path / "winner.json", {**winner("edd", rule="edd"), "held_out": held("wmdd", "edd", False)}
    )
    assert rank(queue, now=NOW, config=c) == by_rule(queue, c, "edd")
    write_json(tmp_path / "winner.json", winner("atc-tuned", rule="atc", atc_k=0.5))
    assert set(rank(queue, now=NOW, explain=True, config=c).policy) == {"atc-tuned"}


@pytest.mark.parametrize(
    "record, field",
    [
        ({"atc_k": 0.5, "rule": "edd"}, "rule"),
        ({"atc_k": 0.5, "grid": GRID}, "grid"),
        (
            {"atc_k": 0.5, "scenario": {"machines": 4, "load": 0.85, "tasks": 10},
             "setting": {"machines": 1, "speeds": None, "load": 0.85}},
            "machines",
        ),
    ],
)  # fmt: skip
def test_a_tuned_json_whose_fields_disagree_is_not_used(tmp_path, queue, record, field):
    c = conf(tmp_path)
    write_json(tmp_path / "tuned.json", {"setting": {"machines": 1, "speeds": None, "load": 0.85}, **record})
    table = rank(queue, now=NOW, explain=True, config=c)
    assert set(table.policy) == {"atc"} and field in table.why.iloc[0] and "tuned.json" in table.why.iloc[0]
    with pytest.raises(RankInputError, match="no tuned k"):
        rank(queue, now=NOW, policy="atc-tuned", config=c)


def test_simulate_plan_reads_winner_and_tuned_as_rank_does(tmp_path):
    from sched.config import validate_config
    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.policies import plan_spec, read_tuned

    write_json(tmp_path / "winner.json", winner("ppo-1", rule="fifo"))
    cfg = validate_config({"rank": {"winner": str(tmp_path / "winner.json")}, "plan": {"base": "auto"}}, "t")
    with pytest.raises(BenchmarkError, match="disagree"):
        plan_spec(cfg)
    (tmp_path / "winner.json").write_text('{"policy": "edd", "policy": "fifo", "rule": "edd"}')
    with pytest.raises(BenchmarkError, match="appears twice"):
        plan_spec(cfg)
    (tmp_path / "tuned.json").write_text('{"atc_k": 0.5, "atc_k": 0.7}')
    with pytest.raises(BenchmarkError, match="appears twice"):
        read_tuned(tmp_path / "tuned.json")


FIDELITY = {
    "format": None,  # filled from the module
    "days": 7,
    "streams": 4,
    "scenarios": 6,
    "scenario_warm_up_days": 1.0,
    "rules": ["fifo"],
    "reference": "fifo",
    "tau": {"streams": 0.6, "scenarios": 0.9},
    "threshold": 0.8,
    "lean_on_days": False,
    "best_rule": {},
}


@pytest.mark.parametrize(
    "change, field",
    [
        ({"threshold": None}, "threshold"),
        ({"threshold": float("nan")}, "threshold"),
        ({"streams": "4"}, "streams"),
        ({"reference": 7}, "reference"),
        ({"days": -1}, "days"),
        ({"lean_on_days": True}, "disagree"),
        ({"model": {"on": ["x"], "variants": [{"variant": "v"}]}}, "model"),
    ],
)
def test_a_fidelity_record_is_checked_for_every_field_its_readers_use(tmp_path, change, field):
    from sched.data.workload.fidelity import FORMAT, FidelityError, read_fidelity

    path = tmp_path / "fidelity.json"
    good = {**FIDELITY, "format": FORMAT}
    write_json(path, good)
    read_fidelity(path)
    record = {k: v for k, v in {**good, **change}.items() if v is not None}
    write_json(path, record)
    with pytest.raises(FidelityError, match=field) as exc:
        read_fidelity(path)
    assert "fidelity.json" in str(exc.value) and "\n" not in str(exc.value)


# --------------------------------------------------------------------------- class 6


def test_the_studio_verdict_is_not_followed_when_the_history_moved(tmp_path, queue):
    from .test_rank_settings import STUDIO_WORKLOAD, studio_verdict, verdict, with_history
    from .test_rank_settings import setting as farm

    verdict(tmp_path, None, "wmdd", "wmdd", where=farm(1))
    studio_verdict(tmp_path, "edd", "edd", held_out=held("edd", "edd", True), workload=STUDIO_WORKLOAD)
    c = with_history(tmp_path)
    edd, wmdd = by_rule(queue, c, "edd"), by_rule(queue, c, "wmdd")
    assert rank(queue, now=NOW, config=c) == edd
    # workload.history names another file; the fit (results/workload.json) is the old one
    (tmp_path / "other.csv").write_bytes((tmp_path / "h.csv").read_bytes())
    moved = {**c, "workload": {"history": ["other.csv"]}}
    assert rank(queue, now=NOW, config=moved) == wmdd
    why = rank(queue, now=NOW, explain=True, config=moved).why.iloc[0]
    assert "not of config workload.history now (other.csv)" in why and "not followed" in why
    # the same file, its bytes changed since the fit
    (tmp_path / "h.csv").write_bytes(b"id,submitted_at\n2,2024-06-04T00:00:00Z\n")
    assert rank(queue, now=NOW, config=c) == wmdd
    assert "bytes have changed" in rank(queue, now=NOW, explain=True, config=c).why.iloc[0]


# --------------------------------------------------------------------------- class 11

#: The places in sched/ that read a file without sched.files.read_bytes/read_text, each justified.
ALLOWED = {
    ("files.py", "open"): "the bounded reader and the atomic writer themselves",
    ("files.py", "ZipFile"): "write_npz writes a zip",
    ("history_io.py", "open"): "the history reader: streamed (gz), its own bound MAX_HISTORY_BYTES, "
    "a folder, pipe or device refused before it opens",
    ("history_io.py", "read_csv"): "chunks of the bounded history stream, not a file",
    ("run_record.py", "open"): "/proc/cpuinfo, a kernel file",
    ("config.py", "open"): "the package's own schema (config.schema.yaml), not an input",
    ("config.py", "safe_load"): "text already read by read_text (the config) or the schema",
    ("__init__.py", "open"): "the package's own version file",
    ("policy_file.py", "open"): "save() writes the policy file",
    ("policy_file.py", "ZipFile"): "read_checked: the bytes already read by read_bytes",
    ("policy_file.py", "load"): "torch.load of the bytes read_checked read and verified",
    ("checkpoint.py", "load"): "a training checkpoint: the trainer's own file, not a policy file",
    ("checkpoint.py", "ZipFile"): "a training checkpoint (see above)",
    ("train_log.py", "open"): "writes the training log",
    ("decision_log.py", "open"): "appends to the decision log",
    ("manifest.py", "open"): "hashes the workflow's outputs in blocks",
    ("teacher.py", "load"): "np.load of the bytes read_bytes read",
    ("files.py", "read_csv"): "pandas on bytes read_bytes read",
    ("json_input.py", "json.loads"): "the one JSON parser itself",
    ("yaml_input.py", "yaml.load"): "the one YAML parser itself, on text read_text read",
    (
        "request.py",
        "json.loads",
    ): "a request body (sched serve, sched rank), not a file: bounded by MAX_RANK_BYTES",
    # outside this helper's files; named so that a new one fails the test
    ("bench_logs.py", "json.loads"): "one JSON line of a bench log whose bytes read_bytes read",
    ("train_log.py", "pd.read_csv"): "the trainer's own log, resumed by the run that wrote it",
}

READERS = {"open", "read_text", "read_bytes", "load", "loads", "read_csv", "safe_load", "ZipFile", "fromfile"}


def _calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None
            yield node, name, owner


def test_every_file_read_goes_through_the_bounded_reader():
    """An AST scan of sched/: open(), Path.read_text/read_bytes, json.load(s) of a file,
    pd.read_csv, np.load, torch.load, yaml loads, zipfile and gzip opens: each in the
    allow-list with its reason, or through sched.files (files.read_bytes/read_text)."""
    found = []
    for path in sorted((ROOT / "sched").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node, name, owner in _calls(tree):
            if name not in READERS:
                continue
            if owner in ("files", "json_input") or (
                owner is None and name in ("read_text", "read_bytes", "read_csv")
            ):
                continue  # sched.files' own readers, imported by name
            if name == "loads" and owner == "json":
                if (path.name, "json.loads") not in ALLOWED:
                    found.append((path.name, "json.loads", node.lineno))
                continue
            if name == "load" and owner not in ("torch", "np", "json", "yaml"):
                continue
            if name == "open" and owner in ("os", "zf", "z", "gzip") and path.name == "files.py":
                continue
            if name == "open" and owner in ("z",):
                continue  # a member of a zip already in memory
            if owner == "os" and name == "open":
                if path.name in ("files.py", "decision_log.py"):
                    continue
            if name in ("read_text", "read_bytes") and owner in ("tmp",):
                continue
            if (path.name, name) in ALLOWED or (path.name, f"{owner}.{name}") in ALLOWED:
                continue
            found.append((path.name, f"{owner}.{name}" if owner else name, node.lineno))
    assert found == [], found


def test_json_is_parsed_through_json_input_in_these_readers():
    names = [
        "verdicts.py",
        "verdict_files.py",
        "policies.py",
        "fidelity_record.py",
        "workload.py",
        "calibration.py",
    ]
    for path in (ROOT / "sched").rglob("*.py"):
        if path.name in names:
            assert "json.loads(" not in path.read_text(), path


def fifo_with_no_writer(tmp_path, name):
    p = tmp_path / name
    os.mkfifo(p)
    return p


def _readers(tmp_path):
    """Each file-reading entry point reachable here: (name, reader(path), the error it raises)."""
    from sched.commands.rank import read_tasks as read_queue_input
    from sched.data.bench.calibration import CalibrationFileError, load_calibration
    from sched.data.workload.fidelity import FidelityError, read_fidelity
    from sched.data.workload.workload import WorkloadFileError, load_workload
    from sched.errors import UsageError
    from sched.evaluate.errors import BenchmarkError, ReportError
    from sched.evaluate.policies import read_tuned
    from sched.farms.task_times import TaskTimesError
    from sched.farms.task_times import _read as read_task_times
    from sched.learn.policy.policy_file import PolicyFileError
    from sched.learn.policy.policy_file import load as load_policy
    from sched.learn.search.teacher import TeacherLabelError, load_labels
    from sched.ranking.verdict_files import check_tuned, check_winner, read_verdict
    from sched.report.inputs import read_json
    from sched.verdict.candidacy import read_plan_run

    def plan_json(p):
        d = tmp_path / "planrun"
        d.mkdir(exist_ok=True)
        link = d / "plan.json"
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to(p)
        return read_plan_run(d)

    return [
        ("winner.json (rank)", lambda p: read_verdict(p, check_winner), RankInputError),
        ("tuned.json (rank)", lambda p: read_verdict(p, check_tuned), RankInputError),
        ("tuned.json (simulate --policy plan)", read_tuned, BenchmarkError),
        ("report verdicts", read_json, ReportError),
        ("fidelity.json", read_fidelity, FidelityError),
        ("calibration", load_calibration, CalibrationFileError),
        ("workload", load_workload, WorkloadFileError),
        ("policy file", load_policy, PolicyFileError),
        ("plan.json", plan_json, BenchmarkError),
        ("teacher labels", lambda p: load_labels([p]), TeacherLabelError),
        ("task times", lambda p: read_task_times(p, "farm", "queue"), TaskTimesError),
        ("sched rank FILE", lambda p: read_queue_input(str(p)), UsageError),
    ]


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_every_reader_refuses_a_fifo_and_a_device_without_hanging(tmp_path, special):
    for name, read, error in _readers(tmp_path):
        path = (
            fifo_with_no_writer(tmp_path, f"f-{abs(hash(name))}.json") if special == "fifo" else "/dev/zero"
        )
        outcome = {}

        def call(read=read, path=path, outcome=outcome):
            try:
                read(path)
                outcome["result"] = "read"
            except Exception as exc:  # noqa: BLE001
                outcome["result"] = exc

        t = threading.Thread(target=call, daemon=True)
        t.start()
        t.join(20)
        assert not t.is_alive(), f"{name}: hangs on a {special}"
        got = outcome["result"]
        assert isinstance(got, error), (name, got)
        assert "not a regular file" in str(got) and "\n" not in str(got), (name, got)


def test_the_plan_winner_read_by_simulate_is_bounded(tmp_path):
    from sched.config import validate_config
    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.policies import plan_spec

    fifo = fifo_with_no_writer(tmp_path, "winner.json")
    cfg = validate_config({"rank": {"winner": str(fifo)}, "plan": {"base": "auto"}}, "t")
    with pytest.raises(BenchmarkError, match="not a regular file"):
        plan_spec(cfg)
