"""`sched fidelity`: the generator checked against the validation days it imitates."""

import sys

from sched import layout, threads
from sched.cli import load_cfg
from sched.pipeline import studio


def register(sub):
    s = sub.add_parser(
        "fidelity",
        help="compare the validation days with scenarios generated from the fit (table, figure, tau)",
        description="Replay the workload file's validation days (split.validation) as one stream and "
        "compare them with streams generated from the fit over the same hours of the week (a warm-up "
        "day first) and with generated validation scenarios: arrivals, queue and backlog at each hour, "
        "late tasks, each rule's tardiness and Kendall's tau of the rules' order (docs/workload.md, "
        '"Fidelity"). Writes fidelity.csv, fidelity.json and fidelity.png.',
    )
    s.add_argument(
        "history", nargs="*", metavar="HISTORY", help="history files; default: config workload.history"
    )
    s.add_argument("--workload", help=f"workload file (default: scenario.workload, else {layout.WORKLOAD})")
    s.add_argument("--streams", type=int, help="generated streams (default: studio.fidelity_streams)")
    s.add_argument(
        "--scenarios", type=int, help="generated validation scenarios (default: studio.fidelity_scenarios)"
    )
    s.add_argument(
        "--threshold",
        type=float,
        help="Kendall's tau below which the verdict leans on the real days (default: studio.fidelity_tau)",
    )
    s.add_argument(
        "--no-variants",
        action="store_true",
        help="skip the generator's other variants (each switch of scenario.workload_model alone, all of "
        "them, none), whose tau the record reports beside the config's",
    )
    s.add_argument("--out", default=layout.fidelity_dir(), help="output folder (default: %(default)s)")
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from pathlib import Path

    from sched import files
    from sched.data.model import scenario_model
    from sched.data.workload.fidelity import (
        check,
        model_record,
        real_sample,
        render_figure,
        scenario_samples,
        stream_samples,
    )
    from sched.data.workload.fidelity_text import misses_text, switches_text, verdict_text
    from sched.data.workload.replay import held_out_stream
    from sched.data.workload.workload import load_workload, period_days
    from sched.errors import UsageError
    from sched.evaluate.runs import generate_scenarios
    from sched.evaluate.seeds import fidelity_seeds, selection_seeds

    cfg = load_cfg(args)
    threads.apply(args.threads)
    path = args.workload or cfg.scenario.workload or layout.WORKLOAD
    workload = load_workload(path)
    period = period_days(workload, "validation")
    if period is None:
        why = (workload.get("split") or {}).get("note") or "see workload.validation_days"
        raise UsageError(
            f"--workload: workload file {path} holds no validation days (split.validation is null: {why})"
        )
    if not cfg.scenario.calibration:
        raise UsageError("scenario.calibration: null; the replay's estimates need the calibration")
    n_default, sc_default, tau_default = studio.fidelity_options(cfg)  # studio.fidelity_* (sched/pipeline)
    n = args.streams if args.streams is not None else int(n_default)
    n_sc = args.scenarios if args.scenarios is not None else int(sc_default)
    for name, v in (("--streams", n), ("--scenarios", n_sc)):
        if v < 1:
            raise UsageError(f"{name}: must be >= 1, got {v}")
    if cfg.scenario.workload != str(path):  # the studio's scenarios: the fit, studio.tasks a scenario
        cfg = cfg.replace(scenario=studio.scenario(cfg.studio, path), robustness={"settings": []})
    stream = held_out_stream(
        args.history or cfg.workload.history, cfg, cfg.scenario.calibration, period,
        fitted_on=(path, workload.get("sources")), label="validation",
    )  # fmt: skip
    real = real_sample(stream)
    model = scenario_model(cfg)
    streams = stream_samples(model, fidelity_seeds(cfg, n), stream.scenario.week_start_s, real.days)
    scenarios = scenario_samples(generate_scenarios(cfg, selection_seeds(cfg)[:n_sc]))
    machines = cfg.scenario.machines
    threshold = args.threshold if args.threshold is not None else float(tau_default)
    if not -1.0 <= threshold <= 1.0:
        raise UsageError(f"--threshold: Kendall's tau lies in [-1, 1], got {threshold}")
    k = float(cfg.rules.atc_k)
    table, record, queues = check(real, streams, scenarios, rules_on(machines, k), threshold)
    record["period"] = list(period)
    variants = (
        [] if args.no_variants else _variants(cfg, model, workload, real, stream, (n, n_sc), k, threshold)
    )
    record["model"] = model_record(dict(model.switches), variants)
    out = Path(args.out)
    png = render_figure(table, record, queues)
    files.write_set(
        [
            (out / layout.FIDELITY_TABLE, files.csv_writer(table)),
            (out / layout.FIDELITY_FIGURE, files.bytes_writer(png)),
            (out / layout.FIDELITY_RECORD, files.json_writer(record)),
        ]
    )
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for line in (verdict_text(record), misses_text(record), switches_text(record)):
        if line:
            print(line)
    for name in (layout.FIDELITY_TABLE, layout.FIDELITY_FIGURE, layout.FIDELITY_RECORD):
        print(f"wrote {out / name}", file=sys.stderr)


def _variants(cfg, model, workload, real, stream, counts, k, threshold):
    """[(name, switches, tau)] of the generator's other variants (issue 50: each switch of
    scenario.workload_model alone, all of them, the profile alone), on the same real days."""
    from sched.data.model import scenario_model
    from sched.data.workload.fidelity import check, scenario_samples, stream_samples, switch_variants
    from sched.evaluate.runs import generate_scenarios
    from sched.evaluate.seeds import fidelity_seeds, selection_seeds

    out = []
    for name, sw in switch_variants(dict(model.switches), workload):
        c = cfg.replace(scenario={"workload_model": sw})
        st = stream_samples(
            scenario_model(c), fidelity_seeds(c, counts[0]), stream.scenario.week_start_s, real.days
        )
        sc = scenario_samples(generate_scenarios(c, selection_seeds(c)[: counts[1]]))
        out.append((name, sw, check(real, st, sc, rules_on(cfg.scenario.machines, k), threshold)[1]["tau"]))
        print(f"fidelity: {name}: tau {out[-1][2]}", file=sys.stderr)
    return out


def rules_on(machines, k):
    """The simulation the fidelity check runs each rule by: the compiled core on ``machines``
    (ATC's k: ``k``)."""
    from functools import partial

    from sched.sim.core import simulate_batch

    return partial(simulate_batch, machines=machines, k=k)
