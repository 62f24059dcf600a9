"""The learned farm policy in the report (sched.evaluate.farm.learned_report) and in rank() when its
candidacy ships it (sched.ranking.farm.learned): tiny hand-made files only."""

import json

import pandas as pd
import pytest

from sched import layout
from sched.evaluate.errors import ReportError
from sched.evaluate.farm import learned_report
from sched.evaluate.farm.bench import FARM_COLUMNS
from sched.evaluate.farm.report import first_table_lines, read_farms, section_lines
from sched.report import figures

REFS = {"farm-fifo": "farm-fifo", "atc-tuned": "atc-tuned", "shipped": "wmdd"}


def _rows(policies, refs, seed=0):
    """farm.csv rows of ``policies`` against ``refs`` ({reference: its policy}), distinct numbers."""
    out = []
    for i, p in enumerate(policies):
        for j, (r, rp) in enumerate(refs.items()):
            d = -1.25 - 3 * i - 0.5 * j - seed
            values = (p, r, rp, 30, 100.0 + i, 110.0, d, d - 1, d + 1, 20, 1, 9 - j)
            out.append(dict(zip(FARM_COLUMNS, values)))
    return pd.DataFrame(out, columns=list(FARM_COLUMNS))


def farm_folder(tmp_path, learned=True, would_ship=False):
    """A farm setting's folder: its benchmark's farm.csv and farm_verdict.json, and with ``learned``
    the files of `sched farm-train` and `sched farm-learned`."""
    d = tmp_path / "htc"
    d.mkdir(parents=True)
    _rows(["wmdd", "atc-tuned"], REFS).to_csv(d / layout.FARM_TABLE, index=False)
    verdict = {"policy": "wmdd", "atc_k": None, "cap": None, "sync_s": 0.0, "reason": "r"}
    (d / layout.FARM_VERDICT).write_text(json.dumps(verdict))
    if not learned:
        return d
    t = pd.concat(
        [
            _rows(["farm-learned"], REFS, 1),
            _rows(["farm-learned-sync-60s"], {**REFS, "atc-tuned-sync-60s": "atc-tuned-sync-60s"}, 2),
            _rows(["farm-learned-sync-300s"], {**REFS, "atc-tuned-sync-300s": "atc-tuned-sync-300s"}, 3),
        ]
    )
    t.to_csv(d / layout.FARM_LEARNED_TABLE, index=False)
    versus = {"diff_pct": -2.345, "ci_lo_pct": -4.5, "ci_hi_pct": -0.25, "seeds": 100}
    record = {"policy": "farm-learned", "would_ship": would_ship, "versus_atc_tuned": versus,
              "shipped_rule": "wmdd", "reason": "the reason of the file"}  # fmt: skip
    (d / layout.FARM_LEARNED).write_text(json.dumps(record))
    curve = pd.DataFrame({"iteration": [0, 1, 2, 3], "decisions": [0, 10, 20, 30],
                          "val_mean_twt_s": [500.0, None, 450.0, 470.0],
                          "val_atc_tuned_twt_s": [500.0] * 4})  # fmt: skip
    curve.to_csv(d / layout.FARM_CURVE, index=False)
    return d


def test_without_learned_files_the_farm_section_is_unchanged(tmp_path):
    bare = read_farms([farm_folder(tmp_path / "a", learned=False)])
    full = read_farms([farm_folder(tmp_path / "b")])
    assert "learned" not in bare[0][2].attrs and learned_report.curves(bare) == []
    lines = section_lines(full)
    first = next(i for i, x in enumerate(lines) if x.startswith("Learned farm policy")) - 1
    last = next(i for i, x in enumerate(lines) if x.startswith("On 30 test scenarios"))
    assert lines[:first] + lines[last + 1 :] == section_lines(bare)


