"""What a careless or hostile user tries: each case ends in one line and exit status 2.

The probing campaign of issue 13, as tests. Each command runs in a
subprocess with a memory cap and a time limit, so a regression shows as a
failure here, not as a machine brought down.
"""

import os
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
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # this checkout's package, from any folder
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

    from sched.config import ConfigError, check_semantics

    bad = cfg.to_dict()
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


# ------------------------------------------------------------------ scenario and bench files, simulate

SCENARIO_HEADER = "id,kind,arrival_s,duration_s,weight,due_s\n"


def _simulate_file(tmp_path, name, text):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return probe("simulate", "--policy", "atc", "--scenario", name, cwd=tmp_path)


@pytest.mark.parametrize(
    "text, needles",
    [
        # every row one field longer: pandas took `id` as the index and exited 0
        (SCENARIO_HEADER + "a,image,0,10,1,20,30\nb,image,0,10,1,20,30\n", ["row 1 (line 2)", "7 fields"]),
        # the ragged row after a blank line and a quoted id is on line 6
        (
            SCENARIO_HEADER
            + 'a,image,0,10,1,20\n\nb,image,0,10,1,20\n"c d",image,0,10,1,20\ne,image,0,10,1,20,30\n',
            ["row 4 (line 6)", "7 fields", "header (line 1) has 6"],
        ),
        # a quoted id over two lines: a record is one line (issue 58)
        (
            SCENARIO_HEADER + 'a,image,0,10,1,20\n\nb,image,0,10,1,20\n"c\nd",image,0,10,1,20\n',
            ["row 3 (line 5)", "a quoted field spans lines"],
        ),
        (SCENARIO_HEADER.rstrip() + ",id\na,image,0,10,1,20,x\n", ["column 'id' appears twice"]),
        (SCENARIO_HEADER.rstrip() + ",start_s\na,image,0,10,1,20,7\n", ["'start_s'", "schedule"]),
        (SCENARIO_HEADER + "a ,image,0,10,1,20\na,image,5,10,1,20\n", ["row 2 (line 3)", "duplicate id 'a'"]),
        (SCENARIO_HEADER + "a,image,0,1e308,1,20\nb,image,0,1e308,1,20\n", ["row 1 (line 2)", "duration_s"]),
        (SCENARIO_HEADER + "a,image,0,10,1e300,20\n", ["row 1 (line 2)", "weight"]),
        (SCENARIO_HEADER + "a,image,0,10,1,20\n" + "b,image,0,10,1," + "9" * 5000 + "\n", ["due_s"]),
    ],
)
def test_misshapen_or_absurd_scenario_files_are_one_line(tmp_path, text, needles):
    code, out, err = _simulate_file(tmp_path, "s.csv", text)
    assert_one_line_error(code, err, "s.csv", *needles)
    assert out == "" and "9" * 100 not in err


def test_unreadable_scenarios_are_one_line_naming_them(tmp_path):
    import os

    (tmp_path / "dir.csv").mkdir()
    code, _, err = probe("simulate", "--policy", "atc", "--scenario", "dir.csv", cwd=tmp_path)
    assert_one_line_error(code, err, "dir.csv", "folder")
    code, _, err = _simulate_file(tmp_path, "junk.csv", b"\xff\xfe\x00\x01\x80\x00junk\x00")
    assert_one_line_error(code, err, "junk.csv", "UTF-8")
    os.mkfifo(tmp_path / "fifo.csv")  # nobody writes it: refused at once, not waited on
    code, _, err = probe("simulate", "--policy", "atc", "--scenario", "fifo.csv", cwd=tmp_path)
    assert_one_line_error(code, err, "fifo.csv", "not a regular file")


def test_unreadable_bench_logs_are_one_line_naming_them(tmp_path):
    import os

    (tmp_path / "dir.csv").mkdir()
    (tmp_path / "junk.jsonl").write_bytes(b"\xff\xfe\x00\x01\x80junk")
    os.mkfifo(tmp_path / "fifo.csv")
    (tmp_path / "twice.csv").write_text("kind,duration_s,kind\nimage,3,video\n")
    for name, needle in (
        ("dir.csv", "folder"),
        ("junk.jsonl", "UTF-8"),
        ("fifo.csv", "not a regular file"),
        ("twice.csv", "column 'kind' appears twice"),
    ):
        code, _, err = probe("calibrate", name, "--out", "cal.json", cwd=tmp_path)
        assert_one_line_error(code, err, name, needle)
    assert not (tmp_path / "cal.json").exists()


