"""benchmarks/plan_diagnosis.py: the settings' per-scenario tables side by side, paired."""

import importlib.util

import pandas as pd
import pytest

from .conftest import ROOT


def _script():
    spec = importlib.util.spec_from_file_location(
        "_plan_diagnosis", ROOT / "benchmarks" / "plan_diagnosis.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table(path, plan, base=None, seeds=None):
    n = len(plan)
    frame = pd.DataFrame(
        {
            "seed": seeds or list(range(1000, 1000 + n)),
            "base": base or [100.0 * (i + 1) for i in range(n)],
            "plan": plan,
            "decisions": [10] * n,
            "deviations": [1] * n,
            "cpu_s": [0.01] * n,
        }
    )
    frame.to_csv(path, index=False)
    return path


def test_a_setting_that_loses_on_one_scenario_carries_all_its_loss_there(tmp_path, capsys):
    # 20 scenarios: plan ties its base on 19 and loses 50 % on the heaviest
    base = [100.0 * (i + 1) for i in range(20)]
    lossy = _table(tmp_path / "a.csv", [*base[:19], base[19] * 1.5], base)
    even = _table(tmp_path / "b.csv", [b * 0.9 for b in base], base)
    _script().main([f"lossy={lossy}", f"even={even}", "--config", str(ROOT / "config.yaml"), "--worst", "2"])
    out = capsys.readouterr().out
    lossy_row = next(line for line in out.splitlines() if line.startswith("| lossy |"))
    cells = [c.strip() for c in lossy_row.strip("|").split("|")]
    assert cells[1] == "20" and cells[3] == "0/19/1" and cells[4] == "+0.00 %"
    assert cells[5] == "100 %"  # the worst 5 % (one scenario) carries every extra second
    assert cells[6] == "10.00 %" and cells[7] == "1.00"
    even_row = next(line for line in out.splitlines() if line.startswith("| even |"))
    assert "-10.00 % [-10.00, -10.00]" in even_row and "20/0/0" in even_row
    # by fifth of the base's totals: the loss sits in the last fifth only
    fifths = [line for line in out.splitlines() if line.startswith("| 1 (") or line.startswith("| 5 (")]
    assert "+0.00 %" in fifths[0] and "-10.00 %" in fifths[0]
    assert "+0.00 %" not in fifths[1]
    # the worst scenario first, with what the other setting does there
    worst = next(line for line in out.splitlines() if line.startswith("| 1019 |"))
    assert "+50.0 % (1)" in worst and "-10.0 % (1)" in worst


def test_tables_of_other_scenarios_are_refused(tmp_path):
    a = _table(tmp_path / "a.csv", [1.0, 2.0])
    b = _table(tmp_path / "b.csv", [1.0, 2.0], seeds=[5, 6])
    # the script's bad input is a SchedError, which sched.cli.run_script ends as one line, exit 2
    from sched.errors import SchedError

    with pytest.raises(SchedError, match="scenarios differ"):
        _script().main([f"a={a}", f"b={b}", "--config", str(ROOT / "config.yaml")])
    with pytest.raises(SchedError, match="expected NAME=CSV"):
        _script().main([str(a)])
