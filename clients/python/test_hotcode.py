"""Tests for the stack samples (stacks, workerlink, hotcode), the Zarr read
counters (zarrwatch) and the stacks frame.

Run with: /usr/bin/python3 -m unittest discover -s clients/python
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import types
import unittest

import hashlib

from pipetop_publish import hotcode, pythreads, stacks, workerlink, zarrwatch
from pipetop_publish.auto import _Patches

from test_pipetop_publish import PublisherCase, wait_for

HAS_ZARR = importlib.util.find_spec("zarr") is not None and importlib.util.find_spec("numpy") is not None


def spin_in_named_function(stop: threading.Event) -> None:
    """A pure-Python busy loop the sampler must find by name."""
    x = 0
    while not stop.is_set():
        x += 1


_unsafe = stacks.UNSAFE_MODULES


def setUpModule() -> None:
    """These tests sample stacks in this process even where another test
    module imported PyAV (which stops the sampling on CPython 3.11)."""
    stacks.UNSAFE_MODULES = ()


def tearDownModule() -> None:
    stacks.UNSAFE_MODULES = _unsafe


class TestUnsafeModules(unittest.TestCase):
    def test_an_unsafe_module_stops_the_sampling(self) -> None:
        """A module named in UNSAFE_MODULES that is imported stops the
        sampler at its next tick, and says so once."""
        sys.modules["pipetop_test_unsafe"] = types.ModuleType("pipetop_test_unsafe")
        stacks.UNSAFE_MODULES = ("pipetop_test_unsafe",)
        try:
            s = stacks.StackSampler(threading.get_ident(), stacks.TRAIN, -1, lambda: "forward", 200.0)
            s.start()
            s._thread.join(2.0)
            self.assertFalse(s._thread.is_alive())
            self.assertEqual(s.samples, 0)
            self.assertTrue(stacks.unsafe())
        finally:
            stacks.UNSAFE_MODULES = ()
            del sys.modules["pipetop_test_unsafe"]
        self.assertFalse(stacks.unsafe())


    def test_a_forked_child_leaves_it_to_its_parent(self) -> None:
        """A child forked with an unsafe module imported stays quiet (its
        parent says it); one forked without it would say it itself."""
        said = stacks._unsafe_said
        stacks.UNSAFE_MODULES = ("pipetop_test_unsafe",)
        try:
            stacks._unsafe_said = False
            stacks._forked()
            self.assertFalse(stacks._unsafe_said)
            sys.modules["pipetop_test_unsafe"] = types.ModuleType("pipetop_test_unsafe")
            stacks._forked()
            self.assertTrue(stacks._unsafe_said)
        finally:
            stacks.UNSAFE_MODULES = ()
            stacks._unsafe_said = said
            sys.modules.pop("pipetop_test_unsafe", None)


class TestKnob(unittest.TestCase):
    def test_hz(self) -> None:
        for raw, want in (("", 100.0), ("0", 0.0), ("250", 250.0), ("1e9", stacks.MAX_HZ), ("-3", 100.0), ("nan", 100.0), ("x", 100.0)):
            self.assertEqual(stacks.hz({stacks.HZ_ENV: raw}), want, raw)


class TestSwitchInterval(unittest.TestCase):
    def test_only_python_default_is_lowered(self) -> None:
        old = sys.getswitchinterval()
        self.addCleanup(sys.setswitchinterval, old)
        sys.setswitchinterval(stacks.PYTHON_SWITCH)
        stacks.tighten_switch(stacks.WORKER_SWITCH)
        self.assertAlmostEqual(sys.getswitchinterval(), stacks.WORKER_SWITCH)
        stacks.tighten_switch(stacks.TRAIN_SWITCH)  # a forked worker's parent set one too
        self.assertAlmostEqual(sys.getswitchinterval(), stacks.TRAIN_SWITCH)
        sys.setswitchinterval(0.01)  # the program's own
        stacks.tighten_switch(stacks.WORKER_SWITCH)
        self.assertAlmostEqual(sys.getswitchinterval(), 0.01)


class TestFiles(unittest.TestCase):
    def test_user_library_and_own(self) -> None:
        f = stacks.Files()
        own = f.describe(stacks.__file__)
        self.assertIsNone(own, "this package's frames are left out")
        self.assertEqual(f.describe(os.path.join(os.getcwd(), "train.py")), ("train.py", ""))
        short, lib = f.describe(threading.__file__)
        self.assertEqual((short, lib), ("threading.py", "threading"))
        self.assertEqual(f.describe("/usr/lib/python3/dist-packages/zarr/core.py"), ("zarr/core.py", "zarr"))
        self.assertEqual(f.describe("<frozen runpy>"), ("<frozen runpy>", "runpy"))


class TestSampler(unittest.TestCase):
    def test_finds_the_function_and_the_stage(self) -> None:
        stop = threading.Event()
        t = threading.Thread(target=spin_in_named_function, args=(stop,))
        t.start()
        try:
            s = stacks.StackSampler(t.ident, stacks.TRAIN, -1, lambda: "other", 200)
            s.start()
            wait_for(lambda: s.samples >= 30, "30 samples")
            s.stop()
        finally:
            stop.set()
            t.join()
        rows = stacks.Describer().rows(s.fold.take())
        total = sum(n for n, _ in rows.values())
        hit = sum(n for k, (n, _) in rows.items() if any(fr[0] == "spin_in_named_function" for fr in k[3]) and k[2] == "other")
        self.assertGreaterEqual(total, 30)
        self.assertGreaterEqual(hit / total, 0.9, rows)
        for key in rows:
            for fr in key[3]:
                self.assertFalse(fr[1].startswith("pipetop_publish"), "the package's own frame %r was kept" % (fr,))

    def test_skips_when_where_says_so(self) -> None:
        s = stacks.StackSampler(threading.get_ident(), stacks.WORKER, 0, lambda: None, 100)
        s.sample(10_000_000)
        self.assertEqual(s.samples, 0)


class TestWorkerStacks(unittest.TestCase):
    def test_start_at_the_worker_loop(self) -> None:
        # A forked worker's main thread still holds its parent's frames
        # (the loop that forked it) under torch's worker loop.
        ns: dict = {}
        path = os.path.join("torch", "utils", "data", "_utils", "worker.py")
        exec(compile("def _worker_loop(f):\n    return f()\n", "/x/site-packages/" + path, "exec"), ns)

        def parent_loop():
            return ns["_worker_loop"](lambda: sys._getframe())

        f = parent_loop()
        raw = []
        while f is not None:
            raw.append((f.f_code, f.f_lineno))
            f = f.f_back
        frames = stacks.Describer().frames(tuple(raw))
        self.assertEqual(frames[0][0], "_worker_loop")
        self.assertNotIn("parent_loop", [fr[0] for fr in frames])


def hash_without_the_gil(stop: threading.Event) -> None:
    """Native work that releases the GIL: hashlib hashes large buffers
    without it."""
    data = b"x" * (8 << 20)
    while not stop.is_set():
        hashlib.sha256(data).digest()


def sleep_a_lot(stop: threading.Event) -> None:
    """A thread that waits."""
    while not stop.is_set():
        time.sleep(0.01)


class TestOtherThreads(unittest.TestCase):
    def sample(self, targets, hz: float = 200, samples: int = 300):
        """Sample the main thread with the other threads running targets;
        what the watch took."""
        stop = threading.Event()
        threads = [threading.Thread(target=fn, args=(stop,), name=name, daemon=True) for name, fn in targets]
        for t in threads:
            t.start()
        s = stacks.StackSampler(threading.get_ident(), stacks.TRAIN, -1, lambda: "other", hz)
        s.others = pythreads.ThreadWatch({threading.get_ident()})
        old = sys.getswitchinterval()
        self.addCleanup(sys.setswitchinterval, old)
        sys.setswitchinterval(stacks.TRAIN_SWITCH)  # as the collector sets it
        comm = {}
        try:
            s.start()
            deadline = time.monotonic() + 10
            while s.samples < samples and time.monotonic() < deadline:
                time.sleep(0.02)  # the training thread waits, as it does for the GIL
            s.stop()
            for t in threads:
                with open("/proc/self/task/%d/comm" % t.native_id) as f:
                    comm[t.name] = f.read().strip()
        finally:
            stop.set()
            for t in threads:
                t.join()
        got = pythreads.Threads()
        got.add(stacks.Describer(), *s.others.take())
        body = hotcode.with_threads({"frames": [], "rows": []}, got)
        return {e["name"]: e for e in body["threads"]}, body, {t.name: t.native_id for t in threads}, comm

    @staticmethod
    def shares(e):
        """A thread's share of a core and the part of it the probes found
        it running without the GIL."""
        cpu = e["cpu_ns"] / max(1, e["covered_ns"])
        return cpu, e["free_ns"] / max(1, e["probed_ns"])

    def test_a_python_spinner_holds_the_gil(self) -> None:
        got, body, tids, comm = self.sample([("metrics-logger", spin_in_named_function), ("sleeper", sleep_a_lot),
                                             ("pipetop-own", sleep_a_lot)])
        self.assertNotIn("pipetop-own", got, "pipetop's own threads are left out")
        self.assertEqual(comm["pipetop-own"], "pipetop-own", "and named so in /proc")
        self.assertNotEqual(comm["metrics-logger"], "metrics-logger", "the run's threads keep their names")
        spin, sleeper = got["metrics-logger"], got["sleeper"]
        if os.environ.get("PIPETOP_TEST_VERBOSE"):
            print(got)
        self.assertEqual(spin["tid"], tids["metrics-logger"])
        cpu, free = self.shares(spin)
        self.assertGreater(cpu, 0.1, spin)
        self.assertGreaterEqual(spin["probes"], 3, spin)
        self.assertLess(free, 0.25 * cpu, "the spinner runs only with the GIL: %r" % spin)
        self.assertLess(self.shares(sleeper)[0], 0.1, sleeper)
        frames = body["frames"]
        names = {frames[i]["name"] for r in spin["rows"] for i in r["stack"]}
        self.assertIn("spin_in_named_function", names)

    def test_native_work_runs_without_the_gil(self) -> None:
        # 1000 samples (5 s, about 45 probes): at most ten probes a second,
        # each 0.2 ms. On a loaded box the hasher gets a core a third of the
        # time, and the 8 probes of 300 samples caught it running in 2.9 %
        # of their time against its 30 % share (a CI run; by chance alone
        # about one run in four).
        got, _, _, _ = self.sample([("hasher", hash_without_the_gil)], samples=1000)
        if os.environ.get("PIPETOP_TEST_VERBOSE"):
            print(got)
        cpu, free = self.shares(got["hasher"])
        self.assertGreater(cpu, 0.1, got)
        self.assertGreater(free, 0.25 * cpu, "the hasher runs without the GIL: %r" % got)

    def test_run_rows_are_bounded(self) -> None:
        run = pythreads.Threads()
        for i in range(stacks.MAX_RUN_ROWS + 10):
            one = pythreads.Threads()
            one.rows[(7, "t", (("f%d" % i, "a.py", i, ""),))] = [1, 10]
            one.totals[7] = [10, 10, 1, 0, 0, 0]
            run.merge(one)
        self.assertLessEqual(len(run.rows), stacks.MAX_RUN_ROWS + 1)
        self.assertEqual(sum(n for n, _ in run.rows.values()), stacks.MAX_RUN_ROWS + 10, "the samples still add up")
        body = hotcode.with_threads({"frames": [], "rows": []}, run)
        (entry,) = body["threads"]
        self.assertEqual(len(entry["rows"]), pythreads.MAX_THREAD_ROWS + 1)
        self.assertEqual(sum(r["n"] for r in entry["rows"]), stacks.MAX_RUN_ROWS + 10)

    def test_torch_threads_follow_the_setters(self) -> None:
        state = {"intra": 4}

        def set_num_threads(n: int) -> None:
            state["intra"] = n

        fake = types.SimpleNamespace(get_num_threads=lambda: state["intra"], get_num_interop_threads=lambda: 1,
                                     set_num_threads=set_num_threads)
        counts = pythreads.TorchThreads(fake)
        self.assertEqual(counts.counts, {"intra_op_threads": 4, "inter_op_threads": 1})
        fake.set_num_threads(2)
        self.assertEqual(state["intra"], 2, "the program's call still does its work")
        self.assertEqual(counts.counts["intra_op_threads"], 2)
        pythreads.TorchThreads(fake)  # a second collector does not wrap twice
        self.assertFalse(hasattr(fake.set_num_threads.__wrapped__, "_pipetop_wrapped"))
        body = hotcode.with_threads({"frames": [], "rows": []}, pythreads.Threads(), counts)
        self.assertEqual(body["intra_op_threads"], 2)
        self.assertNotIn("threads", body, "no threads sampled, no field")
        self.assertEqual(pythreads.TorchThreads(None).counts, {})

    def test_cpu_clock_of_an_ended_thread(self) -> None:
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        wait_for(lambda: not os.path.exists("/proc/self/task/%d" % t.native_id), "the thread's end")
        with self.assertRaises(OSError):
            time.clock_gettime_ns(pythreads.cpu_clock(t.native_id))
        self.assertGreater(time.clock_gettime_ns(pythreads.cpu_clock(threading.get_native_id())), 0)


class TestPayload(unittest.TestCase):
    def rows(self, n: int):
        return {("train", -1, "other", (("f%d" % i, "a.py", i, ""), ("g", "zarr/core.py", 9, "zarr"))): [1 + i % 3, 1000 * (i + 1)]
                for i in range(n)}

    def test_round_trip(self) -> None:
        rows = self.rows(5)
        body = stacks.payload(rows, 7, 1_000_000_000, 100)
        self.assertEqual(stacks.rows_of(body), rows)
        self.assertEqual(len(body["frames"]), 6, "the shared frame is listed once")

    def test_rows_beyond_the_cap_still_add_up(self) -> None:
        rows = self.rows(50)
        body, data = stacks.fitted(rows, 1, 1, 100, limit=2000)
        self.assertLessEqual(len(data), 2000)
        self.assertLess(len(body["rows"]), 50)
        self.assertEqual(sum(r["n"] for r in body["rows"]), sum(v[0] for v in rows.values()))
        self.assertEqual(sum(r["ns"] for r in body["rows"]), sum(v[1] for v in rows.values()))
        more = [r for r in body["rows"] if body["frames"][r["stack"][0]]["name"] == stacks.MORE[0]]
        self.assertEqual(len(more), 1)

    def test_fold_cap(self) -> None:
        f = stacks.Fold(cap=3)
        for i in range(10):
            f.add(("worker", 0, "", (("f%d" % i, "a.py", 1, ""),)), 1, 5)
        rows = f.take()
        self.assertEqual(len(rows), 4)  # 3 stacks and the [more stacks] row
        self.assertEqual(sum(n for n, _ in rows.values()), 10)


class TestWorkerLink(unittest.TestCase):
    def test_a_worker_message_reaches_the_main_process(self) -> None:
        r = workerlink.Receiver()
        self.addCleanup(r.close)
        fetching = [False]
        stop = threading.Event()
        ready = threading.Event()
        sender = []

        def worker() -> None:
            sender.append(workerlink.Sender(r.path, 3, lambda: "" if fetching[0] else None, 200))
            sender[0].sampler.start()
            ready.set()
            spin_in_named_function(stop)

        t = threading.Thread(target=worker)
        t.start()
        ready.wait(5)
        try:
            time.sleep(0.1)  # not fetching: no samples
            self.assertEqual(sender[0].sampler.samples, 0)
            fetching[0] = True
            wait_for(lambda: sender[0].sampler.samples >= 20, "20 samples while fetching")
        finally:
            stop.set()
            t.join()
        sender[0].sampler.stop()
        self.addCleanup(sender[0].sock.close)
        sender[0].send()
        msgs = []
        wait_for(lambda: msgs.extend(r.drain()) or msgs, "the worker's message")
        m = msgs[0]
        self.assertEqual((m["worker"], m["lost"]), (3, 0))
        rows = stacks.rows_of(m["stacks"])
        self.assertTrue(all(k[0] == "worker" and k[1] == 3 for k in rows))
        self.assertTrue(any(fr[0] == "spin_in_named_function" for k in rows for fr in k[3]))

    def test_lost_samples_are_counted(self) -> None:
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        s = workerlink.Sender(os.path.join(d, "gone.sock"), 0, lambda: "", 100)
        self.addCleanup(s.sock.close)
        s.sampler.fold.add(("worker", 0, "", ()), 4, 40)
        s.send()
        self.assertEqual(s.lost, 4)


class TestStacksFrames(PublisherCase):
    def test_only_to_viewers_that_accept_them(self) -> None:
        pub = self.publisher(flush_interval=0.005)
        plain = self.viewer(pub)
        eager = self.viewer(pub, greet=False)
        eager.sock.sendall(b'{"type":"hello","v":1,"hello":{"role":"viewer","accepts":["stacks"]}}\n')
        wait_for(lambda: any(v.stacks for v in pub._server._viewers.values()), "the eager viewer's hello")
        body = stacks.payload({("train", -1, "other", (("f", "a.py", 1, ""),)): [3, 30]}, 1, 1, 100)
        pub.stacks(body)
        got = eager.until("stacks")["stacks"]
        self.assertEqual(got["rows"], body["rows"])
        for f in plain.frames_for(0.3):
            self.assertNotEqual(f["type"], "stacks")
        self.assertEqual(pub.stats()["published"], 0, "a stacks frame is not a step")


@unittest.skipUnless(HAS_ZARR, "zarr-python and numpy are not installed")
class TestZarr(unittest.TestCase):
    def setUp(self) -> None:
        import numpy as np
        import zarr

        self.np, self.zarr = np, zarr
        self.patches = _Patches()
        if not zarrwatch.patch(zarr, self.patches):
            self.skipTest("zarr %s is not counted" % zarr.__version__)
        self.addCleanup(self.patches.undo)
        self.addCleanup(zarrwatch.registry.forget)
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def array(self, chunks):
        g = self.zarr.open_group(os.path.join(self.dir, "d.zarr"), mode="a")
        self.n = getattr(self, "n", 0) + 1
        a = g.zeros("data/cam%d" % self.n, shape=(600, 16, 16, 3), chunks=chunks, dtype="u1")
        a[:] = self.np.arange(a.size, dtype="u1").reshape(a.shape)
        zarrwatch.registry.take()
        return a

    def test_amplification_of_single_frame_reads(self) -> None:
        # Every chunk a frame touches is decoded whole: reading one frame
        # decodes chunks[0] frames when the chunks tile a frame exactly.
        for chunks in ((100, 8, 16, 3), (1, 16, 16, 3), (600, 16, 16, 1)):
            a = self.array(chunks)
            for i in (3, 150, 599):
                a[i]
            c = zarrwatch.registry.take()[0]
            got = dict(zip(zarrwatch.FIELDS, c["c"]))
            self.assertEqual(got["calls"], 3)
            self.assertEqual(got["bytes_returned"], 3 * 16 * 16 * 3)
            self.assertEqual(got["chunks_decoded"], 3 * (16 // chunks[1]) * (3 // chunks[3]))
            self.assertAlmostEqual(got["bytes_decoded"] / got["bytes_returned"], chunks[0])
            self.assertGreater(got["bytes_read"], 0)
            self.assertEqual(c["info"]["chunks"], list(chunks))
            self.assertTrue(c["info"]["store"].endswith("d.zarr"))

    def test_the_zarr3_arithmetic_matches_what_zarr2_decodes(self) -> None:
        # zarr 3 is counted from the selection and the chunk shape; the same
        # arithmetic must give the chunks zarr 2 really decodes.
        a = self.array((50, 8, 8, 3))
        np = self.np
        mask = np.zeros(a.shape, bool)
        mask[3, 3, 3, 1] = mask[500, 15, 0, 0] = True
        cases = [("basic", 5), ("basic", slice(10, 120)), ("basic", (slice(None, None, 70), 3)), ("basic", (Ellipsis, 0)),
                 ("basic", (slice(45, 55), slice(0, 9))), ("basic", np.int64(7)), ("orthogonal", ([1, 300, 599], slice(None), 5)),
                 ("coordinate", ([1, 300, 599], [0, 9, 15], [3, 3, 12], [0, 1, 2])), ("mask", mask)]
        for mode, sel in cases:
            zarrwatch.registry.take()
            if mode == "basic":
                a[sel]
            elif mode == "orthogonal":
                a.get_orthogonal_selection(sel)
            elif mode == "coordinate":
                a.vindex[sel]
            else:
                a.get_mask_selection(sel)
            got = dict(zip(zarrwatch.FIELDS, zarrwatch.registry.take()[0]["c"]))["chunks_decoded"]
            model = zarrwatch.chunks_touched(sel, a.shape, a.chunks, "basic" if mode == "orthogonal" else mode)
            self.assertEqual(model, got, "%s %r" % (mode, sel))

    def test_unknown_versions_are_left_alone(self) -> None:
        for v in ("1.0.0", "4.0.0", "", "dev"):
            fake = types.SimpleNamespace(__version__=v)
            self.assertEqual(zarrwatch.version_of(fake), 0, v)
            self.assertFalse(zarrwatch.patch(fake, _Patches()), v)

    def test_loader_fields_add_every_process(self) -> None:
        a = self.array((100, 16, 16, 3))
        a[0]
        mine = zarrwatch.registry.take()
        zarrwatch.registry.add_totals(mine)
        zarrwatch.registry.add_totals(json.loads(json.dumps(mine)))  # a worker's, through JSON
        f = zarrwatch.registry.loader_fields()
        self.assertEqual(f["zarr"][0]["calls"], 2)
        self.assertEqual(f["read_amp"], 100.0)
        self.assertEqual(f["bytes_used"], 2 * 768)


class FAKEZarr3:
    """A FAKE of zarr-python 3's Array interface (zarr 3 cannot be installed
    here): public shape, chunks, dtype, store.root, path and the read
    methods. It only shows that the zarr 3 path counts reads through the
    selection arithmetic, which TestZarr checks against real zarr 2."""

    @staticmethod
    def module():
        class Array:
            def __init__(self, root):
                import numpy as np

                self.shape, self.chunks, self.dtype, self.path = (100, 4, 4), (10, 4, 2), np.dtype("u2"), "imgs"
                self.store = types.SimpleNamespace(root=root)
                self._np = np

            def __getitem__(self, sel):
                return self._np.zeros((4, 4), dtype=self.dtype) if isinstance(sel, int) else self._np.zeros((1,), self.dtype)

            def get_basic_selection(self, sel=Ellipsis):
                return self[sel]

        arraymod = types.ModuleType("zarr.core.array")
        arraymod.Array = Array
        core = types.ModuleType("zarr.core")
        core.array = arraymod
        z = types.ModuleType("zarr")
        z.__version__ = "3.0.8"
        z.core = core
        return z, {"zarr": z, "zarr.core": core, "zarr.core.array": arraymod}


@unittest.skipUnless(HAS_ZARR, "numpy is not installed")
class TestZarr3Interface(unittest.TestCase):
    def test_reads_are_counted_from_the_selection(self) -> None:
        z, mods = FAKEZarr3.module()
        saved = {k: sys.modules.get(k) for k in mods}
        sys.modules.update(mods)
        p = _Patches()
        try:
            self.assertTrue(zarrwatch.patch(z, p))
            d = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, d)
            a = z.core.array.Array(d)
            a[7]
            a.get_basic_selection(8)
            got = zarrwatch.registry.take()[0]
        finally:
            p.undo()
            zarrwatch.registry.forget()
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
        c = dict(zip(zarrwatch.FIELDS, got["c"]))
        # arr[i] decodes the chunk of axis 0 times both chunks of axis 2.
        self.assertEqual((c["calls"], c["chunks_decoded"], c["bytes_returned"]), (2, 4, 64))
        self.assertEqual(c["bytes_decoded"], 4 * 10 * 4 * 2 * 2)
        self.assertEqual((c["bytes_read"], c["decode_ns"]), (0, 0))
        self.assertEqual(got["info"]["zarr_format"], 3)


if __name__ == "__main__":
    unittest.main()
