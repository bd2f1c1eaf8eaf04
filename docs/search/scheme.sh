#!/usr/bin/env bash
# The equal-time head-to-head runs that chose the guided scheme (README "Policies", the
# cf_env/agents/ismcts.py docstring); their results are in docs/search/scheme/. Each run: agent A and
# opponent B (docs/search/variants.py factories) with two heuristic seats, 4 players double-9,
# single rounds, seed 0, SEARCH_MS=25 ms of CPU per decision. The shipped results ran one at a
# time at nice 19 on a 2-core machine shared with a training run (A-E) and other jobs (F-J);
# A-E played the previous checkpoints/selfplay-4p-d9 (commit c7e1a0a), G-J the reshipped one
# (now checkpoints/selfplay-4p-d9-v2).
# About 2.5 min of CPU per 100 deals on an idle core. OUT=/tmp/scheme bash docs/search/scheme.sh
set -eu
OUT=${OUT:-docs/search/scheme}
export PYTHONPATH=docs/search SEARCH_MS=${SEARCH_MS:-25} OPENBLAS_NUM_THREADS=1
PY=${PY:-python3}
mkdir -p "$OUT"
run() {  # name deals A B
  $PY -m training.evaluate --agent "variants:$3" --opponents "$4,heuristic,heuristic" --players 4 \
    --mixed --deals "$2" --seed 0 --single-round --no-progress --force --out "$OUT/$1" > /dev/null
}
run A_root_vs_plain 100 root variants:plain
run B_root_vs_rootc1 100 root variants:root_c1
run C_net4_vs_root 100 net4 variants:root
run D_root_vs_ppo 100 root ppo:checkpoints/selfplay-4p-d9-v2
run E_all_vs_root 100 all variants:root
run F_plainfollow_vs_plain 100 plain_follow variants:plain
run G_rootfollow_vs_root 100 root_follow variants:root
run H_rootc01_vs_root 100 root_c01 variants:root
run I_rootfollowc01_vs_rootfollow 200 root_follow_c01 variants:root_follow
run J_net4follow_vs_rootfollow 200 net4_follow variants:root_follow
