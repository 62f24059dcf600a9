"""plan's candidacy in the workflow: its validation runs, under the main setting and elsewhere.

The main setting's candidacy runs plan at each setting of plan.grid the profile builds, on the
selection table's winner; under the robustness settings and the studio (config plan.elsewhere)
each setting tries its own grid on its own winner and validation seeds. These functions take a
:class:`sched.pipeline.plan.Plan`.
"""

import shlex

from sched import layout
from sched.evaluate.seeds import range_text, selection_seeds
from sched.learn.search.planner import elsewhere_names
from sched.pipeline.plan import STUDIO, candidacy_files


def main_dirs(plan):
    """The folders of plan's validation runs, one per setting of the main candidacy."""
    return [layout.plan_candidacy_dir(name) for name in plan.plan_settings]


def main_tables(plan):
    """What gather reads of the main setting's validation runs (candidacy_files)."""
    return candidacy_files(main_dirs(plan))


def runs_under(plan, setting):
    """Whether plan's candidacy runs under the robustness setting ``setting`` (plan.elsewhere)."""
    return bool(plan.plan_elsewhere) and setting in plan.robust


def grid_under(plan, setting):
    """The grid settings plan's candidacy tries under the robustness setting ``setting``."""
    return elsewhere_names(plan.cfg, plan.profile, setting) if runs_under(plan, setting) else []


def seeds_under(plan, setting):
    """The `--seeds` of plan's candidacy under a robustness setting: its first
    plan.validation_scenarios selection seeds, or all of them when it has fewer."""
    chosen = plan.frozen("plan", setting)
    return range_text(selection_seeds(chosen)[: chosen.plan["validation_scenarios"]])


def dirs_under(plan, setting):
    """The folders of plan's validation runs under a robustness setting (none without a candidacy)."""
    return [layout.plan_candidacy_dir(n, setting) for n in grid_under(plan, setting)]


def planners_table(setting):
    """The table of plan's run on a robustness setting's test seeds."""
    return f"{layout.robust_plan_dir(setting)}/{layout.PER_SCENARIO}"


def inputs_under(plan, setting):
    """What a robustness setting's benchmark reads of plan: its validation runs (candidacy_files)
    and the planners' table; none without a candidacy."""
    dirs = dirs_under(plan, setting)
    return candidacy_files(dirs) + [planners_table(setting)] if dirs else []


def args_under(plan, setting):
    """A robustness setting's benchmark's `--plan-selection DIR ... --planners CSV` ("" without)."""
    dirs = dirs_under(plan, setting)
    if not dirs:
        return ""
    table = shlex.quote(planners_table(setting))
    return f"--plan-selection {' '.join(map(shlex.quote, dirs))} --planners {table}"


def verdict_step(plan, setting):
    """The step whose config a robustness setting's benchmark reads: gather's, with plan's
    settings (verdict's) when its candidacy runs."""
    return "verdict" if runs_under(plan, setting) else "gather"


def studio_replay_step(plan):
    """The config step of the studio's replays: replay's, with the selection's and plan's
    (replay_plan's) when plan's candidacy runs under the studio."""
    return "replay_plan" if runs_under(plan, STUDIO) else "replay"


def studio_replay_inputs(plan):
    """What the studio's replays read to run plan: the selection table (plan's base) and the
    candidacy's validation runs (its setting); none without a candidacy."""
    dirs = dirs_under(plan, STUDIO)
    return [layout.robust_selection_table(STUDIO)] + candidacy_files(dirs) if dirs else []


def studio_replay_args(plan):
    """The studio's replays' `--policies` extension and `--plan-on CSV --plan-candidacy DIR ...`:
    (",plan", the options), or ("", "") without a candidacy."""
    dirs = dirs_under(plan, STUDIO)
    if not dirs:
        return "", ""
    return ",plan", (f"--plan-on {shlex.quote(layout.robust_selection_table(STUDIO))}"
                     f" --plan-candidacy {' '.join(map(shlex.quote, dirs))}")  # fmt: skip
