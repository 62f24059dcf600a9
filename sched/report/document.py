"""rapport.md and its figures, written from the files the benchmark produced.

Every number in the report is read from (or computed from) those files:
``per_scenario.csv``, ``resume.csv`` (the summary), ``winner.json``,
``tuned.json``, ``clairvoyant.csv``, the demonstration's ``demo.csv`` and the
training logs, plus the scenario settings of the config. Nothing is typed by
hand: the sentences of the conclusion are templates filled from the numbers,
including the case where the learned policy does not win.

The parts: :mod:`~sched.report.inputs` (reading and cross-checking
the files), :mod:`~sched.report.sections` and
:mod:`~sched.report.conclusion` and :mod:`~sched.report.training`
(one function per section),
:mod:`~sched.report.format` (number formats),
:mod:`~sched.report.figures` (the plots).
"""

from pathlib import Path

from sched import files, layout
from sched.evaluate.errors import ReportError
from sched.evaluate.farm.learned_report import curves as farm_curves
from sched.evaluate.farm.report import first_table_lines as farm_first_lines
from sched.evaluate.farm.report import read_farms
from sched.evaluate.farm.report import section_lines as farm_section_lines
from sched.report.conclusion import conclusion_section, robustness_section
from sched.report.inputs import load, read_robustness
from sched.report.plan import plan_section, plan_test_line, read_plan
from sched.report.rounds import rounds_section
from sched.report.sections import (
    FIGURES,
    clairvoyant_section,
    demo_section,
    figures_section,
    reproduce_section,
    results_section,
    setup_section,
)
from sched.report.shipped import read_setting, shipped_section
from sched.report.studio import read_studio, studio_readme_line, studio_section
from sched.report.training import TARGETS, ppo_alone_lines, training_section
from sched.report.workload import read_fit, read_replay, replay_section

__all__ = ["FIGURES", "README_BEGIN", "README_END", "ReportError", "build", "make_figures", "render"]

#: The largest README `sched report --readme` rewrites (the project's is about 20 kB).
MAX_README_BYTES = 1024**2
#: The README's results block lies between these lines; `sched report --readme` rewrites it.
README_BEGIN = "<!-- results: written by `sched report --readme README.md`; do not edit by hand -->"
README_END = "<!-- end of results -->"


def read_manifest(path):
    """{"path", "sha256", "artefacts"} of the results' manifest, or None when it is absent."""
    from sched.evidence import manifest

    if path is None or not Path(path).is_file():
        return None
    try:
        entries = manifest.read(path)
    except manifest.ManifestError as exc:
        raise ReportError(str(exc)) from None
    return {"path": str(path), "sha256": manifest.sha256(path), "artefacts": len(entries)}


def make_figures(cfg, d, figures_dir):
    """The benchmark's figures (and the learning curves when there are training logs).

    Returns ({key of FIGURES: path written}, [notes on figures left out]).
    """
    from sched.report import figures

    dpi = cfg.report.figure_dpi
    fd = Path(figures_dir)
    made, notes = {}, []
    made["mean_ci"] = figures.mean_with_ci(d["summary"], fd / FIGURES["mean_ci"], dpi, cfg.benchmark.ci_level)
    made["paired"] = figures.paired_differences(d["per"], fd / FIGURES["paired"], dpi)
    made["ecdf"] = figures.ecdf(d["per"], fd / FIGURES["ecdf"], dpi)
    if d["logs"]:
        ref = None
        atc_val = [
            log["val_atc_weighted_tardiness_s"].dropna()
            for log in d["logs"].values()
            if "val_atc_weighted_tardiness_s" in log
        ]
        atc_val = [v.iloc[0] for v in atc_val if len(v)]
        if atc_val:  # ATC (rules.atc_k) on the same validation scenarios, from the logs
            ref = (f"ATC k = {cfg.rules.atc_k:g}, same scenarios", atc_val[0])
        made["learning"] = figures.learning_curves(
            d["logs"], fd / FIGURES["learning"], dpi, reference=ref, targets=TARGETS
        )
        made["chains"] = figures.chain_curves(
            chains_of(cfg, d), fd / FIGURES["chains"], dpi, reference=ref, farm=farm_curves(d.get("farm"))
        )
    else:
        notes.append(
            f"Learning curves: no training log (`{layout.train_log('<S>')}`) "
            "was found, so there is no learning-curve figure."
        )
    return made, notes


