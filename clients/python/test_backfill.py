"""Tests of the backfill: the steps a publisher finished before a viewer
attached, sent to a viewer whose hello accepts them.

Run with: /usr/bin/python3 -m unittest discover -s clients/python
"""

from __future__ import annotations

import json
import time
import unittest
from typing import Any, Dict, List
from unittest import mock

from pipetop_publish import server
from test_pipetop_publish import PublisherCase, Viewer, wait_for


def hello(*accepts: str) -> bytes:
    return (json.dumps({"type": "hello", "v": 1, "hello": {"role": "viewer", "accepts": list(accepts)}}) + "\n").encode()


def numbers(frames: List[Dict[str, Any]], typ: str) -> List[int]:
    return [s["step"] for f in frames if f["type"] == typ for s in f["steps"]]


class TestBackfill(PublisherCase):
    def attach(self, pub: Any, *accepts: str) -> Viewer:
        v = Viewer(pub.path, greet=False)
        self.addCleanup(v.close)
        v.sock.sendall(hello(*accepts))
        self.assertEqual(v.frame()["type"], "hello")
        return v

    def steps(self, pub: Any, n: int) -> None:
        for _ in range(n):
            pub.step(samples=1)

    def settle(self, pub: Any) -> None:
        """Wait until the server thread took every step."""
        wait_for(lambda: not pub._queue, "the server to drain the queue")
        time.sleep(0.12)  # a flush after the drain

    def test_backfill_then_live_steps_each_once(self) -> None:
        pub = self.publisher()
        self.steps(pub, 30)
        self.settle(pub)
        fill = self.attach(pub, "progress", "backfill")
        old = self.attach(pub, "progress")  # an older pipetop
        time.sleep(0.1)
        self.steps(pub, 5)
        pub.close()
        got, prior = fill.all_frames(), old.all_frames()
        self.assertEqual(numbers(got, "backfill"), list(range(30)))
        first = next(f["type"] for f in got if f["type"] in ("steps", "backfill"))
        self.assertEqual(first, "backfill")
        self.assertEqual(numbers(got, "steps"), list(range(30, 35)))
        self.assertEqual(numbers(prior, "backfill"), [])
        self.assertEqual(numbers(prior, "steps"), list(range(30, 35)))

    def test_bounded_by_count_and_time(self) -> None:
        pub = self.publisher()
        self.steps(pub, server.BACKFILL_STEPS + 100)
        self.settle(pub)
        got = numbers(self.attach(pub, "backfill").frames_for(0.5), "backfill")
        self.assertEqual(got, list(range(100, server.BACKFILL_STEPS + 100)))
        with mock.patch.object(server, "BACKFILL_WINDOW_NS", 150_000_000):
            pub = self.publisher(name="u")
            self.steps(pub, 5)
            time.sleep(0.4)
            self.steps(pub, 5)
            self.settle(pub)
            got = numbers(self.attach(pub, "backfill").frames_for(0.5), "backfill")
        self.assertEqual(got, list(range(5, 10)))

    def test_only_steps_of_the_current_stage_list(self) -> None:
        pub = self.publisher()
        self.steps(pub, 3)
        with pub.stage("augment"):
            pass
        self.steps(pub, 4)
        self.settle(pub)
        v = self.attach(pub, "backfill")
        self.assertIn("augment", self.hello_stages(pub))
        self.assertEqual(numbers(v.frames_for(0.3), "backfill"), [3, 4, 5, 6])

    def hello_stages(self, pub: Any) -> List[str]:
        v = Viewer(pub.path)
        self.addCleanup(v.close)
        return v.frame()["hello"]["stages"]

    def test_before_the_first_aggregate(self) -> None:
        pub = self.publisher()
        self.steps(pub, 20)
        self.settle(pub)
        v = self.attach(pub, "agg", "backfill")
        for _ in range(30):
            self.steps(pub, 10)
            time.sleep(0.05)
        pub.close()
        frames = [f for f in v.all_frames() if f["type"] in ("steps", "backfill", "agg")]
        self.assertEqual(frames[0]["type"], "backfill")
        raw = numbers(frames, "backfill") + numbers(frames, "steps")
        agged = sum(f["agg"]["steps"] for f in frames if f["type"] == "agg")
        self.assertEqual(len(raw), len(set(raw)))
        self.assertEqual(len(raw) + agged, 320)
        self.assertEqual(numbers(frames, "backfill"), list(range(20)))

    def stacks_body(self, t: int) -> Dict[str, Any]:
        return {"t": t, "interval_ns": 1_000_000_000, "hz": 100, "frames": [{"name": "f", "file": "a.py", "line": 1}],
                "rows": [{"role": "train", "stage": "forward", "stack": [0], "n": 100, "ns": 1_000_000_000}]}

    def test_stacks_of_the_window_after_the_steps(self) -> None:
        pub = self.publisher()
        now = time.time_ns()
        for k in (70, 3, 2, 1):  # seconds ago: the first is out of the window
            pub.stacks(self.stacks_body(now - k * 1_000_000_000))
        self.steps(pub, 4)
        self.settle(pub)
        both = self.attach(pub, "stacks", "backfill")
        steps_only = self.attach(pub, "backfill")
        live_only = self.attach(pub, "stacks")  # an older pipetop
        time.sleep(0.1)
        pub.stacks(self.stacks_body(now))
        self.settle(pub)
        pub.close()
        got = [f for f in both.all_frames() if f["type"] in ("backfill", "stacks")]
        self.assertEqual([f["type"] for f in got], ["backfill", "stacks", "stacks", "stacks", "stacks"])
        self.assertEqual([f["stacks"]["t"] for f in got[1:]], [now - k * 1_000_000_000 for k in (3, 2, 1, 0)])
        self.assertEqual([f["type"] for f in steps_only.all_frames() if f["type"] == "stacks"], [])
        self.assertEqual([f["stacks"]["t"] for f in live_only.all_frames() if f["type"] == "stacks"], [now])


if __name__ == "__main__":
    unittest.main()
