"""Tests for pipetop_publish, over real Unix sockets.

Run with: /usr/bin/python3 -m unittest discover -s clients/python
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from typing import Any, Dict, List, Optional
from unittest import mock

import pipetop_publish as pp
from pipetop_publish import gputimer, identity, publisher, wire

HELLO = b'{"type":"hello","v":1,"hello":{"role":"viewer"}}\n'


class Viewer:
    """A test viewer: connects, greets, and reads frames."""

    def __init__(self, path: str, greet: bool = True, rcvbuf: Optional[int] = None) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(path)
        self.sock.settimeout(5.0)
        self.buf = b""
        if greet:
            self.sock.sendall(HELLO)

    def frame(self) -> Optional[Dict[str, Any]]:
        """Return the next frame, or None at EOF."""
        while b"\n" not in self.buf:
            data = self.sock.recv(1 << 16)
            if not data:
                if self.buf:
                    raise AssertionError("partial frame at EOF: %r" % self.buf[:80])
                return None
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def all_frames(self) -> List[Dict[str, Any]]:
        """Read frames until the publisher closes the connection."""
        out = []
        while True:
            f = self.frame()
            if f is None:
                return out
            out.append(f)

    def frames_for(self, seconds: float) -> List[Dict[str, Any]]:
        """Return the frames that arrive within the given time."""
        out: List[Dict[str, Any]] = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.sock.settimeout(max(0.01, end - time.monotonic()))
            try:
                f = self.frame()
            except socket.timeout:
                break
            if f is None:
                break
            out.append(f)
        self.sock.settimeout(5.0)
        return out

    def until(self, typ: str) -> Dict[str, Any]:
        """Read until a frame of the given type arrives."""
        while True:
            f = self.frame()
            if f is None:
                raise AssertionError("EOF before a %s frame" % typ)
            if f["type"] == typ:
                return f

    def close(self) -> None:
        self.sock.close()


def steps_of(frames: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [s for f in frames if f["type"] == "steps" for s in f["steps"]]


def wait_for(cond, what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.005)


class PublisherCase(unittest.TestCase):
    """Each test gets its own socket directory."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="ppt", dir="/tmp")
        self.addCleanup(shutil.rmtree, self.dir, True)
        os.environ["PIPETOP_SOCKET_DIR"] = self.dir
        self.addCleanup(os.environ.pop, "PIPETOP_SOCKET_DIR", None)

    def publisher(self, **kw: Any) -> pp.Publisher:
        kw.setdefault("name", "t")
        pub = pp.Publisher(**kw)
        self.addCleanup(pub.close, 0.1)
        return pub

    def viewer(self, pub: pp.Publisher, **kw: Any) -> Viewer:
        v = Viewer(pub.path, **kw)
        self.addCleanup(v.close)
        return v


