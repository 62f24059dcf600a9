"""The README's two set-up commands are the ones CI and users run."""

import re

from .conftest import ROOT


def _commands():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Set up and run") :]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_readme_has_main_and_test_commands_with_venv_install():
    main, tests = _commands()[:2]
    for cmd in (main, tests):
        assert cmd.startswith("python3 -m venv .venv && .venv/bin/pip install")
    assert "pytest" in tests and "pytest" not in main


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text()
    assert _commands()[1] in ci
