"""Tests for pipetop bisect's phases inside an instrumented script
(pipetop_publish.bisect, PIPETOP_BISECT_PHASE).

Run with: /usr/bin/python3 -m unittest discover -s clients/python
"""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from typing import Any, Dict, List, Tuple

from pipetop_publish import bisect

HERE = os.path.dirname(os.path.abspath(__file__))
HAS_TORCH = importlib.util.find_spec("torch") is not None

# A small training script: python SCRIPT OUT EPOCHS KIND [STEPS]. KIND: map
# (40 items, batches of 4 from 2 workers, a validation loader of 5 batches
# from 1 worker), inline (the same, both loaders made anew each epoch by one
# helper function, the training one inline in the for statement), iterable
# (an IterableDataset without __len__) or noloader.
# Each worker start appends to OUT/train or OUT/val; each epoch prints a
# JSON line with the id() of every training batch; the end prints whether
# the parameters changed.
SCRIPT = """
import json, os, sys, torch
from torch.utils.data import DataLoader, Dataset, IterableDataset
torch.set_num_threads(1)
OUT, EPOCHS, KIND = sys.argv[1], int(sys.argv[2]), sys.argv[3]
STEPS = int(sys.argv[4]) if len(sys.argv) > 4 else 0

class Items(Dataset):
    def __init__(self, n): self.n = n
    def __len__(self): return self.n
    def __getitem__(self, i):
        if KIND == "files":  # each item read from a file of OUT/data
            with open(os.path.join(OUT, "data", "%d.bin" % (i % 5)), "rb") as f:
                f.read()
        return torch.full((4,), float(i)), torch.tensor([float(i)])

class Stream(IterableDataset):
    def __iter__(self):
        for i in range(40):
            yield torch.full((4,), float(i)), torch.tensor([float(i)])

def counter(name):
    def init(worker_id):
        with open(os.path.join(OUT, name), "a") as f:
            f.write("%d\\n" % worker_id)
    return init

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
w0 = model.weight.detach().clone()

def train_step(x, y):
    loss = (model(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.requires_grad

if KIND == "noloader":
    for _ in range(3):
        train_step(torch.randn(4, 4), torch.randn(4, 1))
else:
    def make(ds, workers, name):
        return DataLoader(ds, batch_size=4, num_workers=workers, worker_init_fn=counter(name))
    train_ds, val_ds = Items(40), Items(20)
    if KIND in ("map", "files"):
        train, val = make(train_ds, 2, "train"), make(val_ds, 1, "val")
    else:
        train, val = DataLoader(Stream(), batch_size=4), None
    steps = 0
    for epoch in range(EPOCHS):
        ids, grad = [], set()
        if KIND == "inline":
            val = make(val_ds, 1, "val")
        for x, y in (make(train_ds, 2, "train") if KIND == "inline" else train):
            ids.append(id(x))
            grad.add(train_step(x.to("cpu"), y))
            steps += 1
            if steps == STEPS:
                break
        vals = []
        if val is not None:
            with torch.no_grad():
                for x, y in val:
                    vals.append(x[0, 0].item())
        print(json.dumps({"epoch": epoch, "ids": ids, "val": vals, "grad": sorted(grad)}), flush=True)
        if steps == STEPS:
            break
print(json.dumps({"changed": not torch.equal(w0, model.weight)}), flush=True)
"""


def _run(phase: str, kind: str = "map", epochs: int = 3, steps: int = 0, **env: str) -> Tuple[subprocess.CompletedProcess, str, Dict[str, Any]]:
    """Run SCRIPT under the instrumentation in phase; (the process, its
    work dir, its phase file, {} when none)."""
    d = tempfile.mkdtemp(prefix="ptbisect", dir="/tmp")
    os.chmod(d, 0o700)
    os.mkdir(os.path.join(d, "data"))
    for i in range(5):
        with open(os.path.join(d, "data", "%d.bin" % i), "wb") as f:
            f.write(b"x" * 64)
    script = os.path.join(d, "train.py")
    with open(script, "w") as f:
        f.write(textwrap.dedent(SCRIPT))
    full = dict(os.environ, PYTHONPATH=HERE, PIPETOP_SOCKET_DIR=d, PIPETOP_SUMMARY_DIR=d, PIPETOP_BISECT_OUT=d,
                PIPETOP_BISECT_PHASE=phase, PIPETOP_RECORD=os.path.join(d, "run.pipetop"), **env)
    args = [sys.executable, "-m", "pipetop_publish.auto", script, d, str(epochs), kind] + ([str(steps)] if steps else [])
    r = subprocess.run(args, env=full, capture_output=True, text=True, timeout=60)
    files = [n for n in os.listdir(d) if n.startswith("bisect-") and n.endswith(".json")]
    doc: Dict[str, Any] = {}
    if files:
        with open(os.path.join(d, files[0])) as f:
            doc = json.load(f)
    return r, d, doc