class TestFrames(PublisherCase):
    def test_progress_only_to_viewers_that_accept_it(self) -> None:
        pub = self.publisher(flush_interval=0.005)
        plain = self.viewer(pub)
        eager = self.viewer(pub, greet=False)
        eager.sock.sendall(b'{"type":"hello","v":1,"hello":{"role":"viewer","accepts":["progress"]}}\n')
        before = time.time_ns()
        with pub.stage("data_wait"):
            p = eager.until("progress")["progress"]
            self.assertEqual(p["stage"], "data_wait")
            self.assertEqual(p["step"], 0)
            self.assertEqual(p["done"], 0)
            self.assertLessEqual(p["step_t0"], p["since"])
            self.assertGreaterEqual(p["since"], before - 10**8)
        pub.step()
        with pub.stage("forward"):
            pass
        p = eager.until("progress")["progress"]
        self.assertEqual((p["stage"], p["step"], p["done"]), ("other", 1, 1))
        for f in plain.frames_for(0.3):
            self.assertNotEqual(f["type"], "progress")

    def test_batched_viewer_gets_every_step_in_few_bursts(self) -> None:
        pub = self.publisher(flush_interval=0.01)
        v = self.viewer(pub, greet=False)
        v.sock.sendall(b'{"type":"hello","v":1,"hello":{"role":"viewer","batch_ms":300}}\n')
        self.assertEqual(v.frame()["type"], "hello")
        wait_for(lambda: any(x.batch > 0 for x in pub._server._viewers.values()), "the viewer's hello")
        arrivals: List[float] = []
        steps: List[int] = []

        def read() -> None:
            while len(steps) < 120:
                f = v.frame()
                if f is None:
                    return
                if f["type"] == "steps":
                    arrivals.append(time.monotonic())
                    steps.extend(s["step"] for s in f["steps"])

        reader = threading.Thread(target=read)
        reader.start()
        for _ in range(120):
            with pub.stage("forward"):
                time.sleep(0.01)
            pub.step()
        reader.join(10)
        self.assertEqual(steps, list(range(120)))
        bursts = 1 + sum(1 for a, b in zip(arrivals, arrivals[1:]) if b - a > 0.1)
        # 1.2 s or more of steps at one write per 300 ms: about 5 bursts of
        # several frames each (a plain viewer gets a frame per 10 ms flush).
        self.assertLessEqual(bursts, 8, arrivals)
        self.assertGreaterEqual(len(arrivals) / bursts, 2.0, arrivals)

    def test_close_sends_held_frames_at_once(self) -> None:
        pub = pp.Publisher(name="t", flush_interval=0.005)
        v = self.viewer(pub, greet=False)
        v.sock.sendall(b'{"type":"hello","v":1,"hello":{"role":"viewer","batch_ms":2000}}\n')
        wait_for(lambda: any(x.batch > 0 for x in pub._server._viewers.values()), "the viewer's hello")
        pub.step()
        time.sleep(0.05)  # the first frame goes out at once
        pub.step()
        time.sleep(0.05)  # held: the last write was just now
        start = time.monotonic()
        pub.close(1.0)
        self.assertEqual([s["step"] for s in steps_of(v.all_frames())], [0, 1])
        self.assertLess(time.monotonic() - start, 1.5)

    def test_batch_ms_is_capped(self) -> None:
        for ms, want in ((-5, 0.0), (0, 0.0), (300, 0.3), (10**6, 2.0), ("x", 0.0), (True, 0.0), (None, 0.0)):
            self.assertEqual(wire.batch_seconds(ms), want, ms)

    def test_hello(self) -> None:
        pub = self.publisher(name="my-run", config={"batch": 64, "lr": 1e-3, "obj": object()})
        f = self.viewer(pub).frame()
        self.assertEqual(f["type"], "hello")
        self.assertEqual(f["v"], 1)
        h = f["hello"]
        self.assertEqual(h["role"], "trainer")
        self.assertEqual(h["name"], "my-run")
        self.assertEqual(h["pid"], os.getpid())
        self.assertEqual(h["host_pid"], identity.host_pid())
        # The thread that opened the publisher is the training thread.
        self.assertEqual(h["tid"], threading.get_native_id())
        self.assertIn(str(h["tid"]), os.listdir("/proc/self/task"))
        self.assertEqual(h["config"]["batch"], 64)
        self.assertIsInstance(h["config"]["obj"], str)  # unencodable values become strings
        self.assertEqual(h["stages"], list(pp.CANONICAL))
        self.assertLess(h["start_ns"], time.time_ns())
        self.assertGreater(h["start_ns"], time.time_ns() - 3600 * 10**9)

    def test_hello_rank_fields(self) -> None:
        env = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}
        with mock.patch.dict(os.environ, env):
            h = self.viewer(self.publisher()).frame()["hello"]
        self.assertEqual((h["rank"], h["world_size"], h["run"]), (1, 2, "10.0.0.1:29500"))
        env["TORCHELASTIC_RUN_ID"] = "job7"
        self.assertEqual(pp.rank_fields(env)["run"], "job7")
        # A single process, or unusable values: no rank fields (rank 0 of 1).
        self.assertEqual(pp.rank_fields({}), {})
        self.assertEqual(pp.rank_fields({"WORLD_SIZE": "2", "RANK": "2"}), {})
        self.assertEqual(pp.rank_fields({"WORLD_SIZE": "x"}), {})

    def test_steps(self) -> None:
        pub = self.publisher()
        v = self.viewer(pub)
        v.frame()
        with pub.stage("forward"):
            time.sleep(0.002)
        pub.step(samples=32, loss=0.25)
        pub.step(samples=8)
        pub.step(loss=float("nan"))
        pub.step(samples=1 << 40)
        pub.close()
        got = steps_of(v.all_frames())
        self.assertEqual([s["step"] for s in got], [0, 1, 2, 3])
        self.assertEqual(got[3]["n"], (1 << 31) - 1)  # the wire count is an int32
        for prev, cur in zip(got, got[1:]):
            self.assertEqual(cur["t0"], prev["t1"])  # steps tile the timeline
            self.assertEqual(sum(cur["cpu"]), cur["t1"] - cur["t0"])
        first = got[0]
        self.assertEqual(first["n"], 32)
        self.assertEqual(first["loss"], 0.25)
        self.assertNotIn("gpu", first)
        self.assertEqual(len(first["cpu"]), len(pp.CANONICAL))
        self.assertGreaterEqual(first["cpu"][2], 2_000_000)
        self.assertLessEqual(first["t0"], first["t1"])
        self.assertNotIn("loss", got[1])
        self.assertNotIn("loss", got[2])  # NaN is left out, never sent as invalid JSON

    def test_event(self) -> None:
        pub = self.publisher()
        v = self.viewer(pub)
        v.frame()
        pub.event("checkpoint", "saved step 10" + "x" * 10000)
        ev = v.until("event")["event"]
        self.assertEqual(ev["kind"], "checkpoint")
        self.assertEqual(len(ev["msg"]), publisher.MAX_MSG)
        self.assertLessEqual(ev["t"], time.time_ns())

    def test_steps_frames_are_split(self) -> None:
        pub = self.publisher(flush_interval=3600)
        v = self.viewer(pub)
        for _ in range(wire.STEPS_PER_FRAME + 3):
            pub.step(samples=1)
        pub.close()
        sizes = [len(f["steps"]) for f in v.all_frames() if f["type"] == "steps"]
        self.assertEqual(sizes, [wire.STEPS_PER_FRAME, 3])


