"""Tests for the automatic instrumentation (pipetop_publish.auto), its
loader statistics, summary, bootstrap and framework callbacks.

Run with: /usr/bin/python3 -m unittest discover -s clients/python
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import pipetop_publish as pp
from pipetop_publish import auto, integrations, sockets, summary, workerlink, workers

HERE = os.path.dirname(os.path.abspath(__file__))
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_LIGHTNING = importlib.util.find_spec("lightning") is not None or importlib.util.find_spec("pytorch_lightning") is not None
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


def _sockdir() -> str:
    d = tempfile.mkdtemp(prefix="ptauto", dir="/tmp")
    os.chmod(d, 0o700)
    atexit.register(shutil.rmtree, d, True)
    return d


def _run_auto(script: str, env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run script under pipetop_publish.auto. One that has not ended in
    timeout seconds is made to dump every thread of its processes (faulthandler, on
    SIGABRT to its process group: its DataLoader workers too) and fails
    with that dump, so a rare hang says where it waits."""
    full = dict(os.environ, PYTHONPATH=HERE, PYTHONFAULTHANDLER="1", **env)
    argv = [sys.executable, "-m", "pipetop_publish.auto", script, *args]
    with subprocess.Popen(argv, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGABRT)
            try:
                out, err = p.communicate(timeout=10)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
            raise AssertionError("%s still running after %g s; its threads:\n%s" % (script, timeout, err[-20000:]))
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


