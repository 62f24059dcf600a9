"""The scripts that choose settings (benchmarks/plan_quality.py, farm_tardiness.py, rule_mix.py)
read, by default, validation seeds that no workflow step uses, and test seeds only when asked
twice (issue 22: a test seed used to choose something can no longer confirm it)."""

import copy
import importlib.util
from pathlib import Path

import pytest

from sched.config import load_config, seed_range
from sched.evaluate.seeds import overlap, selection_seeds, validation_seeds

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config.yaml"


def _script(name):
    spec = importlib.util.spec_from_file_location(f"_script_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def shipped():
    return load_config(CONFIG)


CHOOSERS = ["plan_quality", "farm_tardiness"]


@pytest.fixture(scope="module", params=CHOOSERS)
def chooser(request):
    return _script(request.param)


@pytest.fixture(scope="module")
def rule_mix():
    return _script("rule_mix")


def _default_seeds(module, cfg, extra=()):
    args = ["--base", "atc"] if hasattr(module, "Planner") else []
    a = module.parser().parse_args([*args, *extra])
    return module.pick_seeds(cfg, a.split, a.scenarios, a.skip, a.confirm)


def _used_validation(cfg):
    """Every validation range a workflow step reads: tuning, checkpoints, the winner's selection."""
    val = seed_range(cfg, "validation")
    used = [validation_seeds(cfg), selection_seeds(cfg), val[: cfg["train"]["validation_scenarios"]]]
    for st in cfg["robustness"]["settings"]:
        n = (st.get("train") or {}).get("validation_scenarios")
        if n is not None:
            used.append(val[:n])
    return used


def test_default_seeds_are_validation_seeds_no_step_uses(chooser, shipped, capsys):
    seeds = _default_seeds(chooser, shipped)
    val = seed_range(shipped, "validation")
    assert seeds.start >= val.start and seeds.stop <= val.stop
    for used in _used_validation(shipped):
        assert not overlap(seeds, used), (seeds, used)
    for split in ("train", "test"):
        assert not overlap(seeds, seed_range(shipped, split))
    # under the shipped config.yaml: right after the winner's selection (1001000-1001999)
    assert seeds.start == 1_002_000
    assert capsys.readouterr().err == ""


def test_skip_moves_later_in_the_free_validation_seeds(chooser, shipped):
    seeds = _default_seeds(chooser, shipped, ["--skip", "5", "--scenarios", "3"])
    assert seeds == range(1_002_005, 1_002_008)


def test_free_offset_follows_the_config(chooser, shipped):
    cfg = shipped.replace(benchmark=dict(selection_offset=400, selection_scenarios=50))
    cfg = cfg.replace(train={"validation_scenarios": 300})
    settings = cfg.robustness.to_dict()["settings"]
    settings[2]["train"]["validation_scenarios"] = 350
    cfg = cfg.replace(robustness={"settings": settings})
    assert chooser.free_validation_offset(cfg) == 450
    seeds = chooser.pick_seeds(cfg, "validation", 4)
    assert seeds == range(1_000_450, 1_000_454)
    for used in _used_validation(cfg):
        assert not overlap(seeds, used)


def test_a_selection_below_the_checkpoint_seeds_is_refused(chooser, shipped):
    from sched.config import ConfigError

    cfg = shipped.replace(benchmark={"selection_offset": 200})  # below train.validation_scenarios (1,000)
    with pytest.raises(ConfigError, match="selection_offset"):
        chooser.pick_seeds(cfg, "validation", 2)


def test_seeds_past_the_split_are_refused(chooser, shipped):
    from sched.config import ConfigError

    with pytest.raises(ConfigError, match="seeds.validation"):
        chooser.pick_seeds(shipped, "validation", 98_001)


def test_test_split_needs_confirm(chooser, capsys):
    args = ["--config", str(CONFIG), "--split", "test", "--scenarios", "2"]
    if hasattr(chooser, "Planner"):
        args += ["--base", "atc"]
    with pytest.raises(SystemExit) as exc:
        chooser.main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "--confirm" in err and "test" in err


def test_test_split_with_confirm_takes_test_seeds_and_warns(chooser, shipped, capsys):
    seeds = _default_seeds(chooser, shipped, ["--split", "test", "--confirm", "--scenarios", "4"])
    start = shipped["seeds"]["test"]["start"]
    assert seeds == range(start, start + 4)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "warning" in err[0] and "2000000-2000003" in err[0]
    seeds = _default_seeds(
        chooser, shipped, ["--split", "test", "--confirm", "--skip", "30", "--scenarios", "2"]
    )
    assert seeds == range(start + 30, start + 32)


def test_both_choosers_take_their_seeds_from_the_one_definition(shipped):
    """The seed arithmetic lives in sched.evaluate.seeds (chooser_seeds); both scripts use it."""
    from sched.evaluate import seeds as S

    cfg = copy.deepcopy(shipped)
    for c in (shipped, cfg):
        for name in CHOOSERS:
            mod = _script(name)
            assert mod.free_validation_offset is S.free_validation_offset
            for split, confirm in (("validation", False), ("test", True)):
                assert mod.pick_seeds(c, split, 7, 3, confirm) == S.chooser_seeds(c, split, 7, 3, confirm)
        cfg = cfg.replace(benchmark=dict(selection_offset=3000, selection_scenarios=10))


def test_rule_mix_default_seeds_lie_outside_every_split(rule_mix, shipped, capsys):
    a = rule_mix.parser().parse_args([])
    seeds = rule_mix.pick_seeds(shipped, a.seeds, a.confirm)
    assert seeds == range(0, 200)
    for split in ("train", "validation", "test"):
        assert not overlap(seeds, seed_range(shipped, split))
    assert capsys.readouterr().err == ""


def test_rule_mix_test_seeds_need_confirm(rule_mix, shipped, capsys):
    with pytest.raises(SystemExit) as exc:
        rule_mix.main(["--config", str(CONFIG), "--seeds", "1999998-2000001"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--confirm" in err
    assert rule_mix.pick_seeds(shipped, "2000000-2000002", confirm=True) == range(2_000_000, 2_000_003)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "warning" in err[0]