def chains_of(cfg, d):
    """The training chains whose curves the report draws: the main one (teacher, rounds, then PPO)
    and each robustness setting that trains PPO alone at the main load, machines and tasks
    (``sched.report.training.ppo_alone_settings``), with their seeds' logs."""
    from sched.report.inputs import read_train_logs
    from sched.report.training import ppo_alone_settings

    chains = [("teacher, rounds, then PPO (main)", d["logs"])]
    for setting, _ in ppo_alone_settings(cfg, d.get("robust") or []):
        root = layout.train_dir(str(Path(d.get("robust_dir", layout.ROBUST_DIR)) / setting["name"]))
        logs = read_train_logs(root, cfg.train.seeds)
        if logs:
            chains.append((f"PPO alone ({setting['name']})", logs))
    return chains


def render(cfg, d, made, notes, paths):
    """The report's text, section by section."""
    report_dir = Path(paths["out"]).parent
    sections = [
        [
            f"# {cfg.report.title}",
            "",
            f"Written by `sched report` from the files in `{paths['bench']}`; every number below is "
            f"read from them (and from the scenario settings of the config).",
        ],
        shipped_lines(cfg, d) + farm_first_lines(d.get("farm")),
        setup_section(cfg, d),
        results_section(cfg, d),
        training_section(cfg, d),
        clairvoyant_section(cfg, d),
        demo_section(d, report_dir, paths["figures"]),
        conclusion_section(cfg, d),
        robustness_section(cfg, d.get("robust")) + ppo_alone_lines(cfg, d.get("robust") or [], d["summary"]),
        farm_section_lines(d.get("farm")),
        replay_section(cfg, d.get("replay"), d.get("workload_fit")),
        studio_section(cfg, d.get("studio"), d.get("workload_fit")),
        plan_section(cfg, d.get("plan") or {}, d["winner"], d["per"]),
        figures_section(made, notes, report_dir),
        [
            "## Evidence and run records",
            "",
            *evidence_lines(d),
            "",
            "The wall times and decisions per second in this report (the training's throughput) are run "
            "records (`train_log.run.csv`, `results/logs/`): they say how this run ran, differ from machine "
            "to machine, and are in no manifest. Every other number is a result.",
        ],
        reproduce_section(cfg, d, paths),
    ]
    return "\n".join("\n".join(s) + "\n" for s in sections)


def evidence_lines(d):
    """The manifest's digest: what names this run's evidence (issue 45), and how to check a rerun."""
    m = d.get("manifest")
    if m is None:
        return [
            "No manifest (`results/manifest.sha256`) was found beside these results: they cannot be "
            "checked against another run's (the workflow's rule `manifest` writes it)."
        ]
    return [
        f"Evidence: `{m['path']}` lists {m['artefacts']:,} result artefacts (run records excluded); "
        f"its sha256 is `{m['sha256']}`. A run of the same commit and config on any machine gives the "
        f"same file: `sched manifest compare {m['path']} <theirs>` names the first artefact that "
        f'differs (docs/workflow.md, "Reproducible to the bit").',
    ]


#: The scenarios a comparison needs before its gain is a result rather than a hint (DEVELOPERS.md).
RESULT_SCENARIOS = 300


def verdict_lines(cfg, d):
    """The main setting's verdict in a few lines: what rank() runs, how it was chosen and confirmed,
    and where each learned policy stands against the best heuristic on the test scenarios."""
    from sched.evaluate.policies import is_ppo, policy_key
    from sched.report.format import ci, level_text, pct

    r = d["summary"].set_index("policy")
    w = d["winner"]
    lv = level_text(cfg.benchmark.ci_level)
    x, bh = w["policy"], r["best_heuristic"].iloc[0]
    sel = w.get("selection")
    chosen = f"chosen on {sel['seeds'][1]:,} validation scenarios" if sel else "chosen on the test scenarios"

    def vs_best(p):
        row = r.loc[p]
        lo, hi = row["diff_vs_best_heuristic_ci_lo_pct"], row["diff_vs_best_heuristic_ci_hi_pct"]
        return f"{pct(row['diff_vs_best_heuristic_pct'])} {ci(lo, hi)}"

    if x == bh:
        lines = [f"**`rank()` runs {x}**, the best heuristic ({chosen}); no learned policy beat it there."]
    else:
        row = r.loc[x]
        wtl = "/".join(str(int(row[f"{k}_vs_best_heuristic"])) for k in ("wins", "ties", "losses"))
        lines = [
            f"**`rank()` runs {x}** on the main setting ({chosen}, confirmed on {int(row['scenarios']):,} "
            f"test scenarios that chose nothing). On those, against the best heuristic {bh}: {vs_best(x)} "
            f"({lv} paired interval), W/T/L {wtl}."
        ]
    finals = sorted((p for p in r.index if is_ppo(p)), key=policy_key)
    if finals:
        lines.append(
            f"Each training seed's final policy against {bh} on the test scenarios: "
            + "; ".join(f"{p} {vs_best(p)}" for p in finals)
            + "."
        )
    return [" ".join(lines)]