def test_the_learned_rows_are_rendered_from_the_files(tmp_path):
    text = "\n".join(section_lines(read_farms([farm_folder(tmp_path)])))
    assert "100 selection (validation) scenarios" in text and "-2.3 % [-4.5, -0.2]" in text
    assert "it does not ship: the reason of the file" in text
    rows = [x for x in text.splitlines() if x.startswith(("| 0 s", "| 60 s", "| 300 s"))]
    assert [r.split(" |")[0] for r in rows] == ["| 0 s", "| 60 s", "| 300 s"]
    assert all(r.endswith(f"| {learned_report.RUN} |") for r in rows)
    # sync 60: against atc-tuned at 60 s (the 4th reference of its rows), the shipped rule, farm-fifo
    t = pd.read_csv(tmp_path / "htc" / layout.FARM_LEARNED_TABLE)
    r60 = t[(t.policy == "farm-learned-sync-60s") & (t.reference == "atc-tuned-sync-60s")].iloc[0]
    assert f"{r60.diff_pct:+.1f} % [{r60.ci_lo_pct:+.1f}, {r60.ci_hi_pct:+.1f}], 20/1/{r60.losses}" in rows[1]
    assert "vs the shipped rule (wmdd, sync 0 s)" in text
    d = farm_folder(tmp_path / "s", would_ship=True)
    shipped = {"policy": "farm-learned", "policy_file": {"path": "p.pt"}, "reason": "r", "sync_s": 0.0}
    (d / layout.FARM_VERDICT).write_text(json.dumps(shipped))  # its verdict names it: rank() runs it
    farms = read_farms([d])
    assert "it ships: the reason of the file" in "\n".join(section_lines(farms))
    [row] = [x for x in first_table_lines(farms) if x.startswith("| htc |")]
    r = t[(t.policy == "farm-learned") & (t.reference == "atc-tuned")].iloc[0]
    assert f"farm-learned (its policy file p.pt; {learned_report.RUN})" in row
    assert (
        row.split(" | ")[2]
        == f"{r.diff_pct:+.1f} % [{r.ci_lo_pct:+.1f}, {r.ci_hi_pct:+.1f}], 20/1/{r.losses}"
    )


def test_a_learned_record_without_its_fields_is_refused(tmp_path):
    d = farm_folder(tmp_path)
    (d / layout.FARM_LEARNED).write_text(json.dumps({"policy": "farm-learned"}))
    with pytest.raises(ReportError, match="farm_learned.json: field"):
        read_farms([d])


def test_the_learning_curve_is_a_panel_of_the_figure_by_chain(tmp_path):
    farms = read_farms([farm_folder(tmp_path)])
    [(name, x, y, atc)] = learned_report.curves(farms)
    assert name == "htc" and list(x) == [0, 30, 60] and list(y) == [500, 450, 470] and atc == 500
    log = pd.DataFrame({"iteration": [0, 1], "env_steps": [0, 100], "val_weighted_tardiness_s": [3.0, 2.0]})
    chains = [("main", {1: log})]
    assert len(figures.chain_curves_figure(chains).axes) == 1
    fig = figures.chain_curves_figure(chains, farm=learned_report.curves(farms))
    assert len(fig.axes) == 2 and len(fig.axes[1].lines) == 2  # the curve and atc-tuned's line


# ------------------------------------------------------------------ rank() runs a shipped learned policy


def zero_policy(path, atc_k=1.5):
    """A hand-made farm policy file whose correction is zero: the chunked ATC rule with ``atc_k``."""
    import torch

    from sched.learn.farm import decide, policy_file

    a = policy_file.arch(hidden=8, top_k=4, prior_scale=1.0)
    net = policy_file.build(a)
    with torch.no_grad():
        net.actor[4].weight.zero_()
        net.actor[4].bias.zero_()
    meta = {
        "arch": a,
        "atc_k": atc_k,
        "p_ref": 20.0,
        "profile": [1.0] * 168,
        "config_hash": "x",
        "task_features": list(decide.TASK_FEATURES),
        "global_features": list(decide.GLOBAL_FEATURES),
    }
    policy_file.save(path, net, meta)
    return meta


def learned_farm(tmp_path, would_ship=True):
    """results/farm/f/farm_verdict.json as `sched farm-learned` writes it, with a zero policy."""
    import hashlib

    from sched.evaluate.farm.learned import shipped_verdict

    d = tmp_path / "farm" / "f"
    d.mkdir(parents=True)
    meta = zero_policy(d / "farm_policy.pt")
    sha = hashlib.sha256((d / "farm_policy.pt").read_bytes()).hexdigest()
    rules_verdict = {
        "policy": "wspt",
        "rule": "wspt",
        "atc_k": None,
        "cap": None,
        "sync_s": 0.0,
        "reason": "rules",
        "selection": {"on": "validation", "seeds": [1, 100], "means": {}},
        "setting": {"machines": 4, "speeds": None, "load": 0.85, "offered_gpus": 3.4},
    }
    record = {"would_ship": would_ship, "policy_file": {"path": str(d / "farm_policy.pt"), "sha256": sha},
              "versus_atc_tuned": {"diff_pct": -6.0, "ci_lo_pct": -8.0, "ci_hi_pct": -4.0, "seeds": 100},
              "selection": {"means": {"farm-learned": 1.0}}}  # fmt: skip
    data = shipped_verdict(rules_verdict, record, meta)
    (d / layout.FARM_VERDICT).write_text(json.dumps(data))
    return tmp_path / "farm", data


