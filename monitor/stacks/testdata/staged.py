"""A stdlib-only process that leaves its stacks to pipetop: it sets up the
stage word, says where it is, and spins in hot_function in stage forward,
--depth calls deep (1: called from main); a forked child plays a
DataLoader worker stuck in a slow fetch (fetch_hot). With --inside-after S
it starts sampling its own stacks S seconds in, as when a viewer was
refused the read from outside."""

import argparse
import json
import os
import threading
import time

from pipetop_publish import stageword


def hot_function():
    n = 0
    while True:
        n += sum(range(200))


def descend(depth):
    if depth <= 1:
        hot_function()
    descend(depth - 1)


def fetch_hot():
    while True:
        sum(range(200))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--inside-after", type=float, default=0)
    args = ap.parse_args()
    word = stageword.setup(("forward", "backward"))
    stageword.set_stage("forward")
    if os.fork() == 0:
        stageword.set_worker(0)
        stageword.set_typical(1000)
        stageword.set_fetch(time.perf_counter_ns() - 10**9)
        fetch_hot()
    if args.inside_after > 0:
        threading.Timer(args.inside_after, stageword.ask_inside, ("refused in the test",)).start()
    print(json.dumps({"word": word, "tid": threading.get_native_id(), "pid": os.getpid()}), flush=True)
    descend(args.depth)


main()
