import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
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
    r = run_cli("calibrate", "--out", cal)
    assert r.returncode == 0, r.stderr
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    cfg["scenario"]["calibration"] = str(cal)
    path = d / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return SimpleNamespace(config=path, calibration=cal, figure=d / "calibration.png", run=r)


@pytest.fixture
def cli(calibrated):
    """`sched` with the shipped config.yaml (its calibration built for the session)."""
    return lambda *args, **kw: run_cli("--config", calibrated.config, *args, **kw)


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
    import copy

    c = copy.deepcopy(cfg)
    c["scenario"]["tasks"] = 60
    return c


@pytest.fixture(scope="session")
def tiny_policy(tmp_path_factory, tiny_cfg):
    """A policy file trained for a few iterations, and the training summary."""
    from sched.learn.ppo import Args, train

    out = tmp_path_factory.mktemp("train") / "politique.pt"
    summary = train(tiny_cfg, Args(seed=3, **TINY_TRAIN), out, progress=False)
    return out, summary
