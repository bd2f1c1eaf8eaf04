"""Sample the CPU seconds of training runs, each a process tree, every 30 s into a TSV.

    python docs/training/xit-ablation-2/cpu_sampler.py OUT.tsv NAME=PID [NAME=PID ...]

Each line: unix time, name, CPU seconds (user + system) of the process and its descendants,
the waited-for children included (`/proc/<pid>/stat` fields 14-17). Stops when every tree is gone.
"""

import os
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float | None:
    total, stack, seen = 0, [pid], False
    while stack:
        p = stack.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seen = True
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            stack.extend(int(c) for c in task.read_text().split())
    return total / TICK if seen else None


def main() -> None:
    out = Path(sys.argv[1])
    arms = [(name, int(pid)) for name, pid in (a.split("=") for a in sys.argv[2:])]
    while True:
        now = int(time.time())
        lines = [(name, tree_cpu(pid)) for name, pid in arms]
        live = [(n, c) for n, c in lines if c is not None]
        if not live:
            return
        with out.open("a") as f:
            f.writelines(f"{now}\t{n}\t{c:.1f}\n" for n, c in live)
        time.sleep(30)


if __name__ == "__main__":
    main()
