"""Tests for pipetop tune's plans inside an instrumented script
(pipetop_publish.plan, PIPETOP_PLAN).

Run with: /usr/bin/python3 -m unittest clients/python/test_plan.py
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from typing import Any, Dict, List, Optional, Tuple

from pipetop_publish import plan

HERE = os.path.dirname(os.path.abspath(__file__))
HAS_TORCH = importlib.util.find_spec("torch") is not None

# A small training script: python train.py EPOCHS WORKERS. Its training
# DataLoader is made once per epoch on the line marked TRAIN, num_workers
# given positionally (with WORKERS > 0 also prefetch_factor=3 and persistent
# workers); a validation loader is made on the line marked VAL. Each item
# carries torch.get_num_threads() of the process that made it and whether
# the script's own worker_init_fn ran there (it sets 3 threads). Each epoch
# prints a JSON line with both loaders' settings, the threads seen in the
# items and the main process's threads (the script sets 1 itself).
SCRIPT = """
import json, sys, torch
from torch.utils.data import DataLoader, Dataset
torch.set_num_threads(1)
EPOCHS, WORKERS = int(sys.argv[1]), int(sys.argv[2])
OWN_INIT = [0.0]

class Items(Dataset):
    def __len__(self): return 8
    def __getitem__(self, i): return torch.tensor([float(torch.get_num_threads()), OWN_INIT[0]])

def init(worker_id):
    OWN_INIT[0] = 1.0
    torch.set_num_threads(3)

def settings(loader):
    return {"workers": loader.num_workers, "prefetch": loader.prefetch_factor,
            "persistent": loader.persistent_workers, "pin": loader.pin_memory}

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
extra = {"prefetch_factor": 3, "persistent_workers": True} if WORKERS else {}
for epoch in range(EPOCHS):
    train = DataLoader(Items(), 4, False, None, None, WORKERS, worker_init_fn=init, **extra)  # TRAIN
    seen, own = set(), set()
    for x in train:
        seen.update(int(v) for v in x[:, 0].tolist())
        own.update(bool(v) for v in x[:, 1].tolist())
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    val = DataLoader(Items(), batch_size=4)  # VAL
    print(json.dumps({"train": settings(train), "val": settings(val), "threads": sorted(seen),
                      "own_init": sorted(own), "main_threads": torch.get_num_threads()}), flush=True)
"""


# Spawned workers (a fresh interpreter each, the plan loaded there too):
# python spawn.py prints the threads seen in the items of the loader on the
# line marked SPAWN and of another one, and the main's.
SPAWN = """
import json, torch
from torch.utils.data import DataLoader, Dataset
class D(Dataset):
    def __len__(self): return 4
    def __getitem__(self, i): return torch.tensor([torch.get_num_threads()])
if __name__ == "__main__":
    torch.set_num_threads(1)
    dl = DataLoader(D(), batch_size=2, num_workers=1, multiprocessing_context="spawn")  # SPAWN
    other = DataLoader(D(), batch_size=2, num_workers=1, multiprocessing_context="spawn")
    seen = lambda loader: sorted({int(v) for x in loader for v in x.flatten().tolist()})
    print(json.dumps({"threads": seen(dl), "other": seen(other), "main_threads": torch.get_num_threads()}))
