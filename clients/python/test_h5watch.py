"""Tests of the HDF5 read counters (h5watch) on real files h5py writes."""

import collections
import json
import os
import shutil
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pipetop_publish import h5watch, readwatch  # noqa: E402
from pipetop_publish.auto import _Patches  # noqa: E402

try:
    import h5py
    import numpy as np

    HAS_H5PY = True
except ImportError:  # pragma: no cover - scripts/install-deps.sh installs them
    HAS_H5PY = False

FRAME = (84, 84, 3)


def _read_error(fn):
    """fn's exception as (type, message), None when it returns."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


@unittest.skipUnless(HAS_H5PY, "h5py and numpy are not installed")
class TestH5Watch(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.patches = _Patches()
        self.assertTrue(h5watch.patch(h5py, self.patches))
        self.addCleanup(self.patches.undo)
        self.addCleanup(h5watch.registry.forget)
        h5watch.registry.forget()

    def write(self, name, shape=(120,) + FRAME, **kw):
        path = os.path.join(self.dir, name)
        with h5py.File(path, "w") as f:
            data = (np.arange(np.prod(shape), dtype=np.uint64) % 251).astype("u1").reshape(shape)
            f.create_dataset("data/demo_0/obs/image", data=data, **kw)
        return path

    def take(self):
        got = h5watch.registry.take()
        self.assertEqual(len(got), 1, got)
        return dict(zip(h5watch.FIELDS, got[0]["c"])), got[0]["info"]

    def test_per_trajectory_chunks_decode_the_trajectory_per_frame(self) -> None:
        # 60 frames of 84x84x3 are 1.27 MB, more than the 1 MiB cache: HDF5
        # decompresses the chunk again for every frame.
        for comp in ("gzip", "lzf"):
            path = self.write("t-%s.h5" % comp, chunks=(60,) + FRAME, compression=comp)
            with h5py.File(path, "r") as f:
                d = f["data/demo_0/obs/image"]
                for i in (3, 4, 70, 3):
                    self.assertEqual(d[i].shape, FRAME)
            got, info = self.take()
            self.assertEqual(got["calls"], 4)
            self.assertEqual(got["chunks_decoded"], 4)
            self.assertEqual(got["bytes_returned"], 4 * 84 * 84 * 3)
            self.assertEqual(got["bytes_decoded"] / got["bytes_returned"], 60)
            self.assertEqual(info["filter"], comp)
            self.assertEqual(info["chunks"], [60, 84, 84, 3])
            self.assertEqual(info["path"], "/data/demo_0/obs/image")
            self.assertEqual(info["file"], path)
            if comp == "gzip":
                self.assertEqual(info["filter_opts"], [4])

    def test_per_frame_chunks_decode_what_they_return(self) -> None:
        path = self.write("f.h5", chunks=(1,) + FRAME, compression="gzip", compression_opts=1, shuffle=True)
        with h5py.File(path, "r") as f:
            d = f["data/demo_0/obs/image"]
            for i in range(0, 120, 7):
                d[i]
        got, info = self.take()
        self.assertEqual(got["bytes_decoded"], got["bytes_returned"])
        self.assertEqual((info["filter"], info["filter_opts"], info["shuffle"]), ("gzip", [1], True))

    def test_cached_chunks_are_decoded_once(self) -> None:
        # 10 frames of 16x16x3: 7.7 kB chunks, 136 of them fit in the cache.
        path = self.write("c.h5", shape=(100, 16, 16, 3), chunks=(10, 16, 16, 3), compression="gzip")
        with h5py.File(path, "r") as f:
            d = f["data/demo_0/obs/image"]
            for i in range(20):
                d[i]
            got, _ = self.take()
            self.assertEqual(got["chunks_decoded"], 2)
            self.assertEqual(got["bytes_decoded"], got["bytes_returned"])
            # f[name][i] opens the dataset for each read and HDF5 drops its
            # cache when it is closed: every read decodes.
            del d
            for i in range(5):
                f["data/demo_0/obs/image"][i]
            got, _ = self.take()
            self.assertEqual(got["chunks_decoded"], 5)

    def test_the_cache_model_follows_size_and_slots(self) -> None:
        path = self.write("s.h5", shape=(100, 16, 16, 3), chunks=(10, 16, 16, 3), compression="gzip")
        # Room for 2 chunks: reading 3 in turn decodes each every time.
        with h5py.File(path, "r", rdcc_nbytes=2 * 7680 + 100) as f:
            d = f["data/demo_0/obs/image"]
            for i in (0, 10, 20, 0, 10, 20):
                d[i]
            self.assertEqual(self.take()[0]["chunks_decoded"], 6)
        # One slot: two chunks evict each other.
        with h5py.File(path, "r", rdcc_nslots=1) as f:
            d = f["data/demo_0/obs/image"]
            for i in (0, 1, 10, 11, 0):
                d[i]
            self.assertEqual(self.take()[0]["chunks_decoded"], 3)

    def test_selections(self) -> None:
        path = self.write("sel.h5", shape=(100, 16, 16, 3), chunks=(10, 8, 16, 3), compression="lzf")
        with h5py.File(path, "r", rdcc_nbytes=0) as f:
            d = f["data/demo_0/obs/image"]
            for sel, chunks in ((5, 2), (np.int64(-1), 2), (slice(5, 25), 6), ((slice(None), 0), 10),
                                ((Ellipsis, 0), 20), ([1, 2, 55], 4), ((3, slice(8, 16)), 1), (slice(0, 0), 0)):
                d[sel]
                got, _ = self.take() if chunks else ({"chunks_decoded": 0}, None)
                self.assertEqual(got["chunks_decoded"], chunks, repr(sel))
                self.assertEqual(chunks, h5watch.chunks_touched(sel, d.shape, d.chunks), repr(sel))
            out = np.zeros((2, 16, 16, 3), "u1")
            d.read_direct(out, np.s_[10:12])
            got, _ = self.take()
            self.assertEqual((got["chunks_decoded"], got["bytes_returned"]), (2, out.nbytes))

    def _counted(self, path, reads, name="data/demo_0/obs/image", **kw):
        """The counters (read_ns left out) of reads, a list of callables
        given the open dataset, through one open handle."""
        with h5py.File(path, "r", **kw) as f:
            d = f[name]
            for read in reads:
                read(d)
        got = h5watch.registry.take()
        self.assertEqual(len(got), 1, got)
        c = dict(zip(h5watch.FIELDS, got[0]["c"]))
        self.assertGreater(c.pop("read_ns"), 0)
        return c

    def test_int_reads_count_as_the_general_path(self) -> None:
        # dset[i] with a Python int takes the wrapper's inline path; an
        # np.int64 the general one (Counts.decoded): the same counts, cache
        # hits included, whatever the cache holds.
        rng = np.random.default_rng(3)
        rows = rng.integers(0, 100, 300).tolist() + list(range(40)) * 2
        layouts = {"gzip": dict(chunks=(10, 16, 16, 3), compression="gzip"),
                   "plain chunks": dict(chunks=(5, 16, 16, 3)),
                   "split rows": dict(chunks=(10, 8, 16, 3), compression="lzf"),
                   "contiguous": {}}
        caches = ({}, dict(rdcc_nbytes=3 * 7680 + 10), dict(rdcc_nslots=7), dict(rdcc_nslots=1), dict(rdcc_nbytes=0))
        for lname, layout in layouts.items():
            path = self.write("eq-%s.h5" % lname.replace(" ", "-"), shape=(100, 16, 16, 3), **layout)
            for cache in caches:
                fast = self._counted(path, [lambda d, i=i: d[i] for i in rows], **cache)
                general = self._counted(path, [lambda d, i=i: d[np.int64(i)] for i in rows], **cache)
                self.assertEqual(fast, general, (lname, cache))
                self.assertEqual(fast["calls"], len(rows))
                self.assertEqual(fast["bytes_returned"], len(rows) * 16 * 16 * 3)
                if lname == "gzip" and not cache:
                    self.assertEqual(fast["chunks_decoded"], 10, "every chunk once: the cache holds them all")

    def test_the_cache_model_matches_a_plain_lru_with_slots(self) -> None:
        # The model, keyed by slot, against a direct statement of it: LRU
        # order over the chunks kept, a chunk evicting the one in its slot.
        def reference(ids, cap, nslots):
            cache, slots, n = collections.OrderedDict(), {}, 0
            for k in ids:
                if k in cache:
                    cache.move_to_end(k)
                    continue
                n += 1
                old = slots.get(k % nslots)
                if old is not None:
                    del cache[old]
                elif len(cache) >= cap:
                    ev, _ = cache.popitem(last=False)
                    del slots[ev % nslots]
                cache[k] = None
                slots[k % nslots] = k
            return n

        rng = np.random.default_rng(5)
        for cap, nslots in ((1, 1), (3, 521), (5, 7), (7, 7), (49, 521), (10, 3)):
            c = h5watch.Counts("k", {}, (400, 2), (1, 2), 1, True, cap * 2, nslots)
            self.assertEqual((c.cap, c.nslots), (min(cap, nslots), nslots))
            ids = rng.integers(0, 60, 2000).tolist()
            self.assertEqual(sum(c.missed(k) for k in ids), reference(ids, c.cap, nslots), (cap, nslots))

    def test_a_freed_datasets_id_is_not_taken_for_the_next(self) -> None:
        # f[name][i] frees the Dataset after each read; the next DatasetID
        # may get its id(): reads alternate between two datasets of two
        # files, each counted on its own (and its cache model empty again).
        a = self.write("a.h5", shape=(50, 16, 16, 3), chunks=(10, 16, 16, 3), compression="gzip")
        b = os.path.join(self.dir, "b.h5")
        with h5py.File(b, "w") as f:
            f.create_dataset("x", data=np.zeros((50, 8), "f8"), chunks=(25, 8), compression="lzf")
        fa, fb = h5py.File(a, "r"), h5py.File(b, "r")
        self.addCleanup(fa.close)
        self.addCleanup(fb.close)
        # Read until an id was reused (at least 30 reads of each): when
        # CPython gives a new DatasetID the memory of a freed one depends
        # on what else the process allocated.
        ids, n = set(), 0
        while n < 30 or (len(ids) == 2 * n and n < 1000):
            d = fa["data/demo_0/obs/image"]
            ids.add(id(d.id))
            d[n % 50]
            del d
            d = fb["x"]
            ids.add(id(d.id))
            d[n % 50]
            del d
            n += 1
        got = {g["info"]["path"]: dict(zip(h5watch.FIELDS, g["c"])) for g in h5watch.registry.take()}
        self.assertLess(len(ids), 2 * n, "no id was reused in %d reads of each: the case this test is for never happened" % n)
        img, x = got["/data/demo_0/obs/image"], got["/x"]
        self.assertEqual((img["calls"], img["chunks_decoded"], img["bytes_returned"]), (n, n, n * 768))
        self.assertEqual(img["bytes_decoded"], n * 7680)
        self.assertEqual((x["calls"], x["chunks_decoded"], x["bytes_returned"]), (n, n, n * 64))
        self.assertEqual(x["bytes_decoded"], n * 25 * 64)

    def test_int_reads_of_records_fields_and_read_direct(self) -> None:
        path = os.path.join(self.dir, "rec2.h5")
        dt = np.dtype([("a", "f4"), ("b", "i8")])
        with h5py.File(path, "w") as f:
            f.create_dataset("r", data=np.zeros(100, dt), chunks=(10,), compression="gzip")
        reads = (lambda d: d[5], lambda d: d[15], lambda d: d[6])
        self.assertEqual(self._counted(path, reads, name="r"),
                         dict(calls=3, chunks_decoded=2, bytes_decoded=2 * 10 * 12, bytes_returned=3 * 12, forked_reads=0))
        # A field by name: the outer call is not counted, the inner one is.
        got = self._counted(path, [lambda d: d["a", 5], lambda d: d["b", 5]], name="r", rdcc_nbytes=0)
        self.assertEqual((got["calls"], got["chunks_decoded"], got["bytes_returned"]), (2, 2, 4 + 8))
        # read_direct of a row counts as dset[i] does.
        path = self.write("rd.h5", shape=(100, 16, 16, 3), chunks=(10, 16, 16, 3), compression="gzip")
        out = np.zeros((16, 16, 3), "u1")
        direct = self._counted(path, [lambda d, i=i: d.read_direct(out, np.s_[i]) for i in (3, 4, 33)])
        getitem = self._counted(path, [lambda d, i=i: d[i] for i in (3, 4, 33)])
        self.assertEqual(direct, getitem)
        self.assertEqual(getitem["chunks_decoded"], 2)

    def test_int_reads_count_what_they_return(self) -> None:
        # The bytes returned are the array's own: astype reads more.
        path = self.write("as.h5", shape=(20, 16, 16, 3), chunks=(1, 16, 16, 3), compression="gzip")
        got = self._counted(path, [lambda d: d.astype("f8")[3], lambda d: d[4]])
        self.assertEqual(got["bytes_returned"], 16 * 16 * 3 * 9)
        self.assertEqual(got["chunks_decoded"], 2)

    def test_contiguous_datasets_count_the_extent(self) -> None:
        path = self.write("contig.h5", shape=(50, 16, 16, 3))
        with h5py.File(path, "r") as f:
            d = f["data/demo_0/obs/image"]
            d[7]
            got, info = self.take()
            self.assertEqual(got["bytes_decoded"], got["bytes_returned"])
            self.assertEqual((info["filter"], info["chunks"]), ("none", []))
            d[:, 0, 0, 0]
            got, _ = self.take()
            self.assertEqual(got["bytes_decoded"], 49 * 16 * 16 * 3 + 1)

    def test_compound_fields(self) -> None:
        path = os.path.join(self.dir, "rec.h5")
        dt = np.dtype([("a", "f4"), ("b", "i8")])
        with h5py.File(path, "w") as f:
            f.create_dataset("r", data=np.zeros(100, dt), chunks=(10,), compression="gzip")
        with h5py.File(path, "r", rdcc_nbytes=0) as f:
            self.assertEqual(f["r"]["a", 5:15].shape, (10,))
        got, _ = self.take()
        self.assertEqual(got["chunks_decoded"], 2)

    def test_unknown_filter_is_named_by_id_and_its_error_is_the_users(self) -> None:
        path = os.path.join(self.dir, "unknown.h5")
        with h5py.File(path, "w") as f:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((2, 4))
            dcpl.set_filter(32001, h5py.h5z.FLAG_OPTIONAL, (0,))
            sid = h5py.h5d.create(f.id, b"u", h5py.h5t.NATIVE_UINT8, h5py.h5s.create_simple((4, 4)), dcpl=dcpl)
            sid.write_direct_chunk((0, 0), b"12345678", 0)
        self.patches.undo()
        with h5py.File(path, "r") as f:
            plain = _read_error(lambda: f["u"][0])
        self.assertIsNotNone(plain)
        self.assertTrue(h5watch.patch(h5py, self.patches))
        with h5py.File(path, "r") as f:
            d = f["u"]
            self.assertEqual(_read_error(lambda: d[0]), plain)
            self.assertEqual(h5watch.registry.take(), [], "a read that raised is not counted")
            self.assertEqual(h5watch.filters(d.id.get_create_plist())[0], "32001")

    def test_a_truncated_file_raises_the_users_error(self) -> None:
        path = self.write("trunc.h5", chunks=(10,) + FRAME, compression="gzip")
        size = os.path.getsize(path)
        for keep in (size // 2, 1000, 8):
            cut = os.path.join(self.dir, "cut-%d.h5" % keep)
            with open(path, "rb") as src, open(cut, "wb") as dst:
                dst.write(src.read(keep))

            def read(cut=cut):
                with h5py.File(cut, "r") as f:
                    return f["data/demo_0/obs/image"][100]

            self.patches.undo()
            plain = _read_error(read)
            self.assertIsNotNone(plain, keep)
            self.assertTrue(h5watch.patch(h5py, self.patches))
            self.assertEqual(_read_error(read), plain, keep)

    def test_a_file_opened_before_the_fork_is_flagged(self) -> None:
        path = self.write("fork.h5", chunks=(60,) + FRAME, compression="lzf")
        f = h5py.File(path, "r")
        self.addCleanup(f.close)
        d = f["data/demo_0/obs/image"]
        self.assertEqual(self._in_child(lambda: d[5]), 1)
        self.assertEqual(self._in_child(lambda: h5py.File(path, "r")["data/demo_0/obs/image"][5]), 0)

    def _in_child(self, read):
        """forked_reads of read() made in a forked child."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                read()
                got = h5watch.registry.take()
                os.write(w, json.dumps(got).encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r) as rf:
            got = json.loads(rf.read())
        os.waitpid(pid, 0)
        self.assertEqual(len(got), 1)
        return dict(zip(h5watch.FIELDS, got[0]["c"]))["forked_reads"]

    def test_the_files_opened_are_bounded(self) -> None:
        saved = dict(h5watch._opened)
        self.addCleanup(lambda: (h5watch._opened.clear(), h5watch._opened.update(saved)))
        h5watch._opened.clear()
        h5watch.opened(b"parent.h5", 1, 1 << 20, 521)  # a parent's file
        for i in range(2 * h5watch.MAX_OPENED):
            h5watch.opened(b"%d.h5" % i, os.getpid(), 1 << 20, 521)
        self.assertLessEqual(len(h5watch._opened), h5watch.MAX_OPENED)
        self.assertEqual(h5watch._opened[b"parent.h5"][0], 1, "another process's file is kept")
        self.assertIn(b"%d.h5" % (2 * h5watch.MAX_OPENED - 1), h5watch._opened)

    def test_loader_fields_through_readwatch(self) -> None:
        path = self.write("l.h5", chunks=(60,) + FRAME, compression="gzip")
        with h5py.File(path, "r") as f:
            f["data/demo_0/obs/image"][0]
        mine = readwatch.take()
        self.assertIn("hdf5", mine)
        readwatch.add_totals(mine)
        readwatch.add_totals(json.loads(json.dumps(mine)))  # a worker's, through JSON
        fields = readwatch.loader_fields()
        ds = fields["hdf5"][0]
        self.assertEqual((ds["calls"], ds["read_amp"], ds["opened_before_fork"]), (2, 60.0, False))
        self.assertEqual(fields["read_amp"], 60.0)
        self.assertEqual(fields["bytes_used"], 2 * 84 * 84 * 3)

    def test_unknown_versions_are_left_alone(self) -> None:
        for v in ("1.0.0", "4.0.0", "", "dev"):
            fake = types.SimpleNamespace(__version__=v)
            self.assertEqual(h5watch.version_of(fake), 0, v)
            self.assertFalse(h5watch.patch(fake, _Patches()), v)


if __name__ == "__main__":
    unittest.main()