class TestStages(PublisherCase):
    def test_other_is_the_remainder(self) -> None:
        pub = self.publisher(flush_interval=3600)
        v = self.viewer(pub)
        with pub.stage("forward"):
            time.sleep(0.003)
        time.sleep(0.004)  # uncovered time
        pub.step()
        pub.close()
        (s,) = steps_of(v.all_frames())
        wall = s["t1"] - s["t0"]
        self.assertEqual(sum(s["cpu"]), wall)
        self.assertGreaterEqual(s["cpu"][-1], 4_000_000)

    def test_nested_spans_count_once(self) -> None:
        pub = self.publisher(flush_interval=3600)
        v = self.viewer(pub)
        with pub.stage("forward"):
            time.sleep(0.002)
            with pub.stage("sync"):
                time.sleep(0.004)
        pub.step()
        pub.close()
        (s,) = steps_of(v.all_frames())
        fwd, sync = s["cpu"][2], s["cpu"][5]
        self.assertGreaterEqual(sync, 4_000_000)
        self.assertGreaterEqual(fwd, 2_000_000)
        self.assertLess(fwd, 4_000_000 + 2_000_000)  # the nested 4 ms is not in forward
        self.assertEqual(sum(s["cpu"]), s["t1"] - s["t0"])

    def test_growth_sends_stages_before_steps(self) -> None:
        pub = self.publisher(stages=["forward", "backward"], flush_interval=3600)
        v = self.viewer(pub)
        self.assertEqual(v.frame()["hello"]["stages"], ["forward", "backward", "other"])
        pub.step()
        with pub.stage("augment"):
            pass
        with pub.stage("data_wait"):
            pass
        pub.step()
        pub.close()
        frames = v.all_frames()
        self.assertEqual([f["type"] for f in frames], ["steps", "stages", "steps"])
        self.assertEqual(len(frames[0]["steps"][0]["cpu"]), 3)
        self.assertEqual(frames[1]["stages"], ["data_wait", "forward", "backward", "augment", "other"])
        self.assertEqual(len(frames[2]["steps"][0]["cpu"]), 5)

    def test_growth_keeps_times_of_current_step(self) -> None:
        pub = self.publisher(stages=["backward"], flush_interval=3600)
        v = self.viewer(pub)
        with pub.stage("backward"):
            time.sleep(0.002)
        with pub.stage("forward"):  # inserted before backward
            pass
        pub.step()
        pub.close()
        frames = v.all_frames()
        self.assertEqual(frames[1]["stages"], ["forward", "backward", "other"])
        self.assertGreaterEqual(frames[2]["steps"][0]["cpu"][1], 2_000_000)

    def test_hello_of_late_viewer_has_current_list(self) -> None:
        pub = self.publisher(stages=["forward"])
        with pub.stage("mine"):
            pass
        pub.step()
        wait_for(lambda: pub.stats()["published"] == 1, "the step")
        time.sleep(0.15)  # two flushes: the server now speaks the new list
        v = self.viewer(pub)
        self.assertEqual(v.frame()["hello"]["stages"], ["forward", "mine", "other"])

    def test_at_most_16_stages(self) -> None:
        pub = self.publisher(stages=[], flush_interval=3600)
        v = self.viewer(pub)
        for i in range(20):
            with pub.stage("s%d" % i):
                pass
        pub.step()
        pub.close()
        frames = v.all_frames()
        stages = [f for f in frames if f["type"] == "stages"][-1]["stages"]
        self.assertEqual(len(stages), pp.MAX_STAGES)
        self.assertEqual(stages[-1], "other")
        warnings = [f["event"]["msg"] for f in frames if f["type"] == "event"]
        self.assertEqual(len(warnings), 5)
        self.assertIn("'s15' ignored", warnings[0])
        self.assertEqual(len(steps_of(frames)[0]["cpu"]), pp.MAX_STAGES)

    def test_bad_declarations(self) -> None:
        with self.assertRaisesRegex(ValueError, "17 stages declared"):
            pp.Publisher(stages=["s%d" % i for i in range(16)])
        with self.assertRaisesRegex(ValueError, "non-empty string"):
            pp.Publisher(stages=[""])
        pub = self.publisher()
        with self.assertRaisesRegex(ValueError, "non-empty string"):
            pub.stage("")

    def test_begin_step_discards(self) -> None:
        pub = self.publisher(flush_interval=3600)
        v = self.viewer(pub)
        pub.step()
        with pub.stage("forward"):
            time.sleep(0.01)  # e.g. evaluation
        pub.begin_step()
        pub.step()
        pub.close()
        s = steps_of(v.all_frames())[1]
        self.assertEqual(s["cpu"][2], 0)
        self.assertLess(s["t1"] - s["t0"], 10_000_000)


