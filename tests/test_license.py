"""The LICENSE file is the license pyproject.toml declares."""

import tomllib

from .conftest import ROOT


def test_the_license_file_matches_pyproject():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    text = (ROOT / "LICENSE").read_text()
    assert text.splitlines()[0] == f"{declared} License"
    assert "Copyright (c) 2026 render-queue-sched contributors" in text
