import os
import subprocess
import sys
from pathlib import Path

import pytest

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
        cwd=cwd or ROOT, capture_output=True, text=True, input=input,
    )