"""


def _line(marker: str, script: str = SCRIPT) -> int:
    """The line of SCRIPT (as written) that carries marker."""
    for n, text in enumerate(textwrap.dedent(script).splitlines(), 1):
        if text.endswith("# " + marker):
            return n
    raise AssertionError(marker)


TRAIN = "train.py:%d" % _line("TRAIN")


def _run(doc: Any, epochs: int = 2, workers: int = 0, raw: Optional[str] = None, source: str = SCRIPT,
         **env: str) -> Tuple[subprocess.CompletedProcess, List[Dict[str, Any]], Dict[str, Any], str]:
    """Run source (as train.py) under the instrumentation with plan doc
    (raw: the plan file's text instead; None for both: no plan); (the
    process, its JSON lines, its plan report ({} when none), its work dir)."""
    d = tempfile.mkdtemp(prefix="ptplan", dir="/tmp")
    os.chmod(d, 0o700)
    script = os.path.join(d, "train.py")
    with open(script, "w") as f:
        f.write(textwrap.dedent(source))
    full = dict(os.environ, PYTHONPATH=HERE, PIPETOP_SOCKET_DIR=d, PIPETOP_SUMMARY_DIR=d, PIPETOP_PLAN_OUT=d, PIPETOP_BISECT_OUT=d,
                PIPETOP_STACKS_HZ="0", **env)
    full.pop("PIPETOP_PLAN", None)
    if doc is not None or raw is not None:
        full["PIPETOP_PLAN"] = os.path.join(d, "plan.json")
        with open(full["PIPETOP_PLAN"], "w") as f:
            f.write(raw if raw is not None else json.dumps(doc))
    args = [sys.executable, "-m", "pipetop_publish.auto", script, str(epochs), str(workers)]
    r = subprocess.run(args, env=full, capture_output=True, text=True, timeout=60)
    lines = [json.loads(s) for s in r.stdout.splitlines() if s.startswith("{")]
    return r, lines, _doc(d, "plan-"), d


def _doc(d: str, prefix: str) -> Dict[str, Any]:
    """The JSON file in d whose name starts with prefix ({} when none)."""
    for name in os.listdir(d):
        if name.startswith(prefix) and name.endswith(".json"):
            with open(os.path.join(d, name)) as f:
                return json.load(f)
    return {}


class TestPlanFile(unittest.TestCase):
    def _bad(self, text: str, want: str) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write(text)
            f.flush()
            with self.assertRaises(ValueError) as cm:
                plan.load(f.name)
            self.assertIn(want, str(cm.exception))

    def test_load_checks_fields(self) -> None:
        self._bad("{", "Expecting")
        self._bad('{"schema": "pipetop-plan/2"}', "schema")
        self._bad('{"schema": "pipetop-plan/1", "loader": {"num_workers": -1}}', "loader.num_workers=-1 is below 0")
        self._bad('{"schema": "pipetop-plan/1", "loader": {"num_workers": true}}', "is not a int")
        self._bad('{"schema": "pipetop-plan/1", "loader": {"workers": 2}}', "unknown field loader.workers")
        self._bad('{"schema": "pipetop-plan/1", "loader": {"site": "train.py"}}', "not FILE:LINE")
        self._bad('{"schema": "pipetop-plan/1", "threads": {"main": 0}}', "threads.main=0 is below 1")
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump({"schema": "pipetop-plan/1", "loader": {"site": "t.py:3", "num_workers": 0, "worker_threads": 1},
                       "threads": {"main": 2}}, f)
            f.flush()
            p = plan.load(f.name)
        self.assertEqual((p.site, p.args, p.worker_threads, p.main_threads), ("t.py:3", {"num_workers": 0}, 1, 2))

    def test_load_checks_video_threads_and_uint8(self) -> None:
        self._bad('{"schema": "pipetop-plan/1", "loader": {"video_threads": 0}}', "loader.video_threads=0 is below 1")
        self._bad('{"schema": "pipetop-plan/1", "loader": {"uint8": {"key": "[0]"}}}', "is not a list")
        self._bad('{"schema": "pipetop-plan/1", "loader": {"uint8": [{"key": "[0]", "scale": 2}]}}', "scale 1 or 255")
        self._bad('{"schema": "pipetop-plan/1", "loader": {"uint8": [{"key": "[0", "scale": 1}]}}', "is not a chain of [index]")
        self._bad('{"schema": "pipetop-plan/1", "loader": {"uint8": [{"key": "[0]", "scale": 1, "dtype": "int8"}]}}', "dtype one of")
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump({"schema": "pipetop-plan/1", "loader": {"video_threads": 2, "uint8": [{"key": "['obs'][0]", "scale": 255, "dtype": "float32"}]}}, f)
            f.flush()
            p = plan.load(f.name)
        self.assertEqual((p.video_threads, p.uint8), (2, [(["obs", 0], 255, "float32")]))

    def test_key_paths(self) -> None:
        self.assertEqual(plan.key_path(""), [])
        self.assertEqual(plan.key_path("['obs'][0]['cam 0']"), ["obs", 0, "cam 0"])
        for bad in ("[0", "obs", "[0]x", "[x]"):
            with self.assertRaises(ValueError):
                plan.key_path(bad)


@unittest.skipUnless(HAS_TORCH, "torch is not installed for %s" % sys.executable)
class TestUint8(unittest.TestCase):
    def setUp(self) -> None:
        import torch

        self.torch = torch
        plan.active = plan.Plan("plan.json", {}, {})
        plan.active.torch = torch
        self.addCleanup(setattr, plan, "active", None)

    def test_round_trip_is_exact(self) -> None:
        torch = self.torch
        img = torch.randint(0, 256, (2, 3, 16, 16)).float().div(255)  # what ToTensor makes of uint8 pixels
        raw = torch.randint(0, 256, (2, 16, 16, 3)).double()
        c = plan.Uint8Collate(lambda items: {"obs": (items[0], items[1]), "other": items[2]}, [(["obs", 0], 255, "float32"), (["obs", 1], 1, "float64")])
        sent = c([img, raw, "text"])
        self.assertEqual((sent["obs"][0].dtype, sent["obs"][1].dtype, sent["other"]), (torch.uint8, torch.uint8, "text"))
        back = c.restore(sent)
        self.assertTrue(torch.equal(back["obs"][0], img) and back["obs"][0].dtype == torch.float32)
        self.assertTrue(torch.equal(back["obs"][1], raw) and back["obs"][1].dtype == torch.float64)
        other = [img]
        self.assertIs(plan.Uint8Collate(lambda x: x, [(["missing"], 1, "float32")]).restore(other), other, "a key the batch lacks changes nothing")

    def test_applied_at_the_planned_loader(self) -> None:
        # The loader's workers send uint8; the training loop gets float
        # batches equal to the script's own.
        doc = {"schema": "pipetop-plan/1", "loader": {"site": TRAIN, "num_workers": 2, "uint8": [{"key": "", "scale": 1, "dtype": "float32"}]}}
        r, lines, report, d = _run(doc)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(report["applied"][0]["args"]["uint8"], 1)
        self.assertEqual(lines[0]["train"]["workers"], 2)
        shutil.rmtree(d, True)


@unittest.skipUnless(HAS_TORCH, "torch is not installed for %s" % sys.executable)
class TestOverride(unittest.TestCase):
    """Plan.override on DataLoader.__init__'s real signature, in process."""

    def _override(self, args: Dict[str, Any], args_in: Tuple[Any, ...], kwargs_in: Dict[str, Any]) -> Tuple[Any, Any, plan.Plan]:
        import torch
        from torch.utils.data import DataLoader

        p = plan.Plan("plan.json", dict(args, site="t.py:1"), {})
        p.torch = torch
        orig = getattr(DataLoader.__init__, "__wrapped__", DataLoader.__init__)
        a, k = p.override(orig, object(), ("/x/t.py", 1), args_in, kwargs_in)
        return a, k, p

    def test_positional_and_keyword(self) -> None:
        a, k, p = self._override({"num_workers": 3, "pin_memory": True}, ([1, 2], 4, False, None, None, 0), {"drop_last": True})
        self.assertEqual(a, ([1, 2], 4, False, None, None, 3))
        self.assertEqual(k, {"pin_memory": True, "drop_last": True})
        self.assertIn("pin_memory without CUDA: applied at t.py:1, does nothing", p.notes)

    def test_iterable_and_batch_sampler_noted(self) -> None:
        import torch

        class Stream(torch.utils.data.IterableDataset):
            def __iter__(self) -> Any:
                return iter(range(3))

        _, k, p = self._override({"num_workers": 2}, (Stream(),), {"batch_sampler": [[0, 1]]})
        self.assertEqual(k["num_workers"], 2)
        self.assertIn("IterableDataset at t.py:1: applied; num_workers changes how it shards", p.notes)
        self.assertIn("custom batch_sampler at t.py:1: applied; its batches are its own", p.notes)


