"""The lock file (requirements.lock): every dependency at one exact version, and the one installed.

A fresh clone resolves the releases the lock names, so that a result depends on the commit, the
config and the inputs only (issue 45); these tests fail when an install drifts from it or when a
dependency is added to pyproject.toml without a line in the lock.
"""

import re
import sys
from importlib import metadata

import pytest

from .conftest import ROOT

LOCK = ROOT / "requirements.lock"
#: Installed by the venv itself (pip) or by the build (the project), never locked.
NOT_LOCKED = {"pip", "setuptools", "wheel", "render-queue-sched"}


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock():
    pins = {}
    for n, line in enumerate(LOCK.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+!-]*)", line)
        assert m, f"requirements.lock, line {n}: not NAME==VERSION: {line!r}"
        assert _canonical(m.group(1)) not in pins, f"requirements.lock, line {n}: {m.group(1)} twice"
        pins[_canonical(m.group(1))] = m.group(2)
    return pins


def test_every_line_pins_one_exact_version_and_torch_is_the_measured_one():
    pins = _lock()
    assert pins["torch"] == "2.13.0"
    for name in (
        "numpy",
        "numba",
        "llvmlite",
        "scipy",
        "pandas",
        "matplotlib",
        "snakemake",
        "pytest-benchmark",
    ):
        assert name in pins, name


def test_the_environment_is_the_lock():
    if sys.prefix == sys.base_prefix:
        pytest.skip("not in a virtual environment: the README's commands install one from the lock")
    pins = _lock()
    installed = {
        _canonical(d.metadata["Name"]): d.version for d in metadata.distributions() if d.metadata["Name"]
    }
    unlocked = sorted(set(installed) - set(pins) - NOT_LOCKED)
    assert unlocked == [], f"installed but not in requirements.lock (add them): {unlocked}"
    # the CPU build's local label (+cpu) is the same release as the lock's
    drift = {n: (pins[n], v) for n, v in installed.items() if n in pins and v.split("+")[0] != pins[n]}
    assert drift == {}, f"installed versions differ from requirements.lock (lock, installed): {drift}"


def test_the_readme_commands_install_from_the_lock():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Set up and run") :]
    commands = re.findall(r"```bash\n(.+?)\n```", section)[:2]
    assert len(commands) == 2
    for cmd in commands:
        assert "pip install -q -c requirements.lock -e '.[dev]'" in cmd