def rank_conf(tmp_path, farm, atc_k=2.0):
    r = {"winner": str(tmp_path / "w.json"), "tuned": str(tmp_path / "t.json"), "settings": None,
         "farm_settings": str(farm), "farm_setting": None}  # fmt: skip
    return {"rank": r, "rules": {"atc_k": atc_k}}


def frame_jobs():
    import numpy as np

    rng = np.random.default_rng(7)
    tasks = [
        {
            "id": f"j{i}",
            "frames": int(rng.integers(1, 40)),
            "frame_s": float(rng.uniform(1, 30)),
            "chunk_frames": 4,
            "weight": float(rng.choice([1.0, 2.0, 4.0])),
            "due": float(rng.uniform(0, 300)),
            "max_gpus": int(rng.integers(1, 4)),
        }
        for i in range(40)
    ]
    tasks[0]["running"] = 2  # running chunks hold GPUs and count against the limit
    return tasks


def test_rank_runs_a_shipped_learned_farm_policy_and_a_zero_correction_is_atc(tmp_path):
    from sched.ranking.ranker import decide, rank

    farm, data = learned_farm(tmp_path)
    assert (
        data["policy"] == "farm-learned"
        and data["rule"] is None
        and data["policy_file"]["arch"]["top_k"] == 4
    )
    tasks = frame_jobs()
    d = decide(tasks, now=0.0, machines=4, config=rank_conf(tmp_path, farm))
    assert d.policy == "farm-learned" and "farm_policy.pt" in d.why
    atc = rank(tasks, now=0.0, machines=4, policy="atc", config=rank_conf(tmp_path, None, atc_k=1.5))
    assert d.ids == atc  # zero correction: the chunked ATC rule with the prior's k
    full = rank(tasks, now=0.0, machines=4, explain=True, config=rank_conf(tmp_path, farm))
    want = rank(tasks, now=0.0, machines=4, policy="atc", explain=True, config=rank_conf(tmp_path, None, 1.5))
    assert full.id.tolist() == atc and full.end_s.tolist() == want.end_s.tolist()


def test_a_learned_farm_verdict_that_does_not_ship_or_whose_file_changed_is_not_followed(tmp_path):
    from sched.ranking.ranker import decide

    farm, data = learned_farm(tmp_path / "no", would_ship=False)
    assert data["policy"] == "wspt"  # the rules' verdict, unchanged
    assert decide(frame_jobs(), now=0.0, machines=4, config=rank_conf(tmp_path / "no", farm)).policy == "wspt"
    farm, data = learned_farm(tmp_path / "yes")
    zero_policy(data["policy_file"]["path"], atc_k=3.0)  # other bytes than the verdict records
    d = decide(frame_jobs(), now=0.0, machines=4, config=rank_conf(tmp_path / "yes", farm))
    assert d.policy != "farm-learned" and "sha256" in d.why and "not followed" in d.why


def test_in_the_longer_run_farm_learned_writes_the_verdict_rank_follows():
    """Profile full: a trained setting's benchmark writes the rules' verdict apart and `sched
    farm-learned` writes farm_verdict.json; the default run's files are unchanged."""
    from sched.config import load_yaml, validate_config
    from sched.pipeline.plan import FARM_FILES, Plan

    from .conftest import ROOT

    data = load_yaml(ROOT / "config.yaml")
    default, full = (Plan(c.to_dict(), c) for c in (validate_config({**data, "profile": p}, "config")
                                                    for p in ("default", "full")))  # fmt: skip
    assert default.farm_outputs() == [f"{layout.farm_root(n)}/{f}" for n in default.farm for f in FARM_FILES]
    names = full.farm_learned()
    assert names and set(names) <= set(full.farm) and not default.farm_learned()
    out = full.farm_outputs()
    for name in names:
        for f in (layout.FARM_RULES_VERDICT, layout.FARM_VERDICT, layout.FARM_LEARNED, layout.FARM_CURVE):
            assert out.count(f"{layout.farm_root(name)}/{f}") == 1
    smk = (ROOT / "workflow" / "rules" / "farm.smk").read_text()
    assert "--verdict {params.out:q}/{params.verdict:q}" in smk and "FARM_SHIP_FILES" in smk


