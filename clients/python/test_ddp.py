"""Tests of the comm stage under the automatic instrumentation
(pipetop_publish.comm): real 2-rank Gloo runs, ranks started by hand with
RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (or Slurm's variables), each on a
free port.

Run with: /usr/bin/python3 -m unittest clients/python/test_ddp.py
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import unittest
from typing import Dict, List, Tuple

from pipetop_publish import identity

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "examples", "ddp", "train.py")
HAS_TORCH = importlib.util.find_spec("torch") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(script: str, args: List[str], env_of=None, world: int = 2, extra=None) -> Tuple[List[Dict], List[Dict], str]:
    """Run world ranks of script under pipetop_publish.auto; returns each
    rank's last stdout JSON line and summary document, by rank, and the
    summary directory."""
    d = tempfile.mkdtemp(prefix="ptddp", dir="/tmp")
    os.chmod(d, 0o700)
    port = free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ, PYTHONPATH=HERE, PIPETOP_SUMMARY="file", PIPETOP_SUMMARY_DIR=d, PIPETOP_SOCKET_DIR=d,
                   PIPETOP_STACKS_HZ="0", **(extra or {}))
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID"):
            env.pop(k, None)
        env.update(env_of(r, port) if env_of else {"RANK": str(r), "WORLD_SIZE": str(world),
                                                     "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
        procs.append(subprocess.Popen([sys.executable, "-m", "pipetop_publish.auto", script, *args], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        if p.returncode != 0:
            raise AssertionError("rank exited %d: %s %s" % (p.returncode, out, err))
        if "pipetop:" in err:
            raise AssertionError("instrumentation complained: %s" % err)
        outs.append(json.loads(out.strip().splitlines()[-1]))
    docs = []
    for path in glob.glob(os.path.join(d, "pipetop-summary-*.json")):
        with open(path) as f:
            docs.append(json.load(f))
    docs.sort(key=lambda doc: doc["rank_of"]["rank"] if doc.get("rank_of") else -1)
    outs.sort(key=lambda o: o["rank"])
    return outs, docs, d


def share(doc: Dict, name: str) -> float:
    for st in doc["stages"]:
        if st["name"] == name:
            return st["share"]
    return 0.0


class TestLauncher(unittest.TestCase):
    def test_torchrun_env(self) -> None:
        env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "TORCHELASTIC_RUN_ID": "job9",
               "MASTER_ADDR": "h", "MASTER_PORT": "1"}
        self.assertEqual(identity.launcher(env), {"launcher": "torchrun", "rank": 3, "world_size": 4, "local_rank": 1, "run": "job9"})

    def test_env_by_hand(self) -> None:
        env = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}
        self.assertEqual(identity.launcher(env), {"launcher": "env", "rank": 1, "world_size": 2, "run": "10.0.0.1:29500"})

    def test_slurm(self) -> None:
        env = {"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"}
        self.assertEqual(identity.launcher(env), {"launcher": "slurm", "rank": 5, "world_size": 8, "local_rank": 1, "run": "slurm:4242.0"})
        # torchrun started by srun: torchrun's variables win.
        env.update({"RANK": "2", "WORLD_SIZE": "16", "TORCHELASTIC_RUN_ID": "t"})
        self.assertEqual(identity.launcher(env)["rank"], 2)

    def test_unusable(self) -> None:
        for env in ({}, {"WORLD_SIZE": "2", "RANK": "2"}, {"SLURM_PROCID": "x", "SLURM_NTASKS": "2"},
                    {"SLURM_PROCID": "0"}, {"WORLD_SIZE": "0"}):
            self.assertEqual(identity.launcher(env), {}, env)
            self.assertEqual(identity.rank_fields(env), {}, env)


class TestTimeline(unittest.TestCase):
    def test_points_at_shared_instants(self) -> None:
        from pipetop_publish import publisher

        d = tempfile.mkdtemp(prefix="ptddp", dir="/tmp")
        os.chmod(d, 0o700)
        pub = publisher.Publisher(name="tl", socket_path=os.path.join(d, "tl.sock"))
        try:
            base = pub._base
            t = 1_000_000_000_000 - base  # perf_counter reading of Unix 1000 s
            step = 100_000_000  # 100 ms steps
            pub._step_start = t
            for i in range(1, 200):  # 19.9 s of steps
                with pub.stage("forward"):
                    pass
                pub._end_step(t + i * step, 1, None)
            tl = pub.summary()["timeline"]
            self.assertEqual([p["t"] for p in tl], [(1000 + k) * 10**9 for k in range(1, 20)])
            self.assertEqual([p["steps"] for p in tl], [10 * k for k in range(1, 20)])
            self.assertEqual(tl[0]["wall_ns"], 10 * step)
            # Beyond TIMELINE_POINTS the interval doubles: even seconds stay.
            for i in range(200, 1400):
                pub._end_step(t + i * step, 1, None)
            tl = pub.summary()["timeline"]
            self.assertLessEqual(len(tl), publisher.TIMELINE_POINTS)
            self.assertTrue(all(p["t"] % (2 * 10**9) == 0 for p in tl), [p["t"] for p in tl])
            self.assertEqual(tl[-1]["steps"], 10 * (tl[-1]["t"] // 10**9 - 1000))
        finally:
            pub.close()


@unittest.skipUnless(HAS_TORCH, "needs torch")
class TestDDP(unittest.TestCase):
    def check_against_script(self, outs: List[Dict], docs: List[Dict]) -> None:
        self.assertEqual(len(docs), 2)
        for out, doc in zip(outs, docs):
            self.assertEqual(doc["steps"], out["steps"])
            self.assertAlmostEqual(share(doc, "comm"), out["comm_share"], delta=0.10, msg="rank %d" % out["rank"])
            self.assertIsNotNone(doc["ddp"])
            self.assertEqual(doc["ddp"]["buckets_per_step"], 1.0)  # DDP's own bucket sizes: one bucket of the tiny model
            self.assertEqual(doc["ddp"]["bytes_per_step"], (32 * 64 + 64 + 64 * 4 + 4) * 4)

    def test_slow_forward_is_comm_on_the_other_rank(self) -> None:
        outs, docs, _ = run_ranks(TRAIN, ["--steps", "30", "--slow-stage", "forward"])
        self.check_against_script(outs, docs)
        fast, slow = docs
        self.assertGreater(share(fast, "comm"), 0.3)  # rank 0 waits ~30 of each ~45 ms step
        self.assertLess(share(slow, "comm"), 0.15)
        self.assertLess(share(fast, "backward"), 0.1)  # the wait is no longer backward
        self.assertGreater(share(slow, "forward"), share(fast, "forward") + 0.3)
        self.assertEqual(fast["rank_of"]["launcher"], "env")

    def test_slow_backward_compute_stays_backward(self) -> None:
        outs, docs, _ = run_ranks(TRAIN, ["--steps", "30", "--slow-stage", "backward"])
        self.check_against_script(outs, docs)
        fast, slow = docs
        self.assertGreater(share(slow, "backward"), 0.4)
        self.assertLess(share(fast, "backward"), 0.1)
        self.assertGreater(share(fast, "comm"), 0.3)

    def test_slurm_variables(self) -> None:
        def env(r: int, port: int) -> Dict[str, str]:
            return {"SLURM_PROCID": str(r), "SLURM_NTASKS": "2", "SLURM_LOCALID": str(r), "SLURM_JOB_ID": "777",
                    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}

        outs, docs, _ = run_ranks(TRAIN, ["--steps", "10", "--base-ms", "2"], env_of=env)
        self.assertEqual([d["rank_of"] for d in docs], [
            {"launcher": "slurm", "rank": 0, "world_size": 2, "local_rank": 0, "run": "slurm:777"},
            {"launcher": "slurm", "rank": 1, "world_size": 2, "local_rank": 1, "run": "slurm:777"}])

    def test_collectives_and_user_hook(self) -> None:
        script = os.path.join(tempfile.mkdtemp(prefix="ptddp", dir="/tmp"), "coll.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent("""
                import json, time
                import torch, torch.distributed as dist
                from torch.nn.parallel import DistributedDataParallel as DDP
                dist.init_process_group("gloo")
                rank = dist.get_rank()
                calls = []
                def hook(state, bucket):
                    calls.append(1)
                    return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])
                class Net(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.l = torch.nn.Linear(4, 1)
                    def forward(self, x):
                        t = torch.ones(1)
                        if rank == 1:
                            time.sleep(0.02)
                        dist.all_reduce(t)  # inside forward: carved out of it as comm
                        return self.l(x)
                model = DDP(Net())
                model.register_comm_hook(None, hook)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for i in range(12):
                    loss = model(torch.randn(2, 4)).sum()
                    loss.backward()
                    opt.step()
                    if rank == 0:
                        time.sleep(0.02)
                    w = dist.all_reduce(torch.ones(1), async_op=True)
                    w.wait()  # async handle's wait: comm
                    dist.broadcast(torch.ones(1), 0)
                    dist.barrier()
                print(json.dumps({"rank": rank, "steps": 12, "hook_calls": len(calls)}))
                """))
        outs, docs, _ = run_ranks(script, [])
        for out, doc in zip(outs, docs):
            self.assertEqual(doc["steps"], 12)
            self.assertGreater(out["hook_calls"], 0)
            self.assertEqual(doc["ddp"]["hooks"], ["hook"])
            self.assertEqual(doc["ddp"]["buckets"], out["hook_calls"])
        # Each rank waits ~20 ms a step for the other (rank 0 in forward's
        # all_reduce, rank 1 in the barrier after rank 0's sleep): comm.
        for doc in docs:
            comm = next(s for s in doc["stages"] if s["name"] == "comm")
            self.assertGreater(comm["mean_ns"], 12e6, doc["stages"])
        forward0 = next(s for s in docs[0]["stages"] if s["name"] == "forward")
        self.assertLess(forward0["mean_ns"], 8e6, docs[0]["stages"])

    def test_user_hook_registered_after_the_first_forward(self) -> None:
        script = os.path.join(tempfile.mkdtemp(prefix="ptddp", dir="/tmp"), "late.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent("""
                import json
                import torch, torch.distributed as dist
                from torch.nn.parallel import DistributedDataParallel as DDP
                dist.init_process_group("gloo")
                calls = []
                def late(state, bucket):
                    calls.append(state)
                    return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])
                model = DDP(torch.nn.Linear(4, 1))
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for i in range(8):
                    if i == 3:
                        model.register_comm_hook("mine", late)  # after pipetop's went in
                    model(torch.randn(2, 4)).sum().backward()
                    opt.step()
                print(json.dumps({"rank": dist.get_rank(), "late_calls": len(calls), "states": sorted(set(calls))}))
                """))
        outs, docs, _ = run_ranks(script, [])
        for out, doc in zip(outs, docs):
            self.assertEqual(out["late_calls"], 5)
            self.assertEqual(out["states"], ["mine"])
            self.assertEqual(doc["ddp"]["hooks"], ["late"])
            self.assertEqual(doc["ddp"]["buckets"], 5)
        # With pipetop's own hook (PIPETOP_DDP_HOOK=1, in from the first
        # forward), the late hook is routed through it.
        outs, docs, _ = run_ranks(script, [], extra={"PIPETOP_DDP_HOOK": "1"})
        for out, doc in zip(outs, docs):
            self.assertEqual(out["late_calls"], 5)
            self.assertEqual(doc["ddp"]["hooks"], ["allreduce", "late"])
            self.assertEqual(doc["ddp"]["buckets"], doc["ddp"]["reduced"])
            self.assertEqual(doc["ddp"]["buckets"], 8)

    def test_gpu_side_split_with_events(self) -> None:
        """The CUDA-event side of comm, over FAKE events (no GPU here): a
        device that runs each kernel as it is launched, so an event
        completes when recorded, at the CPU's clock. Then every stage's GPU
        time must equal its CPU time: a collective inside forward carved out
        of it, the DDP backward split at its gradients' event, an outermost
        barrier a pair of its own. On a real GPU the same pairs sit on the
        stream (scripts/gpu-check.sh)."""
        script = os.path.join(tempfile.mkdtemp(prefix="ptddp", dir="/tmp"), "gpuside.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent("""
                import json, time
                import torch, torch.distributed as dist
                from torch.nn.parallel import DistributedDataParallel as DDP
                from pipetop_publish import auto, gputimer

                class FakeEvent:
                    def record(self):
                        self.at = time.perf_counter_ns()
                    def query(self):
                        return True
                    def elapsed_time(self, end):
                        return (end.at - self.at) / 1e6

                dist.init_process_group("gloo")
                rank = dist.get_rank()

                class SlowGrad(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x):
                        return x.view_as(x)
                    @staticmethod
                    def backward(ctx, g):
                        if rank == 1:
                            time.sleep(0.015)
                        return g

                class Net(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.l = torch.nn.Linear(4, 1)
                    def forward(self, x):
                        if rank == 1:
                            time.sleep(0.02)
                        dist.all_reduce(torch.ones(1))  # rank 0 waits here: comm inside forward
                        return SlowGrad.apply(self.l(x))

                model = DDP(Net())
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                recs = []
                for i in range(14):
                    loss = model(torch.randn(2, 4)).sum()
                    loss.backward()  # rank 0 waits for rank 1's slow gradient: comm
                    opt.step()
                    dist.barrier()
                    if i == 1:  # the publisher exists from the first forward on
                        pub = auto.state.pub
                        pub._gpu = gputimer.GpuTimer(FakeEvent, 4)
                        push = pub._push
                        def keep(r, push=push):
                            if isinstance(r[0], int) and r[6] is not None:
                                recs.append(r)
                            push(r)
                        pub._push = keep
                sums = {}
                for r in recs:
                    for name, c, g in zip(r[7], r[5], r[6]):
                        if g >= 0:
                            cg = sums.setdefault(name, [0, 0])
                            cg[0] += c
                            cg[1] += g
                print(json.dumps({"rank": rank, "steps": len(recs), "cpu_gpu_ms": {n: [c / 1e6 / len(recs), g / 1e6 / len(recs)] for n, (c, g) in sums.items()}}))
                """))
        outs, _, _ = run_ranks(script, [])
        for out in outs:
            got = out["cpu_gpu_ms"]
            self.assertGreaterEqual(out["steps"], 10, out)
            for name in ("forward", "backward", "optim", "comm"):
                self.assertIn(name, got, out)
                cpu, gpu = got[name]
                # Two clock readings apart (the event and the stage's own), per stage and step.
                self.assertAlmostEqual(gpu, cpu, delta=0.3 + 0.05 * cpu, msg="rank %d %s: %s" % (out["rank"], name, got))
        fast = outs[0]["cpu_gpu_ms"]
        self.assertGreater(fast["comm"][1], 25, fast)  # ~20 ms in forward's all_reduce + ~15 ms at backward's end
        self.assertLess(fast["forward"][1], 8, fast)
        self.assertLess(fast["backward"][1], 8, fast)

    def test_inert_without_process_group(self) -> None:
        script = os.path.join(tempfile.mkdtemp(prefix="ptddp", dir="/tmp"), "plain.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent("""
                import json, torch
                import torch.distributed as dist
                m = torch.nn.Linear(4, 1)
                opt = torch.optim.SGD(m.parameters(), lr=0.1)
                for i in range(5):
                    m(torch.randn(2, 4)).sum().backward()
                    opt.step()
                print(json.dumps({"rank": 0, "initialized": dist.is_initialized()}))
                """))
        outs, docs, _ = run_ranks(script, [], env_of=lambda r, port: {}, world=1)
        self.assertFalse(outs[0]["initialized"])
        self.assertEqual(docs[0]["steps"], 5)
        self.assertNotIn("comm", [s["name"] for s in docs[0]["stages"]])
        self.assertIsNone(docs[0]["ddp"])
        self.assertIsNone(docs[0]["rank_of"])


if __name__ == "__main__":
    unittest.main()
