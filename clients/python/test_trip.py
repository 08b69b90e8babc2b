"""Tests for the batch's trip from DataLoader workers (pipetop_publish.trip).

Run with: /usr/bin/python3 -m pytest -q test_trip.py (in clients/python)
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

from pipetop_publish import trip

HAS_TORCH = importlib.util.find_spec("torch") is not None
if HAS_TORCH:
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Cameras(Dataset):
        """4 cameras of 32x32x3 images and a joint vector per sample;
        images float32 0..255 (as_float) or uint8."""

        def __init__(self, as_float: bool, n: int = 16) -> None:
            g = torch.Generator().manual_seed(0)
            self.frames = torch.randint(0, 256, (n, 4, 32, 32, 3), dtype=torch.uint8, generator=g)
            self.joints = torch.randn(n, 14, generator=g)
            self.as_float = as_float

        def __len__(self) -> int:
            return len(self.frames)

        def __getitem__(self, i: int):
            out = {"cam%d" % c: self.frames[i, c] for c in range(4)}
            if self.as_float:
                out = {k: v.float() for k, v in out.items()}
            out["joints"] = self.joints[i]
            return out

    class Fails(Dataset):
        def __len__(self) -> int:
            return 8

        def __getitem__(self, i: int):
            if i == 5:
                raise KeyError("sample 5 is missing")
            return torch.zeros(3)


@unittest.skipUnless(HAS_TORCH, "needs torch")
class WalkTest(unittest.TestCase):
    def test_nested_bytes_and_keys(self):
        w = trip.Walker()
        w.walk({"obs": {"image": torch.zeros(8, 3, 64, 64), "state": np.zeros((8, 14), dtype=np.float64)},
                "label": (torch.zeros(8, dtype=torch.int64), "abc")})
        self.assertEqual(w.total, 8 * 3 * 64 * 64 * 4 + 8 * 14 * 8 + 8 * 8 + 3)
        keys = {leaf.key: (leaf.dtype, leaf.shape) for leaf in w.leaves}
        self.assertEqual(keys["['obs']['image']"], ("float32", (8, 3, 64, 64)))
        self.assertEqual(keys["['obs']['state']"], ("float64", (8, 14)))
        self.assertEqual(keys["['label'][0]"], ("int64", (8,)))

    def test_long_list_is_sampled(self):
        w = trip.Walker()
        w.walk([torch.zeros(10) for _ in range(1000)])
        self.assertEqual(w.total, 1000 * 40)
        self.assertEqual(len(w.leaves), 1)
        self.assertTrue(w.leaves[0].estimated)
        self.assertEqual(w.leaves[0].key, "[*]")
        self.assertEqual(w.count, 1000)

    def test_image_like(self):
        self.assertTrue(trip.image_like((32, 128, 128, 3)))
        self.assertTrue(trip.image_like((32, 3, 128, 128)))
        self.assertTrue(trip.image_like((32, 64, 64)))
        self.assertFalse(trip.image_like((32, 16, 14)))  # a window of joint states
        self.assertFalse(trip.image_like((32, 14)))


@unittest.skipUnless(HAS_TORCH, "needs torch")
class Uint8Test(unittest.TestCase):
    def test_integers_0_255(self):
        x = torch.randint(0, 256, (4, 64, 64, 3)).float()
        self.assertEqual(trip.uint8_scale(x), 1)
        self.assertEqual(trip.uint8_scale(x.double().numpy()), 1)

    def test_multiples_of_1_255(self):
        x = torch.randint(0, 256, (4, 3, 64, 64)).float() / 255
        self.assertEqual(trip.uint8_scale(x), 255)

    def test_not_images(self):
        self.assertEqual(trip.uint8_scale(torch.randn(32, 16, 14)), 0)  # normalized joint states
        self.assertEqual(trip.uint8_scale(torch.rand(4, 3, 64, 64)), 0)  # continuous values in [0, 1]
        self.assertEqual(trip.uint8_scale(torch.randint(0, 256, (4, 64, 64, 3)).float() - 128), 0)
        self.assertEqual(trip.uint8_scale(torch.zeros(4, 64, 64, 3)), -1)  # constant: says nothing
        self.assertEqual(trip.uint8_scale(torch.randint(0, 256, (4, 64, 64, 3)).float().transpose(1, 2)), -1)

    def test_black_border_still_judged(self):
        x = torch.randint(0, 256, (4, 64, 64, 3)).float()
        x[:, :8] = 0  # the first rows of every image black
        self.assertEqual(trip.uint8_scale(x), 1)


@unittest.skipUnless(HAS_TORCH, "needs torch")
class TripTest(unittest.TestCase):
    def test_float_images_flagged_joints_not(self):
        t = trip.Trip()
        ds = Cameras(as_float=True)
        for _ in range(4):
            batch = torch.utils.data.default_collate([ds[i] for i in range(8)])
            t.count((0, batch), 1000)
        f = t.fields()
        self.assertEqual(f["batches"], 4)
        self.assertEqual(f["bytes_per_batch"], 8 * (4 * 32 * 32 * 3 * 4 + 14 * 4))
        self.assertEqual(f["receive_ns"], 1000)
        self.assertEqual(f["tensors_per_batch"], 5)
        by = {d["key"]: d for d in f["tensors"]}
        self.assertEqual(by["['cam0']"]["uint8_factor"], 4)
        self.assertEqual(by["['cam0']"]["uint8_scale"], 1)
        self.assertNotIn("uint8_factor", by["['joints']"])

    def test_uint8_images_not_flagged(self):
        t = trip.Trip()
        ds = Cameras(as_float=False)
        batch = torch.utils.data.default_collate([ds[i] for i in range(8)])
        t.count((0, batch), 0)
        f = t.fields()
        self.assertEqual(f["bytes_per_batch"], 8 * (4 * 32 * 32 * 3 + 14 * 4))
        self.assertEqual(f["receive_ns"], 0)
        self.assertFalse(any("uint8_factor" in d for d in f["tensors"]))

    def test_other_items_are_not_batches(self):
        from torch.utils.data._utils import ExceptionWrapper

        t = trip.Trip()
        try:
            raise KeyError("x")
        except KeyError:
            t.count((3, ExceptionWrapper(where="in worker")), 10)
        t.count((3, None), 10)
        t.count("not a pair", 10)
        self.assertEqual(t.fields(), {})

    def test_blank_batch_says_nothing(self):
        t = trip.Trip()
        img = torch.randint(0, 256, (8, 32, 32, 3)).float()
        t.count((0, {"image": torch.zeros_like(img)}), 1)
        t.count((1, {"image": img}), 1)
        self.assertEqual(t.fields()["tensors"][0]["uint8_factor"], 4)

    def test_disagreeing_batches_unflag(self):
        t = trip.Trip()
        img = torch.randint(0, 256, (8, 32, 32, 3)).float()
        t.count((0, {"image": img}), 1)
        t.count((1, {"image": img + 0.5}), 1)
        t.count((2, {"image": img}), 1)
        self.assertNotIn("uint8_factor", t.fields()["tensors"][0])


@unittest.skipUnless(HAS_TORCH, "needs torch")
class LoaderTest(unittest.TestCase):
    """A real DataLoader with 2 workers, its result queue watched."""

    def _batches(self, dl, watched):
        it = iter(dl)
        t = trip.Trip()
        if watched:
            trip.watch(it, t)
        return list(it), t

    def test_same_batches_counted(self):
        dl = DataLoader(Cameras(as_float=True), batch_size=4, num_workers=2)
        plain, _ = self._batches(dl, False)
        got, t = self._batches(dl, True)
        self.assertEqual(len(plain), len(got))
        for a, b in zip(plain, got):
            for k in a:
                self.assertTrue(torch.equal(a[k], b[k]))
        f = t.fields()
        self.assertEqual(f["batches"], 4)
        self.assertEqual(f["bytes_per_batch"], 4 * (4 * 32 * 32 * 3 * 4 + 14 * 4))
        self.assertGreater(f["receive_ns"], 0)
        self.assertEqual(sum(1 for d in f["tensors"] if d.get("uint8_factor") == 4), 4)

    def test_pin_memory(self):
        # Without CUDA torch turns pin_memory off; with it, the pin-memory
        # thread gets from the same watched queue.
        dl = DataLoader(Cameras(as_float=False), batch_size=4, num_workers=2, pin_memory=True)
        got, t = self._batches(dl, True)
        self.assertEqual(len(got), 4)
        self.assertEqual(t.fields()["batches"], 4)

    def test_user_exception_unchanged(self):
        dl = DataLoader(Fails(), batch_size=2, num_workers=2)
        it = iter(dl)
        trip.watch(it, trip.Trip())
        with self.assertRaises(KeyError) as cm:
            list(it)
        self.assertIn("sample 5 is missing", str(cm.exception))


HERE = os.path.dirname(os.path.abspath(__file__))

# A plain training script: a DataLoader with 2 workers sending float32
# images holding 0..255.
FLOAT_IMAGES = """
import torch
from torch.utils.data import DataLoader, Dataset

