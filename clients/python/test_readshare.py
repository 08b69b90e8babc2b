"""Tests of counting the cheapest reads in shares of the time (readshare):
the share the cost sets, the scale of what is taken, and real PyAV and h5py
reads counted so: counts scaled to the reads made, ratios as in full."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import unittest
from typing import Any, Callable, List, Tuple

from pipetop_publish import h5watch, readshare, readwatch, videowatch
from pipetop_publish.auto import _Patches

RATE = 300  # paced reads a second: a read here takes about 0.4 ms, so a loaded box keeps up

try:
    import numpy as np
except ImportError:
    np = None
try:
    import av

    HAS_AV = np is not None and shutil.which("ffmpeg") is not None
except ImportError:
    HAS_AV = False
try:
    import h5py

    HAS_H5 = np is not None
except ImportError:
    HAS_H5 = False


class FakeFormat:
    """A format whose cost() grows as a test says; on/off are recorded."""

    def __init__(self) -> None:
        self.cost, self.inside = 0, 0
        self.calls: List[bool] = []

    def format(self) -> readshare.Format:
        return readshare.Format("fake", lambda: self.calls.append(True), lambda: self.calls.append(False),
                                lambda: (self.cost, self.inside))


class TestShare(unittest.TestCase):
    def switch(self) -> Tuple[readshare.Switch, FakeFormat]:
        s, f = readshare.Switch(), FakeFormat()
        s.formats.append(f.format())  # registered without the thread
        return s, f

    def test_the_share_keeps_the_cost_at_the_budget(self) -> None:
        s, f = self.switch()
        f.cost, f.inside = 7_000, 100_000  # 7 % of the time in the calls
        self.assertAlmostEqual(s.next_share(), readshare.BUDGET / 0.07)
        f.cost, f.inside = 7_000 + 500, 100_000 + 100_000  # 0.5 %: in full
        self.assertEqual(s.next_share(), 1.0)
        f.cost, f.inside = 7_500 + 10**6, 200_000 + 1  # far over: the least share
        self.assertEqual(s.next_share(), readshare.MIN_SHARE)

    def test_no_reads_keep_the_share(self) -> None:
        s, f = self.switch()
        s.share = 0.3
        self.assertEqual(s.next_share(), 0.3)

    def test_counted_time_and_scale(self) -> None:
        s, f = self.switch()
        s.counted()
        time.sleep(0.05)
        s._set(False)
        time.sleep(0.15)
        passed, counted = s.counted()
        self.assertEqual(f.calls, [False])
        self.assertAlmostEqual(counted / passed, 0.25, delta=0.08)
        self.assertAlmostEqual(readshare.scale(passed, counted), passed / counted)
        self.assertEqual(readshare.scale(100, 100), 1.0)
        self.assertEqual(readshare.scale(100, 0), 1.0)

    def test_the_thread_puts_them_in_and_out(self) -> None:
        s, f = readshare.Switch(), FakeFormat()
        old = readshare.PERIOD
        readshare.PERIOD = 0.1
        self.addCleanup(setattr, readshare, "PERIOD", old)
        grow = [True]

        def costly() -> Tuple[int, int]:
            if grow[0]:
                f.cost, f.inside = f.cost + 10_000, f.inside + 100_000  # 10 %: BUDGET / 0.1
            return f.cost, f.inside

        s.register(readshare.Format("fake", lambda: f.calls.append(True), lambda: f.calls.append(False), costly))
        time.sleep(0.6)
        s.stop()
        self.assertAlmostEqual(s.share, readshare.BUDGET / 0.1)
        self.assertIn(False, f.calls)
        self.assertEqual(f.calls[-1], True)  # stopped with the wrappers in

    def test_a_forked_child_counts_afresh_in_full(self) -> None:
        s, f = readshare.Switch(), FakeFormat()
        old = readshare.PERIOD
        readshare.PERIOD = 0.1
        self.addCleanup(setattr, readshare, "PERIOD", old)
        f.cost, f.inside = 10**6, 10**6  # costly: a low share
        s.register(f.format())
        time.sleep(0.35)
        s._set(False)
        parent, parent_stop = s._thread, s._stop
        s.forked()  # as os.fork's handler runs it in the child
        self.addCleanup(s.stop)
        parent_stop.set()  # a real child has no parent thread
        parent.join()
        self.assertEqual((s.share, s._in, f.calls[-1]), (1.0, True, True))
        self.assertIsNot(s._thread, parent)
        self.assertTrue(s._thread is not None and s._thread.is_alive())
        passed, counted = s.counted()
        self.assertLessEqual(counted, passed)

    def test_scaled_counts_carry_their_fractions(self) -> None:
        carry = [0.0, 0.0]
        total = [0, 0]
        for _ in range(30):  # 30 takes of 1 read of 7 bytes, counted a third of the time
            got = readshare.scaled([1, 7], 3.3, carry)
            total = [a + b for a, b in zip(total, got)]
        self.assertEqual(total, [99, 693])  # within half a count of 99 and 693
        self.assertAlmostEqual(total[1] / total[0], 7, delta=0.1)

    def test_bad_counted_messages_are_skipped(self) -> None:
        before = list(readwatch._counted)
        for bad in ([1], [1, 2], ["a", 1], [-1, 0], [1.5, 1], None):
            readwatch.add_totals({"counted": bad})
        self.assertEqual(readwatch._counted, before)


def run_for(seconds: float, read: Callable[[int], Any], frames: int, rate: float = 0) -> int:
    """Read frames t = 0, 1, ... (cycling) for seconds; the reads made.
    With a rate, the reads are paced at that many a second (those that
    fall behind made at once), so that the reads made in any span stand
    for its length whatever else the box runs."""
    n, start = 0, time.monotonic()
    end = start + seconds
    while True:
        now = time.monotonic()
        if now >= end:
            return n
        if rate and start + n / rate > now:
            time.sleep(start + n / rate - now)
            continue
        read(n % frames)
        n += 1


@unittest.skipUnless(HAS_AV, "PyAV, numpy and ffmpeg are not installed")
class TestVideoInShares(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.path = os.path.join(self.dir, "g10.mp4")
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=64x64:rate=30",
                        "-frames:v", "100", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "10", self.path], check=True)
        self.patches = _Patches()
        if not videowatch.patch(av, self.patches):
            self.skipTest("PyAV %s is not counted" % av.__version__)
        videowatch.registry.forget()
        self.switch = readshare.Switch()
        self.switch.register(videowatch.share_format())
        self.addCleanup(self.unpatch)

    def unpatch(self) -> None:
        self.switch.stop()
        videowatch.type_patches.undo()
        self.patches.undo()
        videowatch.registry.forget()

    def test_cheap_reads_counted_in_a_share_and_scaled(self) -> None:
        c = av.open(self.path)
        self.addCleanup(c.close)
        s = c.streams.video[0]
        ticks = 1 / (s.average_rate * s.time_base)

        def read(t: int) -> Any:
            pts = int(t * ticks)
            c.seek(pts, stream=s)
            for f in c.decode(s):
                if f.pts >= pts:
                    return f.to_ndarray(format="rgb24")

        self.switch.counted()
        # Paced: the counted spans' reads stand for the whole time only as
        # far as the read rate holds; a box whose load comes and goes moved
        # unpaced reads' scaled count 17 % off. 6 s: a seek's cost depends
        # on the frame's place in its GOP, and the spans must see each.
        n = run_for(6.0, read, 100, rate=RATE)
        passed, counted = self.switch.counted()
        self.assertLess(self.switch.share, 0.9, "cheap reads stay counted in full")
        self.assertLess(counted, 0.9 * passed)
        k = readshare.scale(passed, counted)
        got = videowatch.registry.take(k)
        stream = [d for d in got if not d["key"].endswith("#-1")][0]["c"]
        returned, decoded = stream[videowatch._RETURNED], stream[videowatch._DECODED]
        # The scaled count stands for every read made.
        self.assertAlmostEqual(returned / n, 1.0, delta=0.1)
        # Frames decoded per frame returned: the counted reads', as the
        # layout gives (every frame from the keyframe before it, GOP 10).
        self.assertAlmostEqual(decoded / returned, 5.5, delta=0.05 * 5.5)


@unittest.skipUnless(HAS_H5, "h5py and numpy are not installed")
class TestHDF5InShares(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        path = os.path.join(self.dir, "f.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("img", data=np.zeros((100, 84, 84, 3), np.uint8), chunks=(1, 84, 84, 3), compression="gzip")
        self.patches = _Patches()
        h5watch.patch(h5py, self.patches)
        h5watch.registry.forget()
        self.switch = readshare.Switch()
        self.switch.register(h5watch.share_format())
        self.addCleanup(self.unpatch)
        self.f = h5py.File(path, "r")
        self.addCleanup(self.f.close)

    def unpatch(self) -> None:
        self.switch.stop()
        self.patches.undo()
        h5watch.registry.forget()

    def test_cheap_reads_counted_in_a_share_and_scaled(self) -> None:
        d = self.f["img"]
        self.switch.counted()
        # Paced, as the video reads (unpaced, one loaded CI run scaled to
        # 0.77 of the reads made); 1000 a second: a read here is cheaper.
        n = run_for(3.0, lambda i: d[i], 100, rate=1000)
        passed, counted = self.switch.counted()
        self.assertLess(self.switch.share, 0.9)
        got = h5watch.registry.take(readshare.scale(passed, counted))[0]["c"]
        self.assertAlmostEqual(got[h5watch._CALLS] / n, 1.0, delta=0.1)
        # Each scaled counter is a whole count: the ratio within a count of calls.
        self.assertAlmostEqual(got[h5watch._RETURNED] / got[h5watch._CALLS], 84 * 84 * 3,
                               delta=84 * 84 * 3 / got[h5watch._CALLS] + 1)
        # 1-frame chunks: no amplification (a chunk the cache kept is not
        # decoded again, so a little less: up to 4 % of a paced run's reads).
        amp = got[h5watch._DECODED] / got[h5watch._RETURNED]
        self.assertTrue(0.95 <= amp <= 1.01, "frames decoded per frame returned: %.3f, want 0.95 to 1" % amp)


if __name__ == "__main__":
    unittest.main()