@pytest.mark.parametrize(
    "change, field",
    [
        ({"labelled": "1234"}, "labelled: expected an integer"),
        ({"deviations": True}, "deviations: expected an integer"),
        ({"scenarios": -1}, "scenarios: expected an integer"),
        ({"val_weighted_tardiness_s": float("nan")}, "val_weighted_tardiness_s: expected a finite number"),
        (
            {"val_atc_tuned_weighted_tardiness_s": None},
            "val_atc_tuned_weighted_tardiness_s: expected a finite",
        ),
        ({"labelled": None, "drop": "labelled"}, "labelled is missing"),
    ],
)
def test_a_teacher_labels_file_with_a_field_of_the_wrong_type_is_refused_by_name(tmp_path, change, field):
    d = farm_folder(tmp_path)
    good = {"scenarios": 80, "labelled": 1234, "deviations": 56, "val_weighted_tardiness_s": 101_000.0,
            "val_atc_tuned_weighted_tardiness_s": 100_000.0}  # fmt: skip
    (d / layout.FARM_TEACH).mkdir()
    path = d / layout.FARM_TEACH / layout.FARM_TEACHER_LABELS
    path.write_text(json.dumps(good))
    assert read_farms([d])[0][2].attrs["learned"]["teacher"] == good  # the good file is read whole
    bad = {**good, **{k: v for k, v in change.items() if k != "drop"}}
    bad.pop(change.get("drop", "-"), None)
    path.write_text(json.dumps(bad, allow_nan=True))
    with pytest.raises(ReportError, match=f"{layout.FARM_TEACHER_LABELS}: field {field}"):
        read_farms([d])


@pytest.mark.parametrize(
    "field, value",
    [("policy", None), ("reason", 3), ("atc_k", "1.5"), ("atc_k", -1.0), ("sync_s", True), ("cap", 1.5),
     ("policy_file", "p.pt")],
)  # fmt: skip
def test_a_farm_verdict_with_a_field_the_report_formats_of_the_wrong_type_is_refused_by_name(
    tmp_path, field, value
):
    d = farm_folder(tmp_path, learned=False)
    good = json.loads((d / layout.FARM_VERDICT).read_text())
    assert read_farms([d])[0][1] == good
    (d / layout.FARM_VERDICT).write_text(json.dumps({**good, field: value}))
    with pytest.raises(ReportError, match=rf"{layout.FARM_VERDICT}: field {field}: unexpected value"):
        read_farms([d])


@pytest.mark.parametrize(
    "change, field",
    [({"would_ship": "no"}, "would_ship"), ({"reason": None}, "reason"),
     ({"shipped_rule": 3}, "shipped_rule"), ({"versus_atc_tuned": [1]}, "versus_atc_tuned"),
     ({"versus_atc_tuned": {"seeds": 100}}, "versus_atc_tuned.diff_pct"),
     ({"versus_atc_tuned": {"diff_pct": 1.0, "ci_lo_pct": 0.0, "ci_hi_pct": 2.0, "seeds": "100"}},
      "versus_atc_tuned.seeds")],
)  # fmt: skip
def test_a_learned_record_with_a_field_of_the_wrong_type_is_refused_by_name(tmp_path, change, field):
    d = farm_folder(tmp_path)
    good = json.loads((d / layout.FARM_LEARNED).read_text())
    assert read_farms([d])[0][2].attrs["learned"]["record"] == good
    (d / layout.FARM_LEARNED).write_text(json.dumps({**good, **change}))
    with pytest.raises(ReportError, match=rf"{layout.FARM_LEARNED}: field {field}: unexpected value"):
        read_farms([d])


@pytest.mark.parametrize(
    "x, kw, want",
    [(3, {}, True), (2.5, {"integer": True}, False), (True, {}, False), (float("nan"), {}, True),
     (float("nan"), {"finite": True}, False), (-1, {"minimum": 0}, False),
     (0, {"integer": True, "minimum": 0}, True),
     ("1", {}, False), (None, {}, False)],
)  # fmt: skip
def test_is_number_is_the_type_check_of_a_parsed_json_field(x, kw, want):
    from sched.formats.json_input import is_number

    assert is_number(x, **kw) is want