def _lines(r: subprocess.CompletedProcess) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def _starts(d: str, name: str) -> int:
    """Worker starts the script counted in d/name."""
    try:
        with open(os.path.join(d, name)) as f:
            return len(f.read().split())
    except FileNotFoundError:
        return 0


def _frames(d: str, kind: str) -> List[Dict[str, Any]]:
    """The frames of one type in d's recording."""
    out = []
    with gzip.open(os.path.join(d, "run.pipetop"), "rt") as f:
        for line in f:
            entry = json.loads(line)
            frame = entry.get("frame", {})
            if frame.get("type") == kind:
                out.append(frame[kind])
    return out


class TestPieces(unittest.TestCase):
    def test_nbytes_walks_batches(self) -> None:
        class Arr:
            nbytes = 100

        @dataclasses.dataclass
        class Batch:
            x: Any
            meta: Any

        class Custom:
            def __init__(self) -> None:
                self.a = [Arr(), (Arr(), {"b": Arr()})]
                self.name = "text"

        self.assertEqual(bisect.nbytes((Arr(), [Arr(), {"k": Arr()}])), 300)
        self.assertEqual(bisect.nbytes(Batch(Arr(), {"id": 3, "s": "x"})), 100)
        self.assertEqual(bisect.nbytes(Custom()), 300)
        deep: Any = Arr()
        for _ in range(20):
            deep = [deep]
        self.assertEqual(bisect.nbytes(deep), 0, "the walk is bounded")

    def test_from_env(self) -> None:
        self.assertIsNone(bisect.from_env({}))
        self.assertIsNone(bisect.from_env({"PIPETOP_BISECT_PHASE": " "}))
        ph = bisect.from_env({"PIPETOP_BISECT_PHASE": "cached", "PIPETOP_BISECT_CACHE_MB": "2", "PIPETOP_BISECT_CACHE_BATCHES": "0",
                              "PIPETOP_BISECT_SECONDS": "soon", "RANK": "3"})
        self.assertEqual((ph.name, ph.rank, ph.max_batches, ph.cache["cap_bytes"], ph.seconds), ("cached", 3, 1, 2 << 20, 30.0))
        self.assertIn("PIPETOP_BISECT_SECONDS=soon is not a positive number: 30 used", ph.notes)
        self.assertIn("PIPETOP_BISECT_CACHE_BATCHES=0: at least 1 batch is cached", ph.notes)
        self.assertEqual(bisect.from_env({"PIPETOP_BISECT_PHASE": "loader"}).cache, None)
        self.assertEqual(bisect.from_env({"PIPETOP_BISECT_PHASE": "cold"}).name, "cold")

    @unittest.skipUnless(HAS_TORCH, "torch is not installed for %s" % sys.executable)
    def test_touch_reads_every_kind_of_batch(self) -> None:
        import numpy as np
        import torch

        t = torch.arange(20000, dtype=torch.float32).reshape(100, 200)
        batch = {"x": t.t(), "y": (t[:, :3], np.ones((64, 64))), "s": "text", "e": torch.empty(0)}
        before = [t.clone()]
        bisect.touch(batch)
        self.assertTrue(torch.equal(t, before[0]), "touching reads, never writes")