@pytest.mark.parametrize(
    "args, needles",
    [
        (["simulate", "--policy", "atc", "--seed", "1", "--machines", "1000000000"], ["--machines", "10000"]),
        (["scenario", "--seed", "1", "--machines", "1000000000"], ["--machines", "10000"]),
        (["scenario", "--seed", "1", "--tasks", "1000000000000"], ["--tasks", "1000000"]),
        (["scenario", "--seed", "1", "--tasks", "0"], ["--tasks", ">= 1"]),
        (["scenario", "--seed", "1", "--load", "inf"], ["--load", "finite"]),
        (["simulate", "--policy", "atc", "--seed", "1", "--atc-k", "inf"], ["--atc-k", "finite"]),
    ],
)
def test_sizes_past_the_limits_on_the_command_line_are_one_line(tmp_path, args, needles):
    code, out, err = probe(*args, cwd=tmp_path)
    assert_one_line_error(code, err, *needles)
    assert out == ""


@pytest.mark.parametrize(
    "body, field",
    [
        ("scenario: {tasks: 1000000000000}", "scenario.tasks"),
        ("scenario: {machines: 1000000000}", "scenario.machines"),
        ("robustness: {settings: [{name: big, machines: 1000000000}]}", "robustness.settings.0.machines"),
    ],
)
def test_sizes_past_the_limits_in_the_config_are_one_line(tmp_path, body, field):
    (tmp_path / "c.yaml").write_text(body + "\n")
    code, _, err = probe("--config", "c.yaml", "scenario", "--seed", "1", cwd=tmp_path)
    assert_one_line_error(code, err, "c.yaml", field, "maximum")


def test_a_config_whose_draws_overflow_is_one_line(tmp_path):
    # within the schema, but the estimates overflow: refused, no numpy warning on the way
    (tmp_path / "c.yaml").write_text("scenario: {estimate_noise_sigma: 1000}\n")
    code, out, err = probe("--config", "c.yaml", "simulate", "--policy", "atc", "--seed", "1", cwd=tmp_path)
    assert_one_line_error(code, err, "seed 1", "estimate_s", "1e+12")
    assert "Infinity" not in out


def test_simulate_out_below_a_file_is_one_line(tmp_path):
    (tmp_path / "good.csv").write_text("x\n")
    code, _, err = probe(
        "simulate", "--policy", "atc", "--seed", "1", "--out", "good.csv/x.csv", cwd=tmp_path
    )
    assert_one_line_error(code, err, "good.csv")
    assert (tmp_path / "good.csv").read_text() == "x\n"


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "--policy", "atc", "--seed", "1", "--out", "ro/x.csv"],
        ["simulate", "--policy", "atc", "--seed", "1", "2", "--out", "ro"],
        ["scenario", "--seed", "1", "--out", "ro/x.csv"],
    ],
)
def test_out_into_a_read_only_folder_is_one_line(tmp_path, monkeypatch, capsys, args):
    # chmod 555 does not stop root: make creating a file in the folder fail instead
    import tempfile

    from sched.cli import main

    (tmp_path / "ro").mkdir()
    real = tempfile.mkstemp

    def denied(*a, dir=None, **kw):
        if dir is not None and str(dir).endswith("ro"):
            raise PermissionError(13, "Permission denied", str(dir))
        return real(*a, dir=dir, **kw)

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    monkeypatch.chdir(tmp_path)
    code = main(args)
    err = capsys.readouterr().err
    assert_one_line_error(code, err, "ro", "permission denied")
    assert list((tmp_path / "ro").iterdir()) == []


def test_a_config_or_calibration_that_is_a_pipe_is_refused_at_once(tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo.yaml")
    code, _, err = probe("--config", "fifo.yaml", "scenario", "--seed", "1", cwd=tmp_path)
    assert_one_line_error(code, err, "fifo.yaml", "not a regular file")
    os.mkfifo(tmp_path / "cal.json")
    (tmp_path / "c.yaml").write_text("scenario: {calibration: cal.json}\n")
    code, _, err = probe("--config", "c.yaml", "scenario", "--seed", "1", cwd=tmp_path)
    assert_one_line_error(code, err, "cal.json", "not a regular file")