@unittest.skipUnless(HAS_TORCH, "torch is not installed for %s" % sys.executable)
class TestPlans(unittest.TestCase):
    def test_applied_at_the_site_only(self) -> None:
        doc = {"schema": "pipetop-plan/1", "threads": {"main": 2},
               "loader": {"site": TRAIN, "num_workers": 2, "prefetch_factor": 4, "persistent_workers": True, "worker_threads": 2}}
        r, lines, report, d = _run(doc)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(lines), 2)
        for epoch in lines:  # the loader made anew each epoch gets the plan each time
            self.assertEqual(epoch["train"], {"workers": 2, "prefetch": 4, "persistent": True, "pin": False})
            self.assertEqual(epoch["val"], {"workers": 0, "prefetch": 2, "persistent": False, "pin": False})
            self.assertEqual(epoch["threads"], [2], "the plan's worker threads hold over the script's worker_init_fn")
            self.assertEqual(epoch["own_init"], [True], "the script's worker_init_fn still runs")
            self.assertEqual(epoch["main_threads"], 2)
        self.assertEqual(report["schema"], "pipetop-plan-report/1")
        self.assertEqual(report["applied"], [{"site": TRAIN, "loaders": 2, "args": {
            "num_workers": 2, "prefetch_factor": 4, "persistent_workers": True, "pin_memory": False, "worker_threads": 2}}])
        self.assertEqual(report["threads"], {"main": 2, "worker": 2})
        self.assertIn("the script's torch.set_num_threads(1) overridden by the plan: 2", report["notes"])
        shutil.rmtree(d, True)

    def test_spawned_workers(self) -> None:
        doc = {"schema": "pipetop-plan/1", "threads": {"main": 2},
               "loader": {"site": "train.py:%d" % _line("SPAWN", SPAWN), "worker_threads": 3}}
        r, lines, report, d = _run(doc, source=SPAWN)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(lines, [{"threads": [3], "other": [1], "main_threads": 2}], "the main threads stay out of the workers")
        self.assertEqual([n for n in os.listdir(d) if n.startswith("plan-")], ["plan-%d.json" % report["pid"]], "workers write none")
        shutil.rmtree(d, True)
        r, lines, report, d = _run(None, raw="[]", source=SPAWN)
        self.assertEqual(len([s for s in r.stderr.splitlines() if s.startswith("pipetop: plan")]), 1, "said once, not by the workers")
        shutil.rmtree(d, True)

    def test_refusals_are_notes(self) -> None:
        doc = {"schema": "pipetop-plan/1", "loader": {"site": TRAIN, "prefetch_factor": 4, "persistent_workers": True, "worker_threads": 1}}
        r, lines, report, d = _run(doc)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(lines[0]["train"], {"workers": 0, "prefetch": 2, "persistent": False, "pin": False})
        for what in ("prefetch_factor", "persistent_workers", "worker_threads"):
            self.assertIn("%s needs num_workers > 0: not applied at %s" % (what, TRAIN), report["notes"])
        shutil.rmtree(d, True)
        # The plan takes the script's workers away: its prefetch and
        # persistence go with them.
        doc = {"schema": "pipetop-plan/1", "loader": {"site": TRAIN, "num_workers": 0}}
        r, lines, report, d = _run(doc, workers=2)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(lines[0]["train"], {"workers": 0, "prefetch": 2, "persistent": False, "pin": False})
        self.assertEqual(report["applied"][0]["args"]["prefetch_factor"], None)
        self.assertIn("num_workers=0 at %s: the script's prefetch_factor=3 dropped" % (TRAIN,), report["notes"])
        self.assertIn("num_workers=0 at %s: the script's persistent_workers=true dropped" % (TRAIN,), report["notes"])
        shutil.rmtree(d, True)

    def test_missing_site_and_bad_plan(self) -> None:
        r, lines, report, d = _run({"schema": "pipetop-plan/1", "loader": {"site": "train.py:1", "num_workers": 2}})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(lines[0]["train"]["workers"], 0)
        self.assertEqual(report["applied"], [])
        self.assertEqual(len(report["notes"]), 1)
        self.assertRegex(report["notes"][0], r"^no DataLoader was made at train\.py:1 \(the script made its DataLoaders at train\.py:\d+(, train\.py:\d+)*\): nothing applied")
        shutil.rmtree(d, True)
        r, lines, report, d = _run(None, raw='{"schema": "pipetop-plan/1", "loader": {"num_workers": "4"}}')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(lines), 2)
        self.assertEqual(lines[0]["train"]["workers"], 0)
        msg = [s for s in r.stderr.splitlines() if s.startswith("pipetop: plan")]
        self.assertEqual(msg, ["pipetop: plan %s not applied: loader.num_workers=\"4\" is not a int" % os.path.join(d, "plan.json")])
        self.assertEqual(report, {})
        shutil.rmtree(d, True)

    def test_training_site_when_the_plan_names_none(self) -> None:
        r, lines, report, d = _run({"schema": "pipetop-plan/1", "loader": {"num_workers": 1}}, epochs=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([e["train"]["workers"] for e in lines], [0, 1, 1], "too late for the first epoch's loader")
        self.assertEqual(report["applied"][0]["loaders"], 2)
        self.assertTrue(report["notes"][0].startswith("no site in the plan: the training loader's, %s," % (TRAIN,)), report["notes"])
        shutil.rmtree(d, True)

    def test_bisect_file_names_the_site(self) -> None:
        doc = {"schema": "pipetop-plan/1", "loader": {"site": TRAIN, "num_workers": 2, "prefetch_factor": 3}}
        r, lines, report, d = _run(doc, epochs=100, PIPETOP_BISECT_PHASE="loader", PIPETOP_BISECT_SECONDS="1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(lines, [], "the loader phase exits in the first epoch")
        phase = _doc(d, "bisect-")
        loader = phase["loader"]
        self.assertEqual((loader["site"], loader["site_path"], loader["site_line"]),
                         (TRAIN, os.path.join(os.path.realpath(d), "train.py"), _line("TRAIN")))
        self.assertEqual(loader["args"], {"num_workers": 2, "prefetch_factor": 3, "persistent_workers": False, "pin_memory": False})
        self.assertGreater(phase["drained"]["batches"], 2)
        self.assertEqual(report["applied"][0]["loaders"], 1)
        shutil.rmtree(d, True)


if __name__ == "__main__":
    unittest.main()
