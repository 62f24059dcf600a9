"""What a careless or hostile user tries: each case ends in one line and exit status 2.

The probing campaign of issue 13, as tests. Each command runs in a
subprocess with a memory cap and a time limit, so a regression shows as a
failure here, not as a machine brought down.
"""

import resource
import subprocess
import sys

import pytest

from .conftest import ROOT

MEMORY_CAP = 2 * 1024**3  # bytes of address space a probed command may take
TIME_LIMIT = 120  # seconds


def _cap_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def probe(*args, cwd, input=None):
    """`sched ARGS` under the memory cap; returns (exit status, stdout, stderr)."""
    out = subprocess.run(
        [sys.executable, "-m", "sched", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        input=input,
        timeout=TIME_LIMIT,
        preexec_fn=_cap_memory,
    )
    return out.returncode, out.stdout, out.stderr


def assert_one_line_error(code, err, *needles):
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert len(lines[0]) < 400, lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]


BOMB = """\
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
calibration:
  bench: [*f,*f,*f,*f,*f,*f,*f,*f,*f]
"""


def test_yaml_bomb_is_refused_quickly(tmp_path):
    (tmp_path / "bomb.yaml").write_text(BOMB)
    code, _, err = probe("--config", "bomb.yaml", "scenario", "--seed", "1", cwd=tmp_path)
    assert_one_line_error(code, err, "bomb.yaml", "aliases")


@pytest.mark.parametrize(
    "body, field",
    [
        ("rules: {atc_k: .nan}", "rules.atc_k"),
        ("rules: {atc_k: .inf}", "rules.atc_k"),
        ("scenario: {estimate_noise_sigma: .nan}", "scenario.estimate_noise_sigma"),
        ("scenario: {due: {slack_s: [0, .inf]}}", "scenario.due.slack_s.1"),
        ("scenario: {load: .nan}", "scenario.load"),
        ("train: {learning_rate: -.inf}", "train.learning_rate"),
    ],
)
def test_non_finite_config_numbers_are_refused_naming_the_field(tmp_path, body, field):
    (tmp_path / "c.yaml").write_text(body + "\n")
    code, out, err = probe("--config", "c.yaml", "scenario", "--seed", "1", cwd=tmp_path)
    assert_one_line_error(code, err, "c.yaml", field, "finite")
    assert out == ""


def test_the_snakemake_side_refuses_non_finite_numbers_too(cfg):
    # the Snakefile runs check_semantics after the schema
    import copy

    from sched.config import ConfigError, check_semantics

    bad = copy.deepcopy(cfg)
    bad["rules"]["atc_k"] = float("nan")
    with pytest.raises(ConfigError, match=r"config: rules\.atc_k: must be a finite number"):
        check_semantics(bad, "config")


def test_a_huge_offending_value_is_quoted_short(tmp_path):
    (tmp_path / "c.yaml").write_text("scenario: {load: " + "x" * 5000 + "}\n")
    code, _, err = probe("--config", "c.yaml", "scenario", "--seed", "1", cwd=tmp_path)
    assert_one_line_error(code, err, "scenario.load")
    assert "x" * 100 not in err


def test_a_config_that_is_a_folder_or_unreadable_is_one_line(tmp_path):
    (tmp_path / "dir.yaml").mkdir()
    code, _, err = probe("--config", "dir.yaml", "scenario", "--seed", "1", cwd=tmp_path)
    assert_one_line_error(code, err, "dir.yaml")
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00rules")
    code, _, err = probe("--config", "bin.yaml", "scenario", "--seed", "1", cwd=tmp_path)
    assert_one_line_error(code, err, "bin.yaml")


def test_out_onto_a_read_only_file_is_refused_and_the_file_kept(tmp_path):
    keep = tmp_path / "keep.csv"
    keep.write_text("precious\n")
    keep.chmod(0o444)
    code, _, err = probe("scenario", "--seed", "1", "--out", keep, cwd=tmp_path)
    assert_one_line_error(code, err, "keep.csv", "read-only")
    assert keep.read_text() == "precious\n"
    assert keep.stat().st_mode & 0o777 == 0o444


def test_out_below_a_file_is_one_line(tmp_path):
    (tmp_path / "good.csv").write_text("x\n")
    code, _, err = probe("scenario", "--seed", "1", "--out", "good.csv/x.csv", cwd=tmp_path)
    assert_one_line_error(code, err, "good.csv")


def test_the_shipped_config_still_loads():
    from sched.config import load_config

    cfg = load_config(ROOT / "config.yaml")
    assert cfg["scenario"]["load"] > 0
