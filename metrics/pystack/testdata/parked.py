"""Threads parked at known lines and one spinning in pure Python, for the
stack reader's tests (standard library only, any CPython 3.10 on).

usage: parked.py DUMP [--depth N] [--import MODULE] [--churn]

Once every parked thread waits, it writes its own view of every thread
(sys._current_frames(): each frame's qualified name, file and line,
innermost first) to DUMP as JSON, then idles until it is killed. The
spinning thread keeps the GIL: nothing else runs Python code, but with
--churn a thread that calls and returns from churn() all the time, to read
stacks while they change.
"""
import importlib
import json
import os
import sys
import threading
import time

release = threading.Event()


def descend(n, then):
    """Calls then() n frames deeper."""
    if n <= 0:
        return then()
    return descend(n - 1, then)


def wait_here():
    release.wait()


class Holder:
    def park(self):
        wait_here()


def sleeper():
    while True:
        time.sleep(3600)


def hot_spin():
    n = 0
    while True:
        n += 1


def churn(n):
    if n > 0:
        churn(n - 1)


def churner():
    while True:
        for depth in range(30):
            churn(depth)


def frame_name(frame):
    code = frame.f_code
    return getattr(code, "co_qualname", code.co_name)


def describe(frame):
    frames = []
    while frame is not None:
        frames.append({"name": frame_name(frame), "file": frame.f_code.co_filename,
                       "line": frame.f_lineno or 0})
        frame = frame.f_back
    return frames


def parked(frames):
    """Whether a thread's stack shows it waiting where it was sent."""
    top = frames[0]["name"] if frames else ""
    return top.endswith("wait") or top == "sleeper"


def main():
    out = sys.argv[1]
    depth, module, churning = 0, None, False
    args = sys.argv[2:]
    while args:
        if args[0] == "--churn":
            churning, args = True, args[1:]
            continue
        flag, value, args = args[0], args[1], args[2:]
        if flag == "--depth":
            depth = int(value)
        elif flag == "--import":
            module = value
    if module:
        importlib.import_module(module)
    targets = {"parked-holder": Holder().park, "parked-plain": wait_here,
               "sleeper": sleeper, "spinner": hot_spin}
    if churning:
        targets["churner"] = churner
    threads = [threading.Thread(target=descend, args=(depth, fn), name=name, daemon=True)
               for name, fn in targets.items()]
    for t in threads:
        t.start()
    idents = {t.ident: t for t in threads if t.name not in ("spinner", "churner")}
    while True:
        frames = sys._current_frames()
        if all(parked(describe(frames.get(i))) for i in idents):
            break
        time.sleep(0.01)
    frames = sys._current_frames()
    dump = [{"ident": t.ident, "native_id": t.native_id, "name": t.name,
             "frames": describe(frames[t.ident])} for t in threads]
    with open(out + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "threads": dump}, f)
    os.rename(out + ".tmp", out)
    idle()


def idle():
    while True:
        time.sleep(3600)


main()
