#!/bin/bash
# The target-strength grid of docs/training/xit-targets/README.md, one setting after another
# (each uses both cores). Run from the repository root in the activated venv:
#   DEALS=2000 OPPONENTS="greedy heuristic" bash docs/training/xit-targets/run.sh
set -e
D=${DEALS:-2000}
M="python docs/training/xit-targets/measure.py --deals $D --seed 1"
for OPP in ${OPPONENTS:-greedy}; do
  python -m training.evaluate --agent ppo:checkpoints/selfplay-4p-d9 --opponents $OPP --players 4 \
      --deals $D --seed 1 --single-round --workers 2 --batch off \
      --out docs/training/xit-targets/network-argmax-pergame-vs-$OPP-$D.json --force | tail -1
  for SETTING in ${SETTINGS:-"visits 1 64 argmax" "visits 0.25 64 sample" "visits 0.1 64 sample" \
      "improved 1 64 sample" "improved 3 64 sample" "visits 1 256 argmax" "improved 1 256 sample" \
      "visits 1 64 sample" "improved 0 1 sample"}; do
    set -- $SETTING
    if [ "$1" = visits ]; then
      $M --opponent $OPP --form visits --temperature $2 --iterations $3 --play $4
    else
      $M --opponent $OPP --form improved --scale $2 --iterations $3 --play $4
    fi
  done
  # The same search with greedy rollouts (every seat played by the greedy rule).
  $M --opponent $OPP --form visits --iterations 64 --play argmax --rollout greedy
done
