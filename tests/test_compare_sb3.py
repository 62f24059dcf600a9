"""benchmarks/compare_sb3.py: the project's PPO against sb3-contrib's MaskablePPO (peer extra).

The comparison itself needs the ``peer`` extra and is skipped without it (CI
does not install it); the message when it is missing is tested everywhere.
"""

import csv
import importlib.util
import json
import sys

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "compare_sb3.py"


@pytest.fixture(scope="module")
def compare_sb3():
    spec = importlib.util.spec_from_file_location("compare_sb3", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_missing_peer_extra_is_one_line(compare_sb3, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)  # import sb3_contrib raises ImportError
    with pytest.raises(SystemExit) as exc:
        compare_sb3.main(["--steps", "1"])
    message = str(exc.value.code)
    assert message == compare_sb3.MISSING
    assert "\n" not in message and "pip install -e '.[peer]'" in message
    assert capsys.readouterr().out == ""  # nothing ran


def test_budget_options_exclusive(compare_sb3, capsys):
    with pytest.raises(SystemExit):
        compare_sb3.parse_args(["--steps", "10", "--seconds", "5"])
    assert compare_sb3.parse_args([]).seconds == 60.0
    with pytest.raises(SystemExit):
        compare_sb3.parse_args(["--num-envs", "0"])
    capsys.readouterr()


def test_tiny_comparison(compare_sb3, cfg, tmp_path):
    pytest.importorskip("sb3_contrib")
    result = compare_sb3.compare(
        cfg,
        num_envs=2,
        num_steps=16,
        num_minibatches=2,
        update_epochs=1,
        tasks=30,
        steps=64,
        warmup=1,
        log=None,
    )
    assert result["unit"] == compare_sb3.UNIT
    assert result["settings"]["batch_size"] == 32 and result["settings"]["minibatch_size"] == 16
    project, sb3 = result["sides"]
    assert [project["side"], sb3["side"]] == ["project", "sb3"]
    for side in (project, sb3):
        assert set(side) == set(compare_sb3.COLUMNS)
        assert side["iterations"] == 2  # ceil(64 / (2 x 16))
        assert side["wall_s"] > 0 and side["decisions_per_s"] > 0
    assert project["decisions"] == 64 and project["all_steps"] is None
    assert sb3["all_steps"] == 64  # the same steps per rollout on both sides
    assert 0 < sb3["decisions"] <= sb3["all_steps"]
    assert result["ratio"] == pytest.approx(project["decisions_per_s"] / sb3["decisions_per_s"])
    assert cfg["scenario"]["tasks"] != 30  # the caller's config is left alone
    assert "decisions (>=2 tasks)" in compare_sb3.table(result)

    compare_sb3.write_results(tmp_path / "r.json", result)
    assert json.loads((tmp_path / "r.json").read_text())["sides"][1]["all_steps"] == 64
    compare_sb3.write_results(tmp_path / "r.csv", result)
    with open(tmp_path / "r.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["side"] for r in rows] == ["project", "sb3"]
    assert rows[0]["all_steps"] == "" and rows[1]["all_steps"] == "64"
    assert rows[0]["unit"] == compare_sb3.UNIT