def summary_lines(cfg, d):
    """The README's opening results: the verdict, plan's gain against its base and the stages of
    learning, each rendered from the results (the README's prose types none)."""
    lines = ["### In short", "", *verdict_lines(cfg, d), ""]
    against = plan_test_line(plan_section(cfg, {}, d["winner"], d["per"]))
    if against:
        n = d["winner"]["plan"]["test"]["scenarios"]
        hint = (
            f" On {n} scenarios, fewer than {RESULT_SCENARIOS}, this is a hint, not a result."
            if n < RESULT_SCENARIOS
            else ""
        )
        lines += [against + hint, ""]
    stages = rounds_section(cfg, d["per"])
    if stages:
        lines += ["#" + x if x.startswith("### ") else x for x in stages] + [""]
    return lines


def shipped_lines(cfg, d, times=True):
    """The report's first table: what rank() runs in each setting (:mod:`.shipped`); ``times``:
    with plan's decision time, a run record (the report), or without (the README's block)."""
    main = (d["winner"], d["per"])
    settings = [(s, d["settings"].get(s["name"])) for s in cfg.robustness.settings]
    studio = d.get("studio_verdict")
    return shipped_section(
        cfg, main, settings, studio, d.get("plan_dir", layout.PLAN_BENCH_DIR), times,
        d.get("robust_dir", layout.ROBUST_DIR),
    )  # fmt: skip


def readme_block(cfg, d):
    """The README's results: what rank() runs in each setting, the verdict in short, the report's
    results and other-settings tables one heading level down, the studio's verdict, and the
    manifest's digest."""
    lines = ["#" + x if x.startswith("## ") else x for x in shipped_lines(cfg, d, times=False)] + [""]
    lines += summary_lines(cfg, d)
    for section in (results_section(cfg, d)[2:], robustness_section(cfg, d.get("robust"))):
        lines += ["#" + x if x.startswith("## ") else x for x in section] + [""]
    studio = studio_readme_line(d.get("studio"))
    if studio:
        lines += [*studio, ""]
    lines += [*evidence_lines(d), ""]
    return [README_BEGIN, "", *lines, README_END]


def update_readme(path, block):
    """Replace the lines between README_BEGIN and README_END (included) of ``path`` with ``block``."""
    text = files.read_text(path, ReportError, MAX_README_BYTES)  # the one bounded reader
    lines = text.split("\n")
    try:
        first, last = lines.index(README_BEGIN), lines.index(README_END)
    except ValueError:
        raise ReportError(
            f"{path}: no results block (a line {README_BEGIN!r}, then {README_END!r})"
        ) from None
    if last < first:
        raise ReportError(f"{path}: the end of the results block comes before its beginning")
    files.write_text(path, "\n".join(lines[:first] + block + lines[last + 1 :]))


def build(
    cfg,
    bench_dir,
    out,
    figures_dir,
    train_dir,
    demo_dir,
    config_path=None,
    robust_dir=layout.ROBUST_DIR,
    readme=None,
    replay_dir=layout.REPLAY_DIR,
    workload=layout.WORKLOAD,
    plan_dir=layout.PLAN_BENCH_DIR,
    manifest_path=layout.MANIFEST,
    farm_dirs=(),
):
    """Write the figures and rapport.md (and the results block of ``readme``); returns the paths written.
    ``farm_dirs``: the chunked farm settings' folders (``sched farm-bench``), in the report's order."""
    d = load(bench_dir, train_dir, demo_dir, cfg)
    d["farm"] = read_farms(farm_dirs)
    d["robust"] = read_robustness(cfg, robust_dir)
    d["studio"] = read_studio(robust_dir)
    d["replay"] = read_replay(replay_dir)
    d["workload_fit"] = read_fit(workload)
    d["plan"] = read_plan(plan_dir)
    d["manifest"] = read_manifest(manifest_path)
    # what rank() runs in each setting: each robustness setting's and the studio's verdict
    d["settings"] = {s["name"]: read_setting(Path(robust_dir) / s["name"]) for s in cfg.robustness.settings}
    d["studio_verdict"] = read_setting(Path(robust_dir) / layout.STUDIO)
    d["plan_dir"] = plan_dir
    d["robust_dir"] = robust_dir
    paths = {
        "bench": str(bench_dir),
        "out": str(out),
        "figures": str(figures_dir),
        "demo": str(demo_dir),
        "config": config_path,
    }
    made, notes = make_figures(cfg, d, figures_dir)
    text = render(cfg, d, made, notes, paths)
    files.write_text(out, text)
    written = [Path(out), *made.values()]
    if readme is not None:
        update_readme(readme, readme_block(cfg, d))
        written.append(Path(readme))
    return written