class Frames(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"image": torch.randint(0, 256, (32, 32, 3), generator=g).float(), "state": torch.randn(14, generator=g)}

model = torch.nn.Linear(14, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in DataLoader(Frames(), batch_size=8, num_workers=2):
    loss = model(batch["state"]).pow(2).mean() + batch["image"].mean() * 0
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
"""


@unittest.skipUnless(HAS_TORCH, "needs torch")
class AutoRunTest(unittest.TestCase):
    def test_summary_carries_the_trip(self):
        d = tempfile.mkdtemp(prefix="pttrip", dir="/tmp")
        os.chmod(d, 0o700)
        self.addCleanup(shutil.rmtree, d, True)
        script = os.path.join(d, "floats.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(FLOAT_IMAGES))
        env = dict(os.environ, PYTHONPATH=HERE, PIPETOP_SOCKET_DIR=d, PIPETOP_SUMMARY_DIR=d, PIPETOP_SUMMARY="file")
        r = subprocess.run([sys.executable, "-m", "pipetop_publish.auto", script], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("done", r.stdout)
        files = [n for n in os.listdir(d) if n.startswith("pipetop-summary-floats-")]
        self.assertEqual(len(files), 1, os.listdir(d))
        with open(os.path.join(d, files[0])) as f:
            tr = json.load(f)["loader"]["batch_trip"]
        self.assertEqual(tr["batches"], 4)
        self.assertEqual(tr["bytes_per_batch"], 8 * (32 * 32 * 3 * 4 + 14 * 4))
        self.assertGreater(tr["receive_ns"], 0)
        by = {x["key"]: x for x in tr["tensors"]}
        self.assertEqual(by["['image']"]["uint8_factor"], 4)
        self.assertNotIn("uint8_factor", by["['state']"])


if __name__ == "__main__":
    unittest.main()
