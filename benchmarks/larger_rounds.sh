#!/usr/bin/env bash
# Rounds of expert iteration with more labels than the workflow's, after a workflow run
# (docs/learning.md, "Targets, continuations and the label yield"):
#
#   bash benchmarks/larger_rounds.sh SEED [SCENARIOS [OUT]]
#
# From results/train/seed-SEED/warm_start.pt (the workflow's warm start), round 1 labels
# SCENARIOS (default 50) training scenarios with the gated teacher on the warm start
# (`sched teach --round 1`, the config's other round settings: results/config/teach.yaml),
# is distilled from the warm start (`sched distill`, results/config/distill.yaml: the
# config's round target) and kept only when better on the validation scenarios; round 2
# labels the next SCENARIOS seeds with round 1 as base and is distilled from round 1 on both
# rounds' labels. OUT (default results/larger-rounds/seed-SEED) gets the label files, the
# two policy files and each command's log (its last line: the teacher's statistics, the
# distillation's summary). Benchmark them on the test seeds afterwards with
# `sched benchmark --policy-file ppo-SEED-r1=OUT/round-1.pt ...` (test seeds choose nothing:
# each round was kept or not on validation). Run it from the repository root.
set -euo pipefail
seed=${1:?usage: larger_rounds.sh SEED [SCENARIOS [OUT]]}
n=${2:-50}
out=${3:-results/larger-rounds/seed-$seed}
mkdir -p "$out"
cfg=results/config/teach-rounds-$n.yaml
python - "$n" "$cfg" <<'EOF'
import sys, yaml
n, path = int(sys.argv[1]), sys.argv[2]
with open("results/config/teach.yaml") as fh:
    c = yaml.safe_load(fh)
c["train"]["round_scenarios"] = n
with open(path + ".tmp", "w") as fh:
    yaml.safe_dump(c, fh)
import os
os.replace(path + ".tmp", path)
EOF
warm=results/train/seed-$seed/warm_start.pt
python -m sched --config "$cfg" teach --round 1 --policy "$warm" --out "$out/round-1.npz" --no-progress \
    > "$out/teach-1.log" 2>&1
python -m sched --config results/config/distill.yaml distill --labels "$out/round-1.npz" --start "$warm" \
    --seed "$seed" --stage round-1 --out "$out/round-1.pt" --threads 1 --no-progress > "$out/distill-1.log" 2>&1
python -m sched --config "$cfg" teach --round 2 --policy "$out/round-1.pt" --out "$out/round-2.npz" --no-progress \
    > "$out/teach-2.log" 2>&1
python -m sched --config results/config/distill.yaml distill --labels "$out/round-1.npz" "$out/round-2.npz" \
    --start "$out/round-1.pt" --seed "$seed" --stage round-2 --out "$out/round-2.pt" --threads 1 --no-progress \
    > "$out/distill-2.log" 2>&1
tail -n 1 "$out"/teach-1.log "$out"/distill-1.log "$out"/teach-2.log "$out"/distill-2.log