class TestLoss(unittest.TestCase):
    def test_values(self) -> None:
        class Scalar:
            def __float__(self) -> float:
                return 1.5

        cases = [(None, None), (2, 2.0), (0.5, 0.5), (Scalar(), 1.5), ("x", None), ([1.0], None)]
        for loss, want in cases:
            with self.subTest(loss=loss):
                self.assertEqual(publisher._loss_value(loss, False), (want, None))

    def test_torch_tensors(self) -> None:
        if os.environ.get("PIPETOP_NO_LIBTORCH") == "1":
            self.skipTest("PIPETOP_NO_LIBTORCH=1")
        import torch

        self.assertEqual(publisher._loss_value(torch.tensor(0.75, requires_grad=True) * 1, False), (0.75, None))
        self.assertEqual(publisher._loss_value(torch.ones(3), False), (None, None))

        class FakeCuda:
            is_cuda = True

            def item(self) -> float:
                raise AssertionError("item() on a CUDA tensor synchronizes")

        t = FakeCuda()
        self.assertEqual(publisher._loss_value(t, False), (None, None))
        self.assertEqual(publisher._loss_value(t, True), (None, t))


class TestBounds(PublisherCase):
    def test_pending_overflow_drops_oldest(self) -> None:
        pub = self.publisher(pending=10, flush_interval=3600)
        v = self.viewer(pub)
        for _ in range(100):
            pub.step(samples=1)
        self.assertEqual(pub.stats()["overflow"], 90)
        pub.close()
        got = [s["step"] for s in steps_of(v.all_frames())]
        self.assertEqual(got, list(range(90, 100)))

    def test_never_reading_viewer(self) -> None:
        pub = self.publisher(flush_interval=0.001)
        stuck = self.viewer(pub, rcvbuf=4096)
        live = self.viewer(pub)
        got: List[int] = []
        reader = threading.Thread(target=lambda: got.extend(s["step"] for s in steps_of(live.all_frames())))
        reader.start()
        wait_for(lambda: pub.stats()["viewers"] == 2, "two viewers")
        pad = "x" * 4000
        slowest = 0.0
        n = 3000
        for i in range(n):
            t = time.perf_counter()
            with pub.stage("forward"):
                pass
            pub.step(samples=1, loss=float(i))
            slowest = max(slowest, time.perf_counter() - t)
            if i % 5 == 0:
                pub.event("log", pad)
                time.sleep(0.0005)
            if i == n // 2:
                wait_for(lambda: pub.stats()["blocked"] >= 1, "the stuck viewer's buffer to fill")
        # A blocking write on the training thread would hang here, not take ms.
        self.assertLess(slowest, 0.25)
        dropped = pub.stats()["dropped"]
        self.assertGreater(dropped, 0)
        # The stuck viewer wakes up: it reads whole frames only, and it is
        # told how many it missed.
        frames: List[Dict[str, Any]] = []
        late = threading.Thread(target=lambda: frames.extend(stuck.all_frames()))
        late.start()
        wait_for(lambda: pub.stats()["blocked"] == 0, "the stuck viewer to catch up")
        pub.step(samples=1)
        pub.close(timeout=2)
        reader.join(10)
        late.join(10)
        self.assertEqual(got, list(range(n + 1)))  # the reading viewer lost nothing
        # Drop notices carry the running count: one or more (a notice goes
        # out whenever the queue has drained into the socket, which the kernel
        # may allow before the viewer reads), the last one the total. Every
        # drop was the stuck viewer's: the reading one lost nothing.
        drops = [f["dropped"] for f in frames if f["type"] == "drops"]
        self.assertTrue(drops, "the stuck viewer was told of its drops")
        self.assertEqual(drops, sorted(drops))
        self.assertEqual(drops[-1], pub.stats()["dropped"])
        self.assertGreaterEqual(drops[-1], dropped)
        stuck_steps = [s["step"] for s in steps_of(frames)]
        self.assertEqual(stuck_steps, sorted(stuck_steps))
        self.assertEqual(stuck_steps[-1], n)
        self.assertLess(len(stuck_steps), n)


