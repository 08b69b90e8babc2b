"""Tests of stagecheck.py on planted snapshots (python3 -m unittest in this folder)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stagecheck  # noqa: E402

MS = 1_000_000


def snapshot(wall_ms: float = 10, gpu_ms: float = 8, stages=None) -> dict:
    """A pipetop --json snapshot of a GPU run, in the fields stagecheck reads."""
    if stages is None:
        stages = [("data_wait", 1, None), ("h2d", 0.5, 0.4), ("forward", 3, 4), ("backward", 4, 3.2),
                  ("optim", 1, 0.4), ("other", 0.5, None)]
    return {
        "trainer": {"name": "t"},
        "summary": {
            "steps": 100, "wall_mean_ns": wall_ms * MS, "samples_per_sec": 6400, "steps_per_sec": 100,
            "has_gpu": True, "gpu_busy_mean_ns": gpu_ms * MS, "gpu_busy": min(1, gpu_ms / wall_ms),
            "stages": [{"name": n, "mean_ns": c * MS, "has_gpu": g is not None, "gpu_mean_ns": (g or 0) * MS}
                       for n, c, g in stages],
        },
        "verdict": {"kind": "balanced", "stage": "", "headline": "balanced", "next": "-"},
        "gpu": {"devices": [{"index": 0, "name": "NVIDIA H200",
                             "sm_activity": {"value": 63, "source": "GPM", "state": "ok"},
                             "kernel_active": {"value": 100, "source": "NVML kernel-active", "state": "ok"},
                             "sm_occupancy": {"value": None, "source": "GPM", "state": "not supported"}}]},
    }


class CheckTest(unittest.TestCase):
    def test_consistent_run_passes(self) -> None:
        self.assertEqual(stagecheck.check(snapshot(), need_gpu=True), [])

    def test_gpu_busy_over_the_step_fails(self) -> None:
        fails = stagecheck.check(snapshot(wall_ms=10, gpu_ms=12))
        self.assertEqual(len(fails), 1)
        self.assertIn("GPU busy 12.00 ms per step > step 10.00 ms", fails[0])

    def test_stage_gpu_time_over_the_step_fails(self) -> None:
        s = snapshot(gpu_ms=9, stages=[("forward", 9, 11), ("other", 1, None)])
        self.assertIn("stage forward: GPU 11.00 ms > step 10.00 ms", stagecheck.check(s))

    def test_stages_adding_up_past_the_step_fail(self) -> None:
        s = snapshot(stages=[("forward", 6, 4), ("backward", 6, 3)])
        self.assertIn("stages add up to 12.00 ms > step 10.00 ms", stagecheck.check(s))

    def test_within_tolerance_passes(self) -> None:
        self.assertEqual(stagecheck.check(snapshot(wall_ms=10, gpu_ms=10.4)), [])

    def test_missing_gpu_times(self) -> None:
        s = snapshot()
        s["summary"]["has_gpu"] = False
        self.assertEqual(stagecheck.check(s), [])
        self.assertEqual(stagecheck.check(s, need_gpu=True), ["no GPU stage times (CUDA events) in the summary"])

    def test_needed_stage(self) -> None:
        s = snapshot(stages=[("forward", 3, 2), ("comm", 4, None), ("other", 1, None)])
        self.assertEqual(stagecheck.check(s, need_stages=["comm"]), [])
        self.assertEqual(stagecheck.check(s, need_gpu=True, need_stages=["comm"]), ["stage comm has no GPU time (CUDA events)"])
        self.assertEqual(stagecheck.check(s, need_stages=["sync"]), ["no stage sync in the table (it has forward, comm, other)"])

    def test_no_trainer_or_steps(self) -> None:
        self.assertIn("no trainer", stagecheck.check({"trainer": None, "link": {"state": "none"}})[0])
        s = snapshot()
        s["summary"] = None
        self.assertEqual(stagecheck.check(s), ["no steps in the summary window"])


class DigestTest(unittest.TestCase):
    def test_digest_names_sources_and_goal(self) -> None:
        s = snapshot(wall_ms=10, gpu_ms=8)
        s["verdict"] = {"kind": "input-bound", "stage": "data_wait", "headline": "input-bound: ...",
                        "next": "raise --workers"}
        line = stagecheck.digest(s, "b64", goal=0.9)
        self.assertIn("b64: 6400.0 samples/s", line)
        self.assertIn("GPU busy 80 % (CUDA events)", line)
        self.assertIn("forward 3.00/4.00", line)
        self.assertIn("data_wait 1.00/-", line)
        self.assertIn("SM 63 % (GPM)", line)
        self.assertIn("kernel-active 100 % (NVML kernel-active)", line)
        self.assertNotIn("occupancy", line)  # not supported: left out, not shown as 0
        self.assertIn("NOT met (80 %), held back by data_wait; next: raise --workers", line)
        self.assertIn("met (95 %)", stagecheck.digest(snapshot(gpu_ms=9.5), "b64", goal=0.9))

    def test_main_exit_status(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            good, bad = os.path.join(d, "good.json"), os.path.join(d, "bad.json")
            with open(good, "w") as f:
                json.dump(snapshot(), f)
            with open(bad, "w") as f:
                json.dump(snapshot(gpu_ms=20), f)
            self.assertEqual(stagecheck.main([good, "--need-gpu"]), 0)
            self.assertEqual(stagecheck.main([bad]), 1)
            self.assertEqual(stagecheck.main([os.path.join(d, "missing.json")]), 1)


if __name__ == "__main__":
    unittest.main()