@unittest.skipUnless(HAS_TORCH, "torch is not installed for %s" % sys.executable)
class TestPhases(unittest.TestCase):
    def test_loader_drains_across_epochs_and_exits(self) -> None:
        r, d, doc = _run("loader", epochs=1000, PIPETOP_BISECT_SECONDS="3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(_lines(r), [], "the script's own loop never finished an epoch")
        self.assertEqual(doc["phase"], "loader")
        loader = dict(doc["loader"])
        site = {k: loader.pop(k) for k in ("site", "site_line", "args")}
        self.assertEqual(loader.pop("site_path"), os.path.join(os.path.realpath(d), "train.py"))
        self.assertEqual(loader, {"seen": True, "len": 10, "iterable": False, "batch_size": 4, "workers": 2})
        line = textwrap.dedent(SCRIPT).splitlines().index('        return DataLoader(ds, batch_size=4, num_workers=workers, worker_init_fn=counter(name))') + 1
        self.assertEqual(site, {"site": "train.py:%d" % line, "site_line": line, "args": {
            "num_workers": 2, "prefetch_factor": 2, "persistent_workers": False, "pin_memory": False}})
        drained = doc["drained"]
        self.assertGreaterEqual(drained["epochs"], 2)
        self.assertGreater(drained["batches"], 10, "more than the 10 batches of one epoch")
        self.assertEqual(drained["samples"], 4 * drained["batches"])
        self.assertIsNone(doc["cache"])
        self.assertEqual([e["msg"] for e in _frames(d, "event") if e["kind"] == "phase"], ["loader"])
        # The sampler's frames once a second and the summary's: they keep
        # coming through the drain. (Their rates are not checked: with these
        # 10-batch epochs and workers started anew each epoch, a frame often
        # lands in a fresh iterator's start-up and reads 0.)
        frames = _frames(d, "loader")
        self.assertGreaterEqual(len(frames), 3, "the loader sampler reports during the drain")
        self.assertEqual({f["workers"] for f in frames}, {2})
        shutil.rmtree(d, True)

    def test_cached_replays_the_same_objects(self) -> None:
        r, d, doc = _run("cached", PIPETOP_BISECT_CACHE_BATCHES="3")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = _lines(r)
        self.assertEqual(lines[-1], {"changed": True})
        epochs = lines[:-1]
        self.assertEqual([len(e["ids"]) for e in epochs], [10, 10, 10], "epochs keep the loader's length")
        ids = [i for e in epochs for i in e["ids"]]
        self.assertEqual(len(set(ids)), 3)
        self.assertEqual(ids, (ids[:3] * 10), "the cached objects in order, cyclically, the first batch included")
        self.assertEqual(_starts(d, "train"), 2, "the training loader's workers started once")
        self.assertEqual(_starts(d, "val"), 3, "the validation loader is untouched")
        self.assertEqual([e["val"] for e in epochs], [[0.0, 4.0, 8.0, 12.0, 16.0]] * 3)
        # The step that filled the cache was the second; the third is the
        # first on the cache alone.
        self.assertEqual(doc["cache"], {"batches": 3, "bytes": 3 * 80, "cap_bytes": 1 << 30, "max_batches": 3, "limited_by": "count",
                                        "clean_step": 3})
        self.assertFalse(doc["off"])
        self.assertEqual(doc["notes"], [])
        self.assertEqual([e["msg"] for e in _frames(d, "event") if e["kind"] == "phase"], ["cached"])
        shutil.rmtree(d, True)

    def test_cached_replays_a_loader_made_each_epoch(self) -> None:
        r, d, doc = _run("cached", kind="inline", PIPETOP_BISECT_CACHE_BATCHES="3")
        self.assertEqual(r.returncode, 0, r.stderr)
        epochs = _lines(r)[:-1]
        self.assertEqual([len(e["ids"]) for e in epochs], [10, 10, 10], "epochs keep the loader's length")
        self.assertEqual(len({i for e in epochs for i in e["ids"]}), 3, "every epoch replays the cache")
        self.assertEqual(_starts(d, "train"), 2, "the training loader made anew starts no workers again")
        self.assertEqual(_starts(d, "val"), 3, "the validation loader, made by the same function, is untouched")
        self.assertEqual([e["val"] for e in epochs], [[0.0, 4.0, 8.0, 12.0, 16.0]] * 3)
        self.assertEqual(doc["notes"], [])
        shutil.rmtree(d, True)

    def test_cache_cap(self) -> None:
        # A batch is 80 bytes: 0.0002 MB (209 bytes) holds 2, 0.00001 MB none.
        for mb, want, note in (("0.0002", 2, "--cache-mb 0.0002 reached: 2 batches cached"),
                               ("0.00001", 1, "exceed --cache-mb 1e-05: 1 batch cached")):
            r, d, doc = _run("cached", epochs=2, PIPETOP_BISECT_CACHE_MB=mb)
            self.assertEqual(r.returncode, 0, r.stderr)
            ids = [i for e in _lines(r)[:-1] for i in e["ids"]]
            self.assertEqual(len(ids), 20)
            self.assertEqual(len(set(ids)), want)
            self.assertEqual((doc["cache"]["batches"], doc["cache"]["limited_by"]), (want, "cap"))
            self.assertTrue(any(note in n for n in doc["notes"]), doc["notes"])
            shutil.rmtree(d, True)

    def test_cache_time_limit(self) -> None:
        # A loader slower than the caching time: what it delivered by then
        # is cached (the batch of the first step at least), never a wait of
        # minutes the phase would read as a stall.
        r, d, doc = _run("cached", epochs=2, PIPETOP_BISECT_CACHE_SECONDS="1e-9")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(_lines(r)[:-1]), 2)
        self.assertEqual(doc["cache"]["limited_by"], "time")
        self.assertGreaterEqual(doc["cache"]["batches"], 1)
        self.assertLess(doc["cache"]["batches"], doc["cache"]["max_batches"])
        self.assertTrue(any("batches in 1e-09 s of caching" in n for n in doc["notes"]), doc["notes"])
        shutil.rmtree(d, True)

    def test_forward_skips_backward_and_optimizer(self) -> None:
        r, d, doc = _run("forward", epochs=2, PIPETOP_BISECT_CACHE_BATCHES="4")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(_lines(r)[-1], {"changed": False})
        # The forward is the script's own, with autograd.
        self.assertEqual([e["grad"] for e in _lines(r)[:-1]], [[True], [True]])
        self.assertEqual(doc["skipped"], {"backward": 20, "optim": 20})
        self.assertEqual(doc["cache"]["batches"], 4)
        self.assertIn("20 steps", r.stderr, "steps still end")
        self.assertEqual(_starts(d, "train"), 2)
        shutil.rmtree(d, True)

    def test_forward_without_a_dataloader(self) -> None:
        r, d, doc = _run("forward", kind="noloader")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(_lines(r), [{"changed": False}])
        self.assertEqual(doc["skipped"], {"backward": 3, "optim": 3})
        self.assertFalse(doc["loader"]["seen"])
        self.assertEqual(doc["notes"], ["no training DataLoader seen (no DataLoader batch before an optimizer step): nothing cached"])
        self.assertIn("3 steps", r.stderr)
        shutil.rmtree(d, True)

    def test_iterable_replays_without_epoch_ends(self) -> None:
        # The stream has 40 items (10 batches): the replay goes on past them.
        r, d, doc = _run("cached", kind="iterable", steps=25, PIPETOP_BISECT_CACHE_BATCHES="3")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = _lines(r)
        self.assertEqual(len(lines[0]["ids"]), 25)
        self.assertEqual(len(set(lines[0]["ids"])), 3)
        self.assertEqual(doc["loader"]["len"], None)
        self.assertTrue(doc["loader"]["iterable"])
        self.assertTrue(any("without epoch ends" in n for n in doc["notes"]), doc["notes"])
        shutil.rmtree(d, True)

    def test_loader_records_the_files_it_reads(self) -> None:
        r, d, doc = _run("loader", kind="files", epochs=1000, PIPETOP_BISECT_SECONDS="2")
        self.assertEqual(r.returncode, 0, r.stderr)
        seen = set()
        for name in os.listdir(d):
            if name.startswith("files-") and name.endswith(".txt"):
                with open(os.path.join(d, name)) as f:
                    seen.update(f.read().split())
        data = {os.path.join(os.path.realpath(d), "data", "%d.bin" % i) for i in range(5)}
        self.assertEqual({os.path.realpath(p) for p in seen} & data, data, "every data file the workers read")
        self.assertFalse([p for p in seen if p.endswith(".py") or "-packages" in p], "no code")
        shutil.rmtree(d, True)

    def test_cold_drains_as_the_loader_does(self) -> None:
        r, d, doc = _run("cold", kind="files", epochs=1000, PIPETOP_BISECT_SECONDS="2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(doc["phase"], "cold")
        self.assertGreater(doc["drained"]["batches"], 10)
        self.assertFalse([n for n in os.listdir(d) if n.startswith("files-")], "the cold phase records nothing: pipetop evicted first")
        shutil.rmtree(d, True)

    def test_loader_phase_without_a_dataloader(self) -> None:
        r, d, doc = _run("loader", kind="noloader")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(_lines(r), [], "exits at the first optimizer step")
        self.assertFalse(doc["loader"]["seen"])
        self.assertTrue(any("nothing to drain" in n for n in doc["notes"]), doc["notes"])
        shutil.rmtree(d, True)

    def test_unknown_phase_runs_normally(self) -> None:
        r, d, doc = _run("bogus", epochs=1)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pipetop: PIPETOP_BISECT_PHASE=bogus: want loader, cold, cached, forward or full\n", r.stderr)
        self.assertEqual(doc, {})
        self.assertEqual(_lines(r)[-1], {"changed": True})
        self.assertEqual([e for e in _frames(d, "event") if e["kind"] == "phase"], [])
        shutil.rmtree(d, True)


if __name__ == "__main__":
    unittest.main()
