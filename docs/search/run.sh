#!/usr/bin/env bash
# The search agents' cost and strength (4 players, double-9, single rounds, duplicate deals).
# Run from the repository root, on an otherwise idle machine:
#
#   bash docs/search/run.sh                 # everything (~5.3 CPU-hours; README "Policies")
#   PARTS=bench bash docs/search/run.sh     # only the µs-per-iteration rows (~1 min)
#   PARTS=curve WORKERS=2 bash docs/search/run.sh
#   SMOKE=1 OUT=/tmp/search bash docs/search/run.sh   # a handful of deals: checks the script only
#
# PARTS (default "bench curve targets"):
#   bench    python -m cf_env.tools.search_bench            -> $OUT/bench.json
#   curve    win rate vs iterations: ismcts and guided at 50, 200, 800 iterations vs 3x
#            heuristic, $DEALS (500) deals each, plus the checkpoint alone (0 iterations)
#                                                      -> $OUT/curve/*.json, $OUT/curve.png
#   targets  the strength targets at 100 ms of CPU per decision, $TARGET_DEALS (2000) deals:
#            guided vs 3x heuristic, guided vs 3x the checkpoint itself (the best shipped PPO
#            agent), plain ismcts vs 3x heuristic       -> $OUT/targets/*.json
# Every evaluation uses seed 0; the iteration-count runs give the same numbers for any WORKERS,
# the ms=100 runs do not (a time budget reaches a machine-dependent number of iterations).
# $OUT/search.json collects the figures README quotes; docs/search/plot.py draws curve.png.
set -eu
OUT=${OUT:-docs/search}
CKPT=${CKPT:-checkpoints/selfplay-4p-d9-v2}
WORKERS=${WORKERS:-$(nproc)}
DEALS=${DEALS:-500}
TARGET_DEALS=${TARGET_DEALS:-2000}
MS=${MS:-100}
PARTS=${PARTS:-bench curve targets}
BENCH_POSITIONS=${BENCH_POSITIONS:-40}
if [ -n "${SMOKE:-}" ]; then DEALS=2; TARGET_DEALS=2; MS=5; BENCH_POSITIONS=3; fi
# One core per worker: numpy's BLAS threads would compete with the other workers.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1
PY=${PY:-python3}
mkdir -p "$OUT"

evaluate() {  # name agent opponent deals
  local name=$1 agent=$2 opponent=$3 deals=$4
  local start=$(date +%s)
  $PY -m training.evaluate --agent "$agent" --opponents "$opponent" --players 4 --deals "$deals" \
    --seed 0 --single-round --workers "$WORKERS" --no-progress --force --out "$OUT/$name.json" > /dev/null
  echo "$name: $(( $(date +%s) - start )) s" | tee -a "$OUT/times.txt"
}

for part in $PARTS; do
  case $part in
    bench)
      $PY -m cf_env.tools.search_bench --positions "$BENCH_POSITIONS" --json "$OUT/bench.json" \
        | tee "$OUT/bench.txt" ;;
    curve)
      mkdir -p "$OUT/curve"
      evaluate curve/ppo-0 "ppo:$CKPT" heuristic "$DEALS"
      for n in 50 200 800; do
        evaluate "curve/ismcts-$n" "ismcts:$n" heuristic "$DEALS"
        evaluate "curve/guided-$n" "guided:$CKPT:$n" heuristic "$DEALS"
      done ;;
    targets)
      mkdir -p "$OUT/targets"
      evaluate targets/guided-vs-heuristic "guided:$CKPT:ms=$MS" heuristic "$TARGET_DEALS"
      evaluate targets/guided-vs-ppo "guided:$CKPT:ms=$MS" "ppo:$CKPT" "$TARGET_DEALS"
      evaluate targets/ismcts-vs-heuristic "ismcts:ms=$MS" heuristic "$TARGET_DEALS" ;;
    *) echo "unknown part $part (bench, curve, targets)" >&2; exit 2 ;;
  esac
done

$PY - "$OUT" <<'PY'
"""Collect the evaluations into search.json: agent win rate and agent - opponent per run."""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
rows = []
for path in sorted(out.glob("*/*.json")):
    result = json.loads(path.read_text())
    if "policies" not in result:
        continue
    me, diff = result["policies"][0], result["differences"][0]
    rows.append({"run": f"{path.parent.name}/{path.stem}", "agent": me["name"],
                 "opponent": diff["opponent"], "deals": result["deals"],
                 "win_rate": me["win_rate"], "minus_opponent": diff["win_rate"],
                 "round_score": me["round_score"]})
(out / "search.json").write_text(json.dumps({"rows": rows}, indent=1) + "\n")
for r in rows:
    w, d = r["win_rate"], r["minus_opponent"]
    print(f"{r['run']:32s} {100 * w['mean']:5.1f}% [{100 * w['ci_low']:.1f}, {100 * w['ci_high']:.1f}]"
          f"  minus {r['opponent']}: {100 * d['mean']:+5.1f} [{100 * d['ci_low']:+.1f}, "
          f"{100 * d['ci_high']:+.1f}]  ({r['deals']} deals)")
PY
if [ -d "$OUT/curve" ]; then $PY docs/search/plot.py "$OUT"; fi
