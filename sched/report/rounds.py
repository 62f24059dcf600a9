"""The report's stages of learning: each seed's warm start, its rounds of expert iteration and
its final policy, each against atc-tuned and against the stage before, on the test scenarios.

Read from the benchmark's ``per_scenario.csv``: ``ppo-<S>-warm`` (the student of the gated
teacher on its rule), ``ppo-<S>-r<R>`` (round R, ``sched.learn.search.iterate``) and ``ppo-<S>`` (PPO
after the last round). Paired bootstrap intervals with the summary's resamples and level. The
stages were chosen on validation scenarios (a round that did worse there kept its start's
weights); these test scenarios only confirm.
"""

from sched.evaluate.per_scenario import matrix
from sched.evaluate.policies import is_ppo, is_round, ppo_seed, round_of, warm_name
from sched.evaluate.statistics import bootstrap_counts, paired_difference
from sched.report.format import ci, level_text, pct

#: Issue 25's goals: round 1 at most -1.5 % against the warm start, each later round at most 0
#: against the one before, the final policy at most -3 % against its warm start.
GOAL_ROUND1_PCT = -1.5
GOAL_FINAL_PCT = -3.0


def stages(twt, seed):
    """The names of seed ``seed``'s stages present in ``twt``, in order: warm start, rounds, final."""
    rounds = sorted((n for n in twt if is_round(n) and ppo_seed(n) == seed), key=round_of)
    out = [warm_name(seed)] if warm_name(seed) in twt else []
    return out + rounds + ([f"ppo-{seed}"] if f"ppo-{seed}" in twt else [])


def rounds_section(cfg, per):
    """'### Stages of learning': a table per seed (empty without a round in ``per``)."""
    seeds, twt = matrix(per)
    if not any(is_round(n) for n in twt):
        return []
    b = cfg.benchmark
    lv = level_text(b["ci_level"])
    counts = bootstrap_counts(len(seeds), b["bootstrap_resamples"], b["bootstrap_seed"])
    ref = "atc-tuned" if "atc-tuned" in twt else "atc"

    def diff(a, c):
        d, lo, hi = paired_difference(twt[a], twt[c], counts, b["ci_level"])
        return d, lo, hi, f"{pct(d, 2)} {ci(lo, hi, 2)}"

    lines = [
        "### Stages of learning: warm start, rounds of expert iteration, PPO",
        "",
        f"Each stage of each training seed on the {len(seeds)} test scenarios: the warm start "
        f"(ppo-<S>-warm, the student of the gated teacher on {cfg.train.teacher_base}), "
        f"each round of expert iteration (ppo-<S>-r<R>: the gated teacher on the policy of the round "
        f"before, its base and rollout continuation, distilled into the next policy; docs/learning.md) "
        f"and the final policy (ppo-<S>, PPO from the last round). Mean total weighted tardiness (k w·s), "
        f"the difference with {ref} and with the stage before ({lv} paired bootstrap intervals; negative "
        f"is better). Every stage was chosen on validation scenarios; these only confirm.",
        "",
        f"| stage | mean (k w·s) | vs {ref} [{lv} CI] | vs the stage before [{lv} CI] |",
        "|---|---:|---:|---:|",
    ]
    goals = {"round 1": [0, 0], "later rounds": [0, 0], "final": [0, 0]}
    for seed in sorted({ppo_seed(n) for n in twt if is_ppo(n) or is_round(n)}):
        names = stages(twt, seed)
        for i, name in enumerate(names):
            prev = diff(name, names[i - 1]) if i else None
            before = prev[3] if prev else "-"
            lines.append(f"| {name} | {twt[name].mean() / 1e3:.2f} | {diff(name, ref)[3]} | {before} |")
            if prev and is_round(name):
                key = "round 1" if round_of(name) == 1 else "later rounds"
                ok = prev[0] <= GOAL_ROUND1_PCT and prev[2] < 0 if key == "round 1" else prev[0] <= 0
                goals[key][0] += int(ok)
                goals[key][1] += 1
        if len(names) >= 2 and names[0] == warm_name(seed) and names[-1] == f"ppo-{seed}":
            d, _, hi, _ = diff(names[-1], names[0])
            goals["final"][0] += int(d <= GOAL_FINAL_PCT and hi < 0)
            goals["final"][1] += 1
    r1, later, final = goals["round 1"], goals["later rounds"], goals["final"]
    lines += [
        "",
        f"Goals (issue 25) met: round 1 at most {GOAL_ROUND1_PCT:g} % against the warm start with the "
        f"interval below zero, {r1[0]} of {r1[1]}; every later round at most 0 against the round before, "
        f"{later[0]} of {later[1]}; the final policy at most {GOAL_FINAL_PCT:g} % against its warm start "
        f"with the interval below zero, {final[0]} of {final[1]}.",
        "",
    ]
    return lines
