import contextlib
import io
import itertools
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

# The OpenCue tests load gRPC into this process (tests/fake_cuebot.py, pycue's channel). Since
# grpcio 1.81 its post-fork handler starts a poller thread in a forked child, which aborts the
# child (epoll_wait: Bad file descriptor) when subprocess closes the fds before exec: a `sched`
# run with preexec_fn (tests/test_hostile_input.py's probe) failed 3 times in 150 here, 0 in
# 400 with fork support off (grpc/grpc#43055). Set before gRPC is first imported.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")  # its "skipping fork() handlers" notes otherwise
ORLIB = Path(os.environ.get("SCHED_ORLIB", ROOT.parent / "shared" / "orlib"))


@pytest.fixture(scope="session")
def cfg():
    from sched.config import validate_config

    return validate_config({}, "defaults")


@pytest.fixture(scope="session")
def orlib_dir():
    if not (ORLIB / "wt40.txt").exists():
        pytest.skip(f"OR-Library instances not found at {ORLIB}")
    return ORLIB


def run_cli(*args, cwd=None, input=None):
    """Run `python -m sched ARGS` in a subprocess; returns CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "sched", *map(str, args)],
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        input=input,
    )


def run_here(*args, cwd=None, input=None):
    """`sched ARGS` in this process (``sched.cli.main``), with the result of :func:`run_cli`
    (returncode, stdout, stderr; ``cwd`` and ``input`` as there), without the seconds a
    subprocess spends importing torch and loading numba's cache (most of a small command's time
    under load). For what a command computes or refuses; the entry points themselves run as
    subprocesses (tests/test_cli_simulate.py). Warnings logged go to pytest's log capture, not
    ``stderr``."""
    from sched import cli

    out, err = io.StringIO(), io.StringIO()
    argv = [str(a) for a in args]
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.chdir(cwd or ROOT))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        if input is not None:
            stack.enter_context(_stdin(input))
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _stdin(text):
    """``sys.stdin`` reading ``text`` (with a ``buffer`` of its bytes, as a real stdin has)."""
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8")
    try:
        yield
    finally:
        sys.stdin = saved


@pytest.fixture(scope="session")
def calibrated(tmp_path_factory):
    """The shipped config.yaml, with its calibration built in a temporary folder.

    config.yaml names results/calibration.json, which exists only once the
    workflow (or `sched calibrate`) has run; tests that run the command line
    with the shipped settings use this copy, so they pass from a fresh clone.
    Fields: config, calibration, figure (paths) and run (the `sched calibrate`
    CompletedProcess, on the config's bench logs: the example logs).
    """
    d = tmp_path_factory.mktemp("calibrated")
    cal = d / "calibration.json"
    r = run_here("calibrate", "--out", cal)
    assert r.returncode == 0, r.stderr
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    cfg["scenario"]["calibration"] = str(cal)
    cfg["root"] = str(ROOT)  # its other relative paths (bench logs, history, results): the repository's
    path = d / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return SimpleNamespace(config=path, calibration=cal, figure=d / "calibration.png", run=r)


@pytest.fixture
def cli(calibrated):
    """`sched` with the shipped config.yaml (its calibration built for the session)."""
    return lambda *args, **kw: run_here("--config", calibrated.config, *args, **kw)


#: A tiny PPO configuration: a few iterations on short scenarios (seconds).
TINY_TRAIN = dict(
    iterations=6,
    num_envs=4,
    num_steps=8,
    num_minibatches=2,
    update_epochs=2,
    tasks=60,
    eval_every=3,
    validation_scenarios=3,
    checkpoint_every=2,
    hidden=16,
    teacher_scenarios=3,
    teacher_samples=2,
    teacher_horizon=10,
    distill_epochs=1,
)


@pytest.fixture(scope="session")
def tiny_cfg(cfg):

    c = cfg.replace(scenario={"tasks": 60})
    return c


@pytest.fixture(scope="session")
def tiny_policy(background_runs):
    """A policy file trained for a few iterations on ``tiny_cfg`` (TINY_TRAIN, seed 3), and the
    training summary: trained in the background from the session's first test
    (tests/background_runs.py), so its readers run after the other tests."""
    return background_runs.result("tiny_policy")


#: The scenarios of the agreement tests of a learned policy (compiled scorer against torch's
#: batched rollout, busy machines): (scenario seed, machines, machine_free), on ``tiny_cfg``
#: with AGREEMENT_TASKS tasks. ``distinct_policy`` schedules each of them unlike ATC.
AGREEMENT_CASES = ((1, 1, None), (2, 2, [30.0, 0.0]), (3, 3, None))
AGREEMENT_TASKS = 120


def starts_unlike_atc(policy_file, arrays, machines=1, machine_free=None):
    """How many tasks start at another time under the policy's greedy rollout (the compiled
    decision) than under ATC with the policy's k."""
    import numpy as np

    from sched.learn.policy import kernel
    from sched.learn.policy import policy_file as PF
    from sched.sim import core

    pol = PF.load(policy_file)
    ((start, _, _),) = kernel.run(pol, [arrays], machines, machine_free)
    ((atc, _, _),) = core.simulate_batch(
        [arrays], "atc", machines=machines, k=pol.meta["atc_k"], machine_free=machine_free
    )
    return int((np.asarray(start) != np.asarray(atc)).sum())


