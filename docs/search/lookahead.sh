#!/usr/bin/env bash
# How `lookahead:` was chosen and measured (README "Policies", cf_env/agents/lookahead.py): each
# variant (docs/search/variants.py) against 3x the checkpoint it searches with, 4 players
# double-9, single rounds, seed 0, SEARCH_DETERMINIZATIONS=64 determinizations per decision
# (a count, so the figures are the same on any machine and for any WORKERS). Results in
# docs/search/lookahead/. LOOKAHEAD_CKPT (default checkpoints/selfplay-4p-d9-v3) must have a value
# head. DEALS=200 by default. OUT=/tmp/la bash docs/search/lookahead.sh
set -eu
OUT=${OUT:-docs/search/lookahead}
DEALS=${DEALS:-200}
WORKERS=${WORKERS:-2}
CKPT=${LOOKAHEAD_CKPT:-checkpoints/selfplay-4p-d9-v3}
export PYTHONPATH=docs/search LOOKAHEAD_CKPT=$CKPT
export SEARCH_DETERMINIZATIONS=${SEARCH_DETERMINIZATIONS:-64}
PY=${PY:-python3}
mkdir -p "$OUT"
for variant in ${VARIANTS:-lookahead_h0 lookahead_h1 lookahead_end lookahead_h0_prior}; do
  $PY -m training.evaluate --agent "variants:$variant" --opponents "ppo:$CKPT" --players 4 \
    --deals "$DEALS" --seed 0 --single-round --workers "$WORKERS" --no-progress --force \
    --out "$OUT/${variant}-vs-ppo-$DEALS.json" > /dev/null
done
