#!/usr/bin/env python3
"""pace_nodes.py PORT N --out FILE [--limit S] [--reload-pid PID --reload-after K]:
N nodes, 127.1.0.1 .. 127.1.0.N (a node is its address), ask for
/config/worker on 127.0.0.1:PORT, one after the other, each waiting for its
answer, so that the gate paces them in that order. Then, in rounds, every
node not admitted yet asks again, the LAST of the line first (retry timing
must not buy a place), until all are admitted or --limit seconds pass.
Writes to FILE one line per admission: "ROUND NODE" (round 0: the first
asks). With --reload-pid, sends SIGHUP to PID once K nodes are admitted
(the line must survive it). Bounded in nodes and time."""
import argparse, os, signal, time
from pace_node import fetch

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("n", type=int)
ap.add_argument("--out", required=True)
ap.add_argument("--limit", type=float, default=40)
ap.add_argument("--gap", type=float, default=0.5)
ap.add_argument("--reload-pid", type=int)
ap.add_argument("--reload-after", type=int, default=0)
ap.add_argument("--round-file", help="written once the first round (every node's first ask) is over")
a = ap.parse_args()
assert 1 <= a.n <= 250 and 0 < a.limit <= 120

def ask(i):
    return fetch("127.1.0.%d" % i, a.port)

out = open(a.out, "w", buffering=1)
waiting = list(range(1, a.n + 1))
start, rnd, admitted, reloaded = time.monotonic(), 0, 0, False
while waiting and time.monotonic() - start < a.limit:
    still = []
    for i in (waiting if rnd == 0 else reversed(waiting)):
        status, reason = ask(i)
        if status == 200:
            out.write("%d %d\n" % (rnd, i))
            admitted += 1
        elif status == 503 and reason == "Paced":
            still.append(i)
        else:
            out.write("error %d %d %s\n" % (i, status, reason))
            still.append(i)
    waiting = sorted(still)
    if rnd == 0 and a.round_file:
        open(a.round_file, "w").write("%d admitted\n" % admitted)
    if a.reload_pid and not reloaded and admitted >= a.reload_after and rnd >= 1:
        os.kill(a.reload_pid, signal.SIGHUP)
        reloaded = True
    rnd += 1
    time.sleep(a.gap)
out.write("done %d waiting\n" % len(waiting))
