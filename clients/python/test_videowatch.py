"""Tests of the video read counters (videowatch) on MP4 files ffmpeg writes
here: frames decoded per frame returned against the keyframe layout, the
user's reads and errors unchanged, and the counters' trip from a worker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest

from pipetop_publish import readwatch, videowatch
from pipetop_publish.auto import _Patches

try:
    import av
    import numpy as np

    HAS_AV = shutil.which("ffmpeg") is not None
except ImportError:
    HAS_AV = False

FRAMES = 120  # frames of each test video


def encode(path: str, gop: int, frames: int = FRAMES, extra: tuple = ()) -> str:
    """Write a 64x64 H.264 MP4 of frames with a keyframe every gop frames."""
    cmd = ["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=64x64:rate=30",
           "-frames:v", str(frames), *extra, "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", str(gop), path]
    subprocess.run(cmd, check=True)
    return path


def one_frame(path: str, t: int) -> "np.ndarray":
    """Open path, seek to frame t, decode up to it and return it as RGB:
    the Dataset of a video loader that opens its file for every sample."""
    with av.open(path) as c:
        s = c.streams.video[0]
        target = int(t / (s.average_rate * s.time_base))
        c.seek(target, stream=s)
        for f in c.decode(s):
            if f.pts >= target:
                return f.to_ndarray(format="rgb24")
    raise AssertionError("frame %d not found" % t)


def expected_amp(frames: int, gop: int) -> float:
    """Frames decoded per frame returned when every frame is read once,
    each from the keyframe at or before it."""
    return sum(t % gop + 1 for t in range(frames)) / frames


@unittest.skipUnless(HAS_AV, "PyAV, numpy and ffmpeg are not installed")
class TestVideo(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.mkdtemp()
        cls.files = {g: encode(os.path.join(cls.dir, "g%d.mp4" % g), g) for g in (1, 10, 100)}

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.dir)

    def setUp(self) -> None:
        self.patches = _Patches()
        if not videowatch.patch(av, self.patches):
            self.skipTest("PyAV %s is not counted" % av.__version__)
        self.addCleanup(self.unpatch)
        videowatch.registry.forget()
        self.addCleanup(videowatch.registry.forget)

    def unpatch(self) -> None:
        videowatch.type_patches.undo()
        self.patches.undo()

    def streams(self) -> dict:
        """The counted streams by file name, through the run's totals."""
        videowatch.registry.add_totals(videowatch.registry.take())
        return {os.path.basename(s["file"]): s for s in videowatch.registry.loader_fields().get("video", [])}

    def test_frames_decoded_per_frame_returned_follow_the_keyframes(self) -> None:
        for g, path in self.files.items():
            for t in range(FRAMES):
                one_frame(path, t)
        got = self.streams()
        for g in self.files:
            s = got["g%d.mp4" % g]
            self.assertEqual(s["frames_returned"], FRAMES)
            self.assertAlmostEqual(s["read_amp"], expected_amp(FRAMES, g), delta=0.01 * expected_amp(FRAMES, g))
            self.assertEqual(s["gop"], g)
            self.assertEqual((s["opens"], s["calls"], s["seeks"]), (FRAMES, FRAMES, FRAMES))
            self.assertEqual((s["codec"], s["width"], s["height"], s["stream"], s["frames"]), ("h264", 64, 64, 0, FRAMES))
            self.assertEqual(s["bytes_used"], FRAMES * 64 * 64 * 3)
            self.assertEqual(s["bytes_decoded"], s["frames_decoded"] * 64 * 64 * 3)
            self.assertGreater(s["bytes_read"], 0)
            for k in ("decode_ns", "convert_ns", "read_ns"):
                self.assertGreater(s[k], 0, k)

    def test_reads_return_what_pyav_returns(self) -> None:
        path = self.files[10]
        counted = [one_frame(path, t) for t in (0, 17, 119)]
        with av.open(path) as c:
            self.assertIs(type(c), av.container.InputContainer)
            f = next(c.decode(video=0))
            self.assertIs(type(f), av.VideoFrame)
        self.unpatch()
        plain = [one_frame(path, t) for t in (0, 17, 119)]
        for a, b in zip(counted, plain):
            self.assertTrue(np.array_equal(a, b))

    def test_a_frame_converted_twice_or_through_to_rgb_is_returned_once(self) -> None:
        with av.open(self.files[1]) as c:
            for i, f in enumerate(c.decode(video=0)):
                if i == 3:
                    break
                f.to_rgb().to_ndarray()
                f.to_image()
        s = self.streams()["g1.mp4"]
        self.assertEqual(s["frames_returned"], 3)
        self.assertGreaterEqual(s["frames_decoded"], 3)
        self.assertEqual(s["opens"], 1)
        self.assertEqual(s["calls"], 1)

    def test_a_converted_frames_own_conversions_add_their_time(self) -> None:
        """A frame made by reformat is the same frame returned: its own
        conversions add their time, not another frame."""
        with av.open(self.files[1]) as c:
            rgb = next(c.decode(video=0)).reformat(format="rgb24")
        before = self.streams()["g1.mp4"]
        for _ in range(20):
            rgb.to_ndarray()
        after = self.streams()["g1.mp4"]
        self.assertEqual((before["frames_returned"], after["frames_returned"]), (1, 1))
        self.assertGreater(after["convert_ns"], before["convert_ns"])

    def test_bytes_read_are_the_decoded_packets(self) -> None:
        """Decoding a whole file reads every packet of its video stream: the
        bytes read are their sizes, as PyAV's own demuxing gives them."""
        path = self.files[10]
        with av.open(path) as c:
            for f in c.decode(video=0):
                f.to_ndarray()
        s = self.streams()["g10.mp4"]
        self.unpatch()
        with av.open(path) as c:
            want = sum(p.size for p in c.demux(video=0))
        self.assertEqual(s["bytes_read"], want)
        self.assertEqual(s["frames_decoded"], FRAMES)

    def test_torchvision_opens_are_named(self) -> None:
        """torchvision's read_video opens the file itself on every call:
        those opens are counted as torchvision's; the user's own are not."""
        try:
            from torchvision.io import read_video
        except ImportError:
            self.fail("torchvision is not installed (apt-get install python3-torchvision)")
        path = self.files[10]
        for _ in range(3):
            read_video(path, start_pts=0, end_pts=0, pts_unit="pts")
        one_frame(path, 5)
        s = self.streams()["g10.mp4"]
        self.assertEqual((s["opens"], s["torchvision_opens"]), (4, 3))

    def test_a_container_kept_open_is_opened_once(self) -> None:
        with av.open(self.files[10]) as c:
            s = c.streams.video[0]
            for t in (5, 50, 90):
                target = int(t / (s.average_rate * s.time_base))
                c.seek(target, stream=s)
                for f in c.decode(s):
                    if f.pts >= target:
                        f.to_ndarray(format="gray")
                        break
        s = self.streams()["g10.mp4"]
        self.assertEqual((s["opens"], s["calls"], s["frames_returned"]), (1, 3, 3))
        self.assertEqual(s["frames_decoded"], 6 + 1 + 1)
        self.assertEqual(s["bytes_used"], 3 * 64 * 64)  # gray: 1 byte a pixel
        self.assertEqual(s["bytes_decoded"], 8 * 64 * 64)

    def test_bad_files_raise_the_users_own_error(self) -> None:
        good = open(self.files[10], "rb").read()
        truncated = os.path.join(self.dir, "truncated.mp4")
        with open(truncated, "wb") as f:
            f.write(good[: len(good) // 2])  # the index (moov) is at the end
        fast = encode(os.path.join(self.dir, "faststart.mp4"), 10, extra=("-movflags", "+faststart"))
        data = bytearray(open(fast, "rb").read())
        for i in range(len(data) // 4, len(data) - 64, 97):
            data[i] ^= 0x5A
        corrupt = os.path.join(self.dir, "corrupt.mp4")
        with open(corrupt, "wb") as f:
            f.write(data)
        short = os.path.join(self.dir, "short.mp4")
        with open(short, "wb") as f:
            f.write(open(fast, "rb").read()[: len(data) * 2 // 3])  # index intact, data cut

        def read_all(path: str) -> str:
            try:
                with av.open(path) as c:
                    n = sum(1 for f in c.decode(video=0) if f.to_ndarray() is not None)
                return "ok %d" % n
            except Exception as e:  # noqa: BLE001
                return "%s %s" % (type(e).__name__, e)

        paths = (truncated, corrupt, short)
        counted = [read_all(p) for p in paths]
        self.unpatch()
        plain = [read_all(p) for p in paths]
        self.assertEqual(counted, plain)
        self.assertTrue(counted[0].startswith("InvalidDataError"), counted[0])
        self.streams()  # counting survived

    def test_variable_frame_rate(self) -> None:
        path = encode(os.path.join(self.dir, "vfr.mp4"), 10, 90,
                      ("-vf", "setpts='(N+N*N/40)/30/TB'", "-fps_mode", "vfr"))
        with av.open(path) as c:
            n = sum(1 for f in c.decode(video=0) if f.to_ndarray() is not None)
        s = self.streams()["vfr.mp4"]
        self.assertEqual((s["frames_decoded"], s["frames_returned"], n), (90, 90, 90))
        self.assertEqual(s["read_amp"], 1.0)

    def test_worker_counters_reach_the_loader_frame(self) -> None:
        one_frame(self.files[100], 60)
        mine = videowatch.registry.take()
        self.assertEqual([d["key"].rsplit("#", 1)[1] for d in mine], ["-1", "0"])
        videowatch.registry.add_totals(mine)
        videowatch.registry.add_totals(json.loads(json.dumps(mine)))  # a worker's, through JSON
        readwatch_fields = readwatch.loader_fields()
        s = readwatch_fields["video"][0]
        self.assertEqual((s["opens"], s["frames_returned"], s["frames_decoded"]), (2, 2, 122))
        self.assertEqual(readwatch_fields["read_amp"], 61.0)
        self.assertEqual(readwatch_fields["bytes_used"], 2 * 64 * 64 * 3)

    def test_unknown_pyav_is_left_alone(self) -> None:
        for v in ("0.5.0", "8.1", "", "dev", "17.0"):
            fake = types.SimpleNamespace(__version__=v, open=av.open)
            self.assertEqual(videowatch.version_of(fake), 0, v)
            self.assertFalse(videowatch.patch(fake, _Patches()), v)


class TestGop(unittest.TestCase):
    def test_median_distance_between_keyframes(self) -> None:
        for kf, want in (([], 0), ([0], 0), ([0, 250], 250), ([0, 10, 20, 30, 50], 10), ([0, 10, 13, 20, 30], 7),
                         ({0, 30, 60, 200}, 30)):
            self.assertEqual(videowatch.gop_of(kf), want, kf)

    def test_bad_worker_messages_are_skipped(self) -> None:
        reg = videowatch.Registry()
        reg.add_totals([{"key": 1}, {"key": "a#0", "c": [1]}, "x", {"key": "a#0", "c": ["x"] * len(videowatch.FIELDS), "kf": ["y"]}])
        self.assertEqual(reg.loader_fields(), {})


if __name__ == "__main__":
    sys.exit(unittest.main())