class TestViewers(PublisherCase):
    def test_disconnects(self) -> None:
        pub = self.publisher(flush_interval=0.005)
        for _ in range(3):
            v = Viewer(pub.path)
            v.frame()
            v.close()
        wait_for(lambda: pub.stats()["accepted"] == 3, "three viewers")
        # A viewer vanishing with frames in flight (RST) is handled too.
        v = Viewer(pub.path, rcvbuf=4096)
        v.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        for _ in range(2000):
            pub.step()
        v.close()
        for _ in range(2000):
            pub.step()
        wait_for(lambda: pub.stats()["viewers"] == 0, "viewers to go")
        live = self.viewer(pub)
        self.assertEqual(live.frame()["type"], "hello")
        pub.step()
        self.assertTrue(live.until("steps")["steps"])
        self.assertEqual(pub.stats()["refused"], 0)

    def test_bad_input_closes_that_viewer_only(self) -> None:
        cases = [
            ("garbage", b"not json\n", "decode frame"),
            ("array", b"[1,2]\n", "not a JSON object"),
            ("no type", b"{}\n", "missing type"),
            ("other frame", b'{"type":"steps","steps":[]}\n', "only hello"),
            ("unknown", b'{"type":"bogus"}\n', "unknown frame type"),
            ("version", b'{"type":"hello","v":2,"hello":{}}\n', "version mismatch"),
            ("no hello", b'{"type":"hello","v":1}\n', "without hello"),
            ("too long", b"{" * (pp.MAX_FRAME + 10), "exceeds"),
            ("deep", b"[" * 100000 + b"\n", "recursion depth"),
        ]
        pub = self.publisher(flush_interval=0.005)
        good = self.viewer(pub)
        good.frame()
        for name, data, want in cases:
            with self.subTest(name):
                bad = self.viewer(pub, greet=False)
                bad.frame()
                try:
                    bad.sock.sendall(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                frames = []
                try:
                    frames = bad.all_frames()
                except ConnectionResetError:
                    pass
                errors = [f["error"] for f in frames if f["type"] == "error"]
                self.assertTrue(errors, "no error frame")
                self.assertIn(want, errors[-1])
        pub.step()
        self.assertEqual(good.until("steps")["steps"][0]["step"], 0)
        self.assertEqual(pub.stats()["refused"], len(cases))
        self.assertEqual(pub.stats()["errors"], 0)

    def test_version_negotiation_refuses_and_logs_once(self) -> None:
        # A viewer one version newer and one older: the trainer's hello comes
        # first (naming its version), then an error that names both versions
        # and what to do; each kind of refusal is logged once.
        cases = [
            (2, "this viewer speaks protocol 2, the trainer speaks 1 \u2014 upgrade the trainer's publisher"),
            (0, "this viewer speaks protocol 0, the trainer speaks 1 \u2014 upgrade pipetop"),
        ]
        with mock.patch("sys.stderr", new_callable=io.StringIO) as log:
            pub = self.publisher(flush_interval=0.005)
            for v, want in cases + cases:
                bad = self.viewer(pub, greet=False)
                self.assertEqual(bad.frame()["v"], pp.PROTOCOL_VERSION)
                bad.sock.sendall(json.dumps({"type": "hello", "v": v, "hello": {"role": "viewer"}}).encode() + b"\n")
                errors = [f["error"] for f in bad.all_frames() if f["type"] == "error"]
                self.assertTrue(errors, "no error frame for v%d" % v)
                self.assertIn(want, errors[-1])
            wait_for(lambda: pub.stats()["refused"] == 4, "four refusals")
            text = log.getvalue()
        self.assertEqual(text.count("refused a viewer"), 2, text)
        self.assertIn("speaks protocol 2", text)
        self.assertIn("speaks protocol 0", text)

    def test_hello_in_pieces_is_fine(self) -> None:
        pub = self.publisher(flush_interval=0.005)
        v = self.viewer(pub, greet=False)
        v.frame()
        for b in HELLO:
            v.sock.send(bytes([b]))
        pub.step()
        self.assertEqual(v.until("steps")["steps"][0]["step"], 0)


class TestPeer(PublisherCase):
    def test_check_peer(self) -> None:
        cases = [(1000, 1000, True), (0, 1000, True), (1001, 1000, False), (1000, 0, False), (0, 0, True)]
        for peer, me, ok in cases:
            with self.subTest(peer=peer, me=me):
                reason = pp.check_peer(peer, 42, me)
                self.assertEqual(reason is None, ok)
                if not ok:
                    self.assertIn("uid %d" % peer, reason)
                    self.assertIn("pid 42", reason)

    def test_other_uid_is_refused(self) -> None:
        if os.geteuid() != 0:
            self.skipTest("needs root to connect as another uid")
        # The other uid must be able to reach the socket file: use a
        # directory on a world-traversable path (/tmp may be 0700).
        base = next((d for d in ("/dev/shm", "/var/tmp", "/tmp") if os.stat(d).st_mode & 0o001), None)
        if base is None:
            self.skipTest("no world-traversable directory to put the socket in")
        d = tempfile.mkdtemp(prefix="ppt", dir=base)
        self.addCleanup(shutil.rmtree, d, True)
        pub = self.publisher(socket_path=os.path.join(d, "t.sock"))
        os.chmod(d, 0o755)
        os.chmod(pub.path, 0o666)
        script = textwrap.dedent(
            """
            import os, socket, sys
            os.setgid(65534); os.setuid(65534)
            s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
            data = b""
            while True:
                d = s.recv(4096)
                if not d: break
                data += d
            sys.stdout.write(data.decode())
            """
        )
        out = subprocess.run([sys.executable, "-c", script, pub.path], capture_output=True, timeout=20)
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        frames = [json.loads(line) for line in out.stdout.splitlines()]
        self.assertEqual([f["type"] for f in frames], ["error"])
        self.assertIn("uid 65534 is neither uid 0 nor root", frames[0]["error"])
        self.assertEqual(pub.stats()["refused"], 1)


class TestSocketFile(PublisherCase):
    def test_dir_rules(self) -> None:
        env = dict(os.environ)
        try:
            os.environ.pop("PIPETOP_SOCKET_DIR")
            os.environ["XDG_RUNTIME_DIR"] = "/run/user/7"
            self.assertEqual(pp.socket_dir(), "/run/user/7/pipetop")
            os.environ.pop("XDG_RUNTIME_DIR")
            self.assertEqual(pp.socket_dir(), "/tmp/pipetop-%d" % os.getuid())
            os.environ["PIPETOP_SOCKET_DIR"] = "/x"
            self.assertEqual(pp.socket_dir(), "/x")
        finally:
            os.environ.clear()
            os.environ.update(env)

    def test_names(self) -> None:
        self.assertEqual(pp.socket_name("my-run", 12), "my-run.12.sock")
        self.assertEqual(pp.socket_name("a/b\nc", 1), "a_b_c.1.sock")
        self.assertEqual(pp.socket_name("", 1), "trainer.1.sock")

    def test_modes_stale_and_removal(self) -> None:
        sub = os.path.join(self.dir, "sub", "pipetop")
        os.environ["PIPETOP_SOCKET_DIR"] = sub
        os.makedirs(sub, 0o700)
        path = os.path.join(sub, pp.socket_name("t", os.getpid()))
        with open(path, "w") as f:
            f.write("stale")
        pub = pp.Publisher("t")
        self.assertEqual(pub.path, path)
        self.assertEqual(os.stat(sub).st_mode & 0o777, 0o700)
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        pub.close()
        self.assertFalse(os.path.exists(path))

    def test_new_dir_is_0700(self) -> None:
        sub = os.path.join(self.dir, "fresh")
        os.environ["PIPETOP_SOCKET_DIR"] = sub
        with pp.Publisher("t"):
            self.assertEqual(os.stat(sub).st_mode & 0o777, 0o700)

    def test_dir_others_can_write_is_refused_and_left_alone(self) -> None:
        sub = os.path.join(self.dir, "open")
        os.mkdir(sub)
        os.chmod(sub, 0o777)
        os.environ["PIPETOP_SOCKET_DIR"] = sub
        with self.assertRaisesRegex(PermissionError, "mode 0777: others can write"):
            pp.Publisher("t")
        self.assertEqual(os.stat(sub).st_mode & 0o777, 0o777)

    def test_foreign_dir_is_refused(self) -> None:
        if os.geteuid() != 0:
            self.skipTest("needs root to make a directory owned by another uid")
        sub = os.path.join(self.dir, "theirs")
        os.mkdir(sub, 0o700)
        os.chown(sub, 65534, 65534)
        os.environ["PIPETOP_SOCKET_DIR"] = sub
        with self.assertRaisesRegex(PermissionError, "theirs belongs to uid 65534"):
            pp.Publisher("t")

    def test_removed_at_exit_and_not_by_forked_children(self) -> None:
        script = textwrap.dedent(
            """
            import os, sys, time
            sys.path.insert(0, sys.argv[1])
            from pipetop_publish import Publisher
            pub = Publisher("exit")
            pid = os.fork()
            if pid == 0:
                import atexit
                atexit._run_exitfuncs()   # a child that does run exit handlers
                os._exit(0)
            os.waitpid(pid, 0)
            print(pub.path, os.path.exists(pub.path))
            """
        )
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run([sys.executable, "-c", script, here], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        path, alive = out.stdout.split()
        self.assertEqual(alive, "True")
        self.assertFalse(os.path.exists(path))

    def test_child_releases_connections(self) -> None:
        pub = self.publisher()
        v = self.viewer(pub)
        v.frame()
        wait_for(lambda: pub.stats()["viewers"] == 1, "the viewer")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.read(r, 1)  # outlive the parent's close
            os._exit(0)
        try:
            pub.close()
            self.assertEqual(v.all_frames(), [])  # EOF although the child is alive
        finally:
            os.write(w, b"x")
            os.waitpid(pid, 0)
            os.close(r)
            os.close(w)


class FakeEvent:
    """Stands in for torch.cuda.Event: completes when the test says so."""

    clock = 0

    def __init__(self) -> None:
        self.at = -1
        self.done = False

    def record(self) -> None:
        FakeEvent.clock += 1
        self.at = FakeEvent.clock
        self.done = False

    def query(self) -> bool:
        return self.done

    def elapsed_time(self, end: "FakeEvent") -> float:
        assert self.done and end.done
        return (end.at - self.at) * 0.5  # ms


class TestGpuTimer(unittest.TestCase):
    def setUp(self) -> None:
        self.events: List[FakeEvent] = []

        def new() -> FakeEvent:
            e = FakeEvent()
            self.events.append(e)
            return e

        self.timer = gputimer.GpuTimer(new, max_lag=3)
        self.names = ("forward", "backward", "other")

    def rec(self, step: int) -> tuple:
        return (step, 0, 1, 1, None, (1, 2, 3), None, self.names)

    def span(self, idx: int) -> None:
        self.timer.end(self.timer.begin(), idx)

    def test_waits_for_events(self) -> None:
        self.span(0)
        self.span(1)
        self.assertEqual(self.timer.end_step(self.rec(0), None), [])
        for e in self.events:
            e.done = True
        self.span(0)
        out = self.timer.end_step(self.rec(1), None)
        self.assertEqual(len(out), 1)
        self.assertEqual(out[0][6], (500000, 500000, -1))
        self.assertEqual(out[0][5], (1, 2, 3))

    def test_max_lag_releases_unknown(self) -> None:
        for step in range(3):
            self.span(0)
            self.assertEqual(self.timer.end_step(self.rec(step), None), [])
        self.span(0)
        out = self.timer.end_step(self.rec(3), None)  # step 0 waited for 3 newer steps
        self.assertEqual([r[0] for r in out], [0])
        self.assertIsNone(out[0][6])  # nothing finished: no GPU times at all
        self.assertEqual([r[0] for r in self.timer.flush()], [1, 2, 3])

    def test_events_are_reused(self) -> None:
        for step in range(10):
            self.span(0)
            for e in self.events:
                e.done = True
            self.timer.end_step(self.rec(step), None)
        self.assertLessEqual(len(self.events), 4)

    def test_split_and_carve(self) -> None:
        """A DDP backward split at its gradients' event (compute, then the
        wait as comm) and a collective inside a forward carved out of it;
        events shared by two pairs go back to the pool once."""
        names = ("forward", "backward", "comm", "other")
        fwd = self.timer.begin()  # clock 1
        cs, ce = self.timer.begin(), self.timer.begin()  # 2, 3: a collective inside the forward
        self.timer.end(fwd, 0)  # 4
        self.timer.carve(cs, ce, 2, 0)
        bwd = self.timer.begin()  # 5
        ready = self.timer.begin()  # 6: every gradient launched
        self.timer.split(bwd, ready, 1, 2)  # 7
        lone_s, lone_e = self.timer.begin(), self.timer.begin()  # 8, 9: a collective with no stage around it
        self.timer.carve(lone_s, lone_e, 2, -1)
        for e in self.events:
            e.done = True
        out = self.timer.end_step((0, 0, 1, 1, None, (1, 1, 1, 1), None, names), None)
        # forward 3 ticks less the collective's 1; comm 1 + 1 + 1; backward 1 (0.5 ms a tick)
        self.assertEqual(out[0][6], (1000000, 500000, 1500000, -1))
        free = self.timer._free
        self.assertEqual(len(free), len(set(map(id, free))), "an event pooled twice")
        self.assertEqual(len(free), len(self.events))

    def test_split_waits_for_every_event(self) -> None:
        bwd, ready = self.timer.begin(), self.timer.begin()
        self.timer.split(bwd, ready, 1, 2)
        bwd.done = ready.done = True  # the wait after the gradients has not finished
        self.assertEqual(self.timer.end_step(self.rec(0), None), [])
        out = self.timer.flush()
        self.assertEqual(out[0][6], (-1, 500000, -1))  # the compute is known, the wait is not

    def test_loss_read_after_copy_finished(self) -> None:
        done = FakeEvent()
        released = []
        timer = gputimer.GpuTimer(FakeEvent, 3, lambda t: ([t * 2], done), released.append)
        self.assertEqual(timer.end_step(self.rec(0), 1.25), [])
        done.done = True
        out = timer.end_step(self.rec(1), None)
        self.assertEqual([(r[0], r[4]) for r in out], [(0, 2.5), (1, None)])
        self.assertEqual(released, [[2.5]])

    def test_publisher_without_cuda_warns(self) -> None:
        d = tempfile.mkdtemp(prefix="ppt", dir="/tmp")
        self.addCleanup(shutil.rmtree, d, True)
        pub = pp.Publisher("g", cuda=True, socket_path=os.path.join(d, "g.sock"), flush_interval=3600)
        v = Viewer(pub.path)
        self.addCleanup(v.close)
        with pub.stage("forward"):
            pass
        pub.step()
        pub.close()
        frames = v.all_frames()
        if pub._gpu is None:
            self.assertIn("CUDA timing requested", [f for f in frames if f["type"] == "event"][0]["event"]["msg"])
        self.assertEqual(len(steps_of(frames)), 1)


class TestDecode(unittest.TestCase):
    def test_accepts_hello(self) -> None:
        f = pp.decode_viewer_line(b'{"type":"hello","v":1,"hello":{"role":"viewer"},"extra":[1]}')
        self.assertEqual(f["hello"]["role"], "viewer")

    def test_rejects(self) -> None:
        for line in [b"", b"\xff", b"null", b'"x"', b'{"type":1}', b'{"type":"hello","v":"1","hello":{}}']:
            with self.subTest(line=line):
                with self.assertRaises(pp.ProtocolError):
                    pp.decode_viewer_line(line)


class TestEncode(unittest.TestCase):
    def test_step_json(self) -> None:
        rec = (3, 10, 20, 5, 0.1, (1, 2), (-1, 7), ("a", "other"))
        got = json.loads(wire.encode_steps([rec]))
        self.assertEqual(got, {"type": "steps", "steps": [{"step": 3, "t0": 10, "t1": 20, "n": 5, "loss": 0.1, "cpu": [1, 2], "gpu": [-1, 7]}]})
        for loss in (math.inf, -math.inf, math.nan, 1e39, -1e300):
            rec = (3, 10, 20, 5, loss, (1, 2), None, ("a", "other"))
            self.assertNotIn("loss", json.loads(wire.encode_steps([rec]))["steps"][0], loss)


class TestDecodeRandom(unittest.TestCase):
    """Random and mutated input only ever raises ProtocolError."""

    def test_random_lines(self) -> None:
        rng = random.Random(8)
        seeds = [HELLO.strip(), b'{"type":"hello","v":1,"hello":{}}', b'{"type":"steps","steps":[]}', b"[]", b"{}"]
        for _ in range(5000):
            line = bytearray(rng.choice(seeds))
            for _ in range(rng.randrange(1, 6)):
                op = rng.randrange(3)
                pos = rng.randrange(len(line) + 1)
                if op == 0:
                    line[pos:pos] = bytes([rng.randrange(256)])
                elif op == 1 and line:
                    del line[min(pos, len(line) - 1)]
                elif line:
                    line[min(pos, len(line) - 1)] = rng.randrange(256)
            try:
                f = pp.decode_viewer_line(bytes(line))
            except pp.ProtocolError:
                continue
            self.assertEqual((f["type"], f["v"]), ("hello", 1))
            self.assertIsInstance(f["hello"], dict)


if __name__ == "__main__":
    unittest.main()