class TestPieces(unittest.TestCase):
    def test_switch(self) -> None:
        for value, want in (("0", False), ("off", False), ("1", True), ("", True)):
            os.environ["PIPETOP_AUTO"] = value
            try:
                self.assertEqual(auto.enabled(), want, value)
            finally:
                del os.environ["PIPETOP_AUTO"]

    def test_batch_len(self) -> None:
        class T:
            def __init__(self, *shape: int) -> None:
                self.shape = shape

        self.assertEqual(auto._batch_len(T(32, 3)), 32)
        self.assertEqual(auto._batch_len((T(8, 2), T(8))), 8)
        self.assertEqual(auto._batch_len({"x": [T(5)]}), 5)
        self.assertEqual(auto._batch_len("text"), 0)
        self.assertEqual(auto._batch_len(T()), 0)

    def test_run_name(self) -> None:
        old = sys.argv
        try:
            sys.argv = ["/x/train.py"]
            self.assertEqual(auto.run_name(), "train")
            os.environ["PIPETOP_NAME"] = "exp7"
            self.assertEqual(auto.run_name(), "exp7")
        finally:
            sys.argv = old
            os.environ.pop("PIPETOP_NAME", None)

    def test_usage(self) -> None:
        r = subprocess.run([sys.executable, "-m", "pipetop_publish.auto"], env=dict(os.environ, PYTHONPATH=HERE),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage: python -m pipetop_publish.auto", r.stdout)


class TestWorkerSlots(unittest.TestCase):
    def test_busy_reaches_main_process(self) -> None:
        shm, path = workers._new_shm(2)
        try:
            workers.WorkerInit(path, None)(1)  # as worker 1 would, in its own process

            class Fetcher:
                def fetch(self, index: int) -> int:
                    time.sleep(0.02)
                    return index

            fetch = workers._fetch_wrapper(Fetcher.fetch)
            for i in range(3):
                self.assertEqual(fetch(Fetcher(), i), i)
            info = workers.IterInfo(type("Loader", (), {"num_workers": 2, "batch_size": 4, "prefetch_factor": 2})())
            info.shm = shm
            busy = info.busy(time.perf_counter_ns())
            self.assertEqual(busy[0], 0)
            self.assertGreaterEqual(busy[1], 60_000_000)
            self.assertLess(busy[1], 1_000_000_000)
        finally:
            workers._slot = None
            os.unlink(path)

    def test_epoch_fields(self) -> None:
        class Loader:
            num_workers, batch_size, prefetch_factor, persistent_workers = 2, 8, 2, False
            _pipetop_site = ("/x/train.py", 42)

            def __len__(self) -> int:
                return 8

        dl = Loader()
        dl._pipetop_starts = 4
        info = workers.IterInfo(dl, created=1000)
        self.assertEqual(workers._epoch_fields(info), {"length": 8, "worker_starts": 4, "site": "train.py:42"})
        info.first = 1000 + 1_500_000_000
        workers.started(info)
        later = workers.IterInfo(dl, created=5_000_000_000)  # the next epoch's, before its first batch
        self.assertEqual(workers._epoch_fields(later)["worker_start_ns"], 1_500_000_000)

        class Endless(Loader):
            persistent_workers = True

            def __len__(self) -> int:
                raise TypeError("an iterable dataset has no length")

        fields = workers._epoch_fields(workers.IterInfo(Endless()))
        self.assertTrue(fields["persistent_workers"])
        self.assertNotIn("length", fields)

    def test_frames_go_on_between_epochs(self) -> None:
        """Once an epoch's iterator is gone, the next one becomes current only
        with its first batch, after its workers start (seconds, in the
        epochs plant): the frames go on meanwhile, delivering nothing, and
        carry what the last start cost."""

        class Loader:
            num_workers, batch_size, prefetch_factor, persistent_workers = 2, 8, 2, False

            def __len__(self) -> int:
                return 8

        dl = Loader()
        dl._pipetop_starts = 4
        info = workers.IterInfo(dl, created=1000)
        info.first, info.batches = 1000 + 1_500_000_000, 8
        info.last = info.first + 160_000_000
        workers.started(info)
        sampler = workers.Sampler(None, lambda: (None, info))
        first = sampler.sample()
        self.assertIsNotNone(first)
        self.assertEqual(first["worker_start_ns"], 1_500_000_000)
        self.assertEqual(first["queue_depth"], 0)
        again = sampler.sample()
        self.assertEqual(again["batches_per_sec"], 0)
        self.assertEqual(again["worker_busy"], 0)
        self.assertEqual(again["worker_starts"], 4)

    def test_files_of_killed_runs(self) -> None:
        # A killed run leaves its slot file; a later process may get its
        # pid. Before, creating ours then failed (O_EXCL on pid + serial)
        # and the run silently had no worker statistics.
        base = sockets.shm_dir()
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        stale_dead = os.path.join(base, "pipetop-loader-%s-0" % dead.stdout.strip())
        kept = [os.path.join(base, "pipetop-loader-%d-%d" % (os.getpid(), n)) for n in range(16)]
        for p in [stale_dead] + kept:
            with open(p, "wb"):
                pass
            os.utime(p, (time.time() - 3600, time.time() - 3600))
        stale_sock = os.path.join(base, "pipetop-workers-%s.sock" % dead.stdout.strip())
        with open(stale_sock, "wb"):
            pass
        os.utime(stale_sock, (time.time() - 3600, time.time() - 3600))
        young = os.path.join(base, "pipetop-loader-%s-1" % dead.stdout.strip())
        with open(young, "wb"):
            pass
        kept.append(young)
        try:
            shm, path = workers._new_shm(2)
            shm.close()
            os.unlink(path)
            self.assertTrue(os.path.basename(path).startswith("pipetop-loader-%d-" % os.getpid()))
            self.assertFalse(os.path.exists(stale_dead), "the file of a dead pid is swept")
            workerlink.Receiver().close()
            self.assertFalse(os.path.exists(stale_sock), "the workers' socket of a dead pid is swept")
            self.assertTrue(all(os.path.exists(p) for p in kept), "a live pid's files and young ones are left alone")
        finally:
            for p in [stale_dead, stale_sock] + kept:
                if os.path.exists(p):
                    os.unlink(p)


class TestSummary(unittest.TestCase):
    def test_build_write_render(self) -> None:
        d = _sockdir()
        pub = pp.Publisher(name="sum", socket_path=os.path.join(d, "s.sock"))
        try:
            for _ in range(4):
                with pub.stage("forward"):
                    time.sleep(0.005)
                pub.step(samples=8)
            loader = {"workers": 2, "worker_busy": 0.9, "worker_busy_each": [0.8, 1.0], "prefetch_factor": 2, "batches_per_sec": 10.0}
            doc = summary.build(pub, loader)
        finally:
            pub.close()
        self.assertEqual(doc["schema"], "pipetop-summary/2")
        self.assertEqual(doc["steps"], 4)
        self.assertEqual(doc["samples"], 32)
        fwd = [s for s in doc["stages"] if s["name"] == "forward"][0]
        self.assertGreater(fwd["share"], 0.5)
        self.assertAlmostEqual(sum(s["share"] for s in doc["stages"]), 1.0, places=6)
        path = os.path.join(d, "out.json")
        summary.write(doc, path)
        with open(path) as f:
            self.assertEqual(json.load(f)["steps"], 4)
        out = io.StringIO()
        summary.render(doc, out)
        self.assertIn("4 steps", out.getvalue())
        self.assertIn("num_workers=2 busy 90% (80%, 100%)", out.getvalue())


class TestBoot(unittest.TestCase):
    def test_sitecustomize_chains_to_the_one_it_hides(self) -> None:
        other = tempfile.mkdtemp()
        with open(os.path.join(other, "sitecustomize.py"), "w") as f:
            f.write("print('chained sitecustomize')\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([auto.boot_dir(), other]))
        r = subprocess.run([sys.executable, "-c", "import sys; print('auto' if 'pipetop_publish.auto' in sys.modules else 'none')"],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["chained", "sitecustomize", "auto"])
        env["PIPETOP_AUTO"] = "0"
        r = subprocess.run([sys.executable, "-c", "import sys; print('pipetop_publish.auto' in sys.modules)"],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.stdout.split(), ["chained", "sitecustomize", "False"])


SCRIPT = """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    for micro in range(2):                      # accumulation: no DataLoader
        model(torch.randn(2, 4)).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
    with torch.no_grad():                       # evaluation between steps
        model(torch.randn(2, 4)).sum().item()
print("done")
"""


FROZEN = """
import time, torch
from torch.utils.data import DataLoader, TensorDataset

class Encoder(torch.nn.Module):                 # a frozen encoder, slow on purpose
    def forward(self, x):
        time.sleep(0.02)
        return x * 2

encoder, policy = Encoder().eval(), torch.nn.Linear(4, 1)
opt = torch.optim.SGD(policy.parameters(), lr=0.1)
train = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4)
val = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4)
for epoch in range(2):
    for (x,) in train:
        with torch.no_grad():                   # inside the step: forward
            z = encoder(x)
        policy(z).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    policy.eval()
    with torch.no_grad():                       # a validation pass: eval
        for (x,) in val:
            time.sleep(0.005)
            policy(encoder(x)).sum().item()
    policy.train()
print("done")
"""


TRANSFORMS = """
import time, torch
from torch.utils.data import DataLoader, TensorDataset

class Jitter(torch.nn.Module):                  # augmentation: no parameters, slow on purpose
    def forward(self, x):
        time.sleep(0.02)
        return x + 0.01 * torch.randn_like(x)

jitter, model, loss_fn = Jitter(), torch.nn.Linear(4, 1), torch.nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for (x,) in DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=4):
    x = jitter(x)                               # in the loop, before the model: preprocess
    loss = loss_fn(model(x), torch.zeros(4, 1))  # the loss module after the model: forward
    time.sleep(0.002)
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


MOVES = """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(2, 4)
    x.to("meta")                                # a copy to another device: h2d
    model(x).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
"""


EPOCHS = """\
import sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset


def slow_start(worker_id):
    time.sleep(0.3)


def main():
    ds = TensorDataset(torch.randn(16, 4))
    loader = DataLoader(ds, batch_size=4, num_workers=2, worker_init_fn=slow_start, persistent_workers=sys.argv[1] == "True")
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        for (x,) in loader:
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main()
"""


@unittest.skipUnless(HAS_TORCH, "torch is not installed for %s" % sys.executable)
class TestAutoRun(unittest.TestCase):
    def test_steps_and_eval(self) -> None:
        d = _sockdir()
        with open(os.path.join(d, "accum.py"), "w") as f:
            f.write(textwrap.dedent(SCRIPT))
        r = _run_auto(os.path.join(d, "accum.py"), {"PIPETOP_SOCKET_DIR": d, "PIPETOP_SUMMARY_DIR": d})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("done", r.stdout)
        self.assertIn("3 steps", r.stderr)
        files = [n for n in os.listdir(d) if n.startswith("pipetop-summary-accum-")]
        self.assertEqual(len(files), 1)
        with open(os.path.join(d, files[0])) as f:
            doc = json.load(f)
        self.assertEqual(doc["steps"], 3)
        names = [s["name"] for s in doc["stages"]]
        for want in ("forward", "backward", "optim", "eval", "other"):
            self.assertIn(want, names)
        recent = doc["recent"]
        self.assertEqual([row[0] for row in recent["steps"]], [0, 1, 2])
        self.assertTrue(all(len(row) == 3 + len(recent["names"]) and row[2] >= row[1] for row in recent["steps"]))
        self.assertGreater(doc["io"]["wchar"], 0)
        self.assertEqual(os.listdir(d).count("pipetop-summary-accum-%d.json" % doc["pid"]), 1)
        self.assertFalse([n for n in os.listdir(d) if n.endswith(".sock")], "socket left behind")

    def test_epoch_restarts(self) -> None:
        """Without persistent workers every epoch starts the workers afresh:
        the loader statistics count them and what a start costs; with them,
        the workers start once."""
        for persistent, starts in ((False, 6), (True, 2)):
            d = _sockdir()
            with open(os.path.join(d, "epochs.py"), "w") as f:
                f.write(textwrap.dedent(EPOCHS))
            r = _run_auto(os.path.join(d, "epochs.py"), {"PIPETOP_SOCKET_DIR": d, "PIPETOP_SUMMARY_DIR": d}, str(persistent))
            self.assertEqual(r.returncode, 0, r.stderr)
            files = [n for n in os.listdir(d) if n.startswith("pipetop-summary-epochs-")]
            with open(os.path.join(d, files[0])) as f:
                ld = json.load(f)["loader"]
            self.assertEqual(ld["length"], 4)
            self.assertEqual(ld["worker_starts"], starts)
            self.assertEqual(ld.get("persistent_workers", False), persistent)
            self.assertEqual(ld["site"], "epochs.py:12")
            self.assertGreaterEqual(ld["worker_start_ns"], 250_000_000)

    def test_frozen_encoder_is_forward(self) -> None:
        """A module called under no_grad inside a training step (after its
        batch, before its optimizer step) is forward; the validation pass
        after the epoch stays eval."""
        d = _sockdir()
        with open(os.path.join(d, "frozen.py"), "w") as f:
            f.write(textwrap.dedent(FROZEN))
        r = _run_auto(os.path.join(d, "frozen.py"), {"PIPETOP_SOCKET_DIR": d, "PIPETOP_SUMMARY_DIR": d})
        self.assertEqual(r.returncode, 0, r.stderr)
        files = [n for n in os.listdir(d) if n.startswith("pipetop-summary-frozen-")]
        with open(os.path.join(d, files[0])) as f:
            doc = json.load(f)
        self.assertEqual(doc["steps"], 8)
        total = {s["name"]: s["total_ns"] for s in doc["stages"]}
        # 8 training steps x 20 ms of encoder; 2 epochs x 2 validation
        # batches x (5 ms + 20 ms).
        self.assertGreaterEqual(total["forward"], 8 * 20e6, total)
        self.assertGreaterEqual(total["eval"], 2 * 20e6, total)
        self.assertLess(total["eval"], 8 * 20e6, total)

    def test_transforms_are_preprocess(self) -> None:
        """A module without parameters called in the loop before the model
        (augmentation) is preprocess; the model and the loss module after
        it are forward."""
        d = _sockdir()
        with open(os.path.join(d, "transforms.py"), "w") as f:
            f.write(textwrap.dedent(TRANSFORMS))
        r = _run_auto(os.path.join(d, "transforms.py"), {"PIPETOP_SOCKET_DIR": d, "PIPETOP_SUMMARY_DIR": d})
        self.assertEqual(r.returncode, 0, r.stderr)
        files = [n for n in os.listdir(d) if n.startswith("pipetop-summary-transforms-")]
        with open(os.path.join(d, files[0])) as f:
            doc = json.load(f)
        self.assertEqual(doc["steps"], 8)
        total = {s["name"]: s["total_ns"] for s in doc["stages"]}
        # 8 steps x 20 ms of augmentation; the forward is microseconds.
        self.assertGreaterEqual(total.get("preprocess", 0), 8 * 20e6, total)
        self.assertLess(total["forward"], 8 * 20e6 / 2, total)

    def test_device_moves(self) -> None:
        """A batch moved to a device is h2d; a result brought back to the
        host is sync, as .cpu() is ("meta" stands in for an accelerator)."""
        import torch  # only where installed (the class is skipped otherwise)

        self.assertEqual(auto.move_stage(torch.device("cpu"), torch.device("cuda", 0)), "h2d")
        self.assertEqual(auto.move_stage(torch.device("cuda", 0), torch.device("cpu")), "sync")
        self.assertEqual(auto.move_stage(torch.device("cuda", 0), torch.device("cuda", 1)), "h2d")
        d = _sockdir()
        with open(os.path.join(d, "moves.py"), "w") as f:
            f.write(textwrap.dedent(MOVES))
        r = _run_auto(os.path.join(d, "moves.py"), {"PIPETOP_SOCKET_DIR": d, "PIPETOP_SUMMARY_DIR": d})
        self.assertEqual(r.returncode, 0, r.stderr)
        files = [n for n in os.listdir(d) if n.startswith("pipetop-summary-moves-")]
        with open(os.path.join(d, files[0])) as f:
            doc = json.load(f)
        self.assertEqual(doc["steps"], 3)
        self.assertIn("h2d", [s["name"] for s in doc["stages"]])

    def test_switched_off(self) -> None:
        d = _sockdir()
        with open(os.path.join(d, "accum.py"), "w") as f:
            f.write(textwrap.dedent(SCRIPT))
        r = _run_auto(os.path.join(d, "accum.py"), {"PIPETOP_SOCKET_DIR": d, "PIPETOP_SUMMARY_DIR": d, "PIPETOP_AUTO": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertEqual([n for n in os.listdir(d) if n.startswith("pipetop-summary")], [])


class TestTimeline(unittest.TestCase):
    def test_lightning_hook_order(self) -> None:
        """The hooks in the order Lightning calls them (a simulated trainer:
        Lightning itself is tested below where it is installed)."""
        d = _sockdir()
        hooks = integrations.LightningHooks("sim")
        pub = pp.Publisher(name="sim", socket_path=os.path.join(d, "l.sock"))
        hooks._tl = integrations.Timeline(pub)
        try:
            hooks.on_train_start(None, None)
            for i in range(3):
                time.sleep(0.004)
                hooks.on_train_batch_start(None, None, None, i)
                time.sleep(0.008)
                hooks.on_before_backward(None, None, 1.5)
                hooks.on_after_backward(None, None)
                hooks.on_before_optimizer_step(None, None, None)
                hooks.on_train_batch_end(None, None, None, None, i)
            s = pub.summary()
        finally:
            pub.close()
        self.assertEqual(s["steps"], 3)
        cpu = {st["name"]: st["cpu_ns"] for st in s["stages"]}
        self.assertGreater(cpu["forward"], 3 * 7_000_000)
        self.assertGreater(cpu["data_wait"], 3 * 3_000_000)

    def test_hf_hook_order(self) -> None:
        """The hooks in the order the Hugging Face Trainer calls them, with
        gradient accumulation over 2 micro-batches and an evaluation (a
        simulated trainer: transformers itself is tested below where it is
        installed)."""
        d = _sockdir()
        hooks = integrations.HFHooks("sim")
        pub = pp.Publisher(name="sim", socket_path=os.path.join(d, "h.sock"))
        hooks._tl = integrations.Timeline(pub)
        args = type("Args", (), {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 2})()
        try:
            hooks.on_train_begin(args, None, None)
            for _ in range(3):
                time.sleep(0.004)  # fetching the batch
                hooks.on_step_begin(args, None, None)
                time.sleep(0.006)  # first micro-batch: forward and backward
                hooks.on_substep_end(args, None, None)
                time.sleep(0.006)  # second micro-batch
                hooks.on_pre_optimizer_step(args, None, None)
                time.sleep(0.005)  # optimizer.step
                hooks.on_optimizer_step(args, None, None)
                hooks.on_step_end(args, None, None)
            time.sleep(0.005)
            hooks.on_evaluate(args, None, None)
            s = pub.summary()
        finally:
            pub.close()
        self.assertEqual(s["steps"], 3)
        self.assertEqual(s["samples"], 3 * 16)
        cpu = {st["name"]: st["cpu_ns"] for st in s["stages"]}
        self.assertGreater(cpu["forward"], 3 * 11_000_000)
        self.assertGreater(cpu["optim"], 3 * 4_000_000)
        self.assertGreater(cpu["data_wait"], 2 * 3_000_000)

    @unittest.skipUnless(HAS_LIGHTNING, "lightning is not installed for %s (pip install lightning)" % sys.executable)
    def test_lightning_real(self) -> None:  # pragma: no cover - needs lightning
        import torch

        try:
            import lightning.pytorch as pl
        except ImportError:
            import pytorch_lightning as pl

        class Tiny(pl.LightningModule):
            def __init__(self) -> None:
                super().__init__()
                self.net = torch.nn.Linear(4, 1)

            def training_step(self, batch, idx):
                return self.net(batch[0]).pow(2).mean()

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)

        data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 4)), batch_size=4)
        os.environ["PIPETOP_SOCKET_DIR"] = _sockdir()
        cb = integrations.lightning_callback("lt")
        pl.Trainer(max_epochs=1, callbacks=[cb], logger=False, enable_checkpointing=False,
                   enable_progress_bar=False).fit(Tiny(), data)
        self.assertEqual(cb._tl.pub.summary()["steps"], 4)

    @unittest.skipUnless(HAS_TRANSFORMERS, "transformers is not installed for %s (pip install transformers)" % sys.executable)
    def test_hf_callback_is_a_trainer_callback(self) -> None:  # pragma: no cover - needs transformers
        from transformers import TrainerCallback

        cb = integrations.hf_callback("hf")
        self.assertIsInstance(cb, TrainerCallback)

    def test_missing_framework_says_which(self) -> None:
        if not HAS_LIGHTNING:
            with self.assertRaisesRegex(ImportError, "lightning"):
                integrations.lightning_callback()
        if not HAS_TRANSFORMERS:
            with self.assertRaisesRegex(ImportError, "transformers"):
                integrations.hf_callback()


if __name__ == "__main__":
    unittest.main()
