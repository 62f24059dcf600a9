"""The verdict's files, computed in order and written as one set (:func:`write_outputs`).

The order of the verdict: the summary and the winner (:mod:`~sched.verdict.summary`),
plan's candidacy (:mod:`~sched.verdict.candidacy`), the studio's validation days
(:mod:`~sched.verdict.validation_days`), its held-out confirmation
(:mod:`~sched.verdict.held_out`); then the winner's policy file hashed and its setting named.
"""

from pathlib import Path

from sched import files, layout, setting
from sched.evaluate.errors import BenchmarkError
from sched.limits import MAX_POLICY_BYTES
from sched.verdict.candidacy import plan_gate
from sched.verdict.held_out import held_out_gate
from sched.verdict.summary import summarise
from sched.verdict.validation_days import validation_days_gate
from sched.verdict.winner import SELECTION_KEY


def write_outputs(
    out_dir, frame, cfg, specs, full, subset_summary=False, selection=None, extra=(), held_out=None,
    plan_run=None, validation_days=None,
):  # fmt: skip
    """per_scenario.csv, and for a full run resume.csv and winner.json, into ``out_dir``.

    ``subset_summary``: a run on part of the test seeds writes resume.csv too (every
    policy over that same subset; no winner.json: the winner is chosen on them all).
    ``selection``: the selection table the winner is chosen on (see :func:`summarise`).
    ``extra``: more (file name, frame) to write in the same set (the replay's windows.csv).
    ``held_out``: the held-out days' per-scenario table the winner is gated on
    (:func:`sched.verdict.held_out.held_out_gate`; the studio setting). ``plan_run``: plan's
    validation runs, one per setting of its candidacy (:func:`sched.verdict.candidacy.plan_gate`,
    before the held-out gate), which needs ``selection``. ``validation_days``: ``(table,
    period, lean)``, the validation days' per-scenario table, their [FIRST_DAY, LAST_DAY]
    and whether they decide alone
    (:func:`sched.verdict.validation_days.validation_days_gate`, after plan's gate and before the
    held-out one, which then confirms against the best rule of the validation days); its
    record becomes ``selection.days``.
    Everything is computed before anything is written, and the files are written as one
    set (:func:`sched.files.write_set`): winner.json (else resume.csv) renamed last,
    after its old version was removed, so a kill never leaves new tables beside an old
    winner. A learned winner's policy file is hashed into ``policy_sha256``.
    """
    out_dir = Path(out_dir)
    if full or subset_summary:
        summary, winner = summarise(frame, cfg, specs, selection if full else None)
        chosen = winner.pop(SELECTION_KEY, None)
        if plan_run is not None and full:
            if selection is None:
                raise BenchmarkError("the plan selection needs the selection table it was run beside")
            days = validation_days[0] if validation_days is not None else None
            plan_gate(winner, plan_run, selection, frame, cfg.benchmark, cfg.plan["choice_se"], days)
        best_rule = None
        if validation_days is not None and full:
            if chosen is None:
                raise BenchmarkError("the validation days weigh a winner chosen on a selection table")
            table, period, lean = validation_days
            chosen["days"] = validation_days_gate(
                winner, table, specs, cfg.benchmark, lean, period, selection
            )
            best_rule = chosen["days"]["best_rule"]
        if held_out is not None and full:
            margin = float(cfg.studio["confirm_margin_pct"])  # the held-out days' margin to the incumbent
            held_out_gate(winner, held_out, specs, cfg.benchmark, best_rule, frame, margin)
        if winner["policy_file"] is not None:  # winner.json binds the file it names (rank() checks it)
            try:
                winner["policy_sha256"] = files.sha256_file(
                    winner["policy_file"], BenchmarkError, MAX_POLICY_BYTES
                )
            except BenchmarkError as exc:
                raise BenchmarkError(f"the winner {winner['policy']}'s policy file {exc}") from None
        winner["setting"] = setting.of_config(cfg)  # the farm rank() matches a call against
        if chosen is not None:
            winner[SELECTION_KEY] = chosen
    items = [(out_dir / layout.PER_SCENARIO, files.csv_writer(frame))]
    items += [(out_dir / name, files.csv_writer(table)) for name, table in extra]
    if full or subset_summary:
        items.append((out_dir / layout.SUMMARY, files.csv_writer(summary)))
    if full:
        items.append((out_dir / layout.WINNER, files.json_writer(winner)))
    files.write_set(items)
    return [path for path, _ in items]