@pytest.fixture(scope="session")
def distinct_policy(tmp_path_factory, tiny_policy, tiny_cfg):
    """A valid policy file whose schedules are not ATC's: use it where a test checks that two
    paths compute the same learned policy.

    ``tiny_policy`` barely moved from its start, which is ATC exactly (the ATC prior, a
    correction network whose output layer starts near 0): tests that compare two ways of
    running it would pass with a broken correction network. Here the output layer of the
    correction network is redrawn (standard deviation 3, a fixed seed), so the correction
    outweighs the ATC term often. The fixture checks that the policy differs from ATC on
    every one of AGREEMENT_CASES, and returns the file's path.
    """
    import torch

    from sched.data.scenario import generate, scenario_model
    from sched.learn.policy import policy_file as PF

    pol = PF.load(tiny_policy[0])
    head = pol.net.actor[-1]
    gen = torch.Generator().manual_seed(13)
    with torch.no_grad():
        head.weight.copy_(3.0 * torch.randn(head.weight.shape, generator=gen))
    out = tmp_path_factory.mktemp("distinct") / "politique.pt"
    PF.save(out, pol.net, pol.meta)
    for seed, machines, free in AGREEMENT_CASES:
        arrays = generate(scenario_model(tiny_cfg), seed, tasks=AGREEMENT_TASKS, machines=machines).arrays
        assert starts_unlike_atc(out, arrays, machines, free) > 0, (seed, machines, free)
    return out


def kept_most(current, lo, hi):
    """Brute force over every subset: the most jobs that can keep their present priority
    ``current`` (in rank order) with priorities strictly decreasing within [lo, hi] (the farm
    adapters' ``new_priorities`` must keep that many)."""
    n = len(current)
    for size in range(n, -1, -1):
        for keep in itertools.combinations(range(n), size):
            anchors = [(-1, hi + 1)] + [(k, current[k]) for k in keep] + [(n, lo - 1)]
            if all(lo <= current[k] <= hi for k in keep) and all(
                p - q >= b - a for (a, p), (b, q) in zip(anchors, anchors[1:])
            ):
                return size
    return 0


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into the test ids
def pytest_collection_modifyitems(session, config, items):
    """The tests that read the background workflow runs (tests/background_runs.py) go last, in
    their order: the other tests run while those runs work. Each reader joins the xdist group of
    the last-ending run it reads (tests/xdist_units.py: one unit of work a run, or one a reader for
    :data:`SOLO` runs)."""
    from tests.background_runs import ENDS, FIXTURES, SOLO

    def last_run(item):
        return max((f for f in FIXTURES if f in item.fixturenames), key=ENDS.index)

    reads = [bool(set(FIXTURES) & set(getattr(item, "fixturenames", ()))) for item in items]
    # the readers of the run that ends first go first (ENDS: the runs in the order they end), so
    # they run while the later runs still work, and only the last run's readers wait at the end
    readers = sorted((i for i, r in zip(items, reads) if r), key=lambda i: ENDS.index(last_run(i)))
    for item in readers:
        run = last_run(item)
        item.add_marker(pytest.mark.xdist_group(f"{'solo-' if run in SOLO else ''}{run}"))
    items[:] = [i for i, r in zip(items, reads) if not r] + readers


def pytest_collection_finish(session):
    """The background runs to start: those the selected tests read (after -k and -m deselect)."""
    from tests.background_runs import FIXTURES

    session.config.sched_background = set().union(
        *(set(FIXTURES) & set(getattr(item, "fixturenames", ())) for item in session.items)
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``--dist loadgroup`` (the test command): units of work by module, and one a background
    run's readers (tests/xdist_units.py)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.xdist_units import ModulesAndRuns

    return ModulesAndRuns(config, log)


@pytest.fixture(scope="session", autouse=True)
def background_runs(request, tmp_path_factory):
    """The workflow runs the selected tests read, started at the session's first test, in threads
    of the first worker (tests/background_runs.py); None when no selected test reads one."""
    wanted = getattr(request.config, "sched_background", set())
    if not wanted:
        yield None
        return
    from tests.background_runs import BackgroundRuns, shared_folder, starts_runs, yield_to_runs

    base = shared_folder(tmp_path_factory) / "background"
    base.mkdir(exist_ok=True)
    runs = BackgroundRuns(base, wanted, start=starts_runs())
    yield_to_runs()
    try:
        yield runs
    finally:
        runs.close()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """When each background workflow run ended: where the session's minutes go (issue 45)."""
    from tests.background_runs import timings

    folder = config._tmp_path_factory.getbasetemp() / "background"
    line = timings(folder) if folder.is_dir() else ""
    if line:
        terminalreporter.write_line(f"background workflow runs ended at: {line}")


@pytest.fixture(scope="session")
def bench_run(background_runs):
    """The small benchmark through the command line (tests/test_benchmark.py's ``tiny``), with its
    validated config (``cfg``)."""
    from sched.config import validate_config

    run = background_runs.result("bench_run")
    return {**run, "cfg": validate_config(yaml.safe_load(run["conf"].read_text()))}


@pytest.fixture(scope="session")
def workflow_runs(background_runs):
    """The small config's two workflow runs: -j1 on one CPU with the local executor, -j4 beside a
    CPU burner through a cluster executor (tests/test_workflow.py; the SLURM run of
    tests/test_slurm_local.py is compared with the first)."""
    return background_runs.result("workflow_runs")


@pytest.fixture(scope="session")
def studio_runs(background_runs):
    """Both projects built on with a robustness setting and the studio (tests/test_workflow.py)."""
    return background_runs.result("studio_runs")


@pytest.fixture(scope="session")
def robust_run(background_runs):
    """The local project built on with two robustness settings (tests/test_workflow.py)."""
    return background_runs.result("robust_run")


@pytest.fixture(scope="session")
def slurm_run(background_runs):
    """The small config through the SLURM profile (tests/test_slurm_local.py), or a skip saying
    why no cluster answers here."""
    return background_runs.result("slurm_run")
