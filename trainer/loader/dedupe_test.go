package loader

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pipetop/pipetop/trainer/zarr"
)

// withCameraChunks copies the dataset at src with its camera arrays
// rechunked to chunks (e.g. one channel per chunk, as zarr's default
// chunking of large frames does) and returns the copy's directory.
func withCameraChunks(t *testing.T, src string, chunks []int) string {
	t.Helper()
	in, err := zarr.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "rechunked")
	out, err := zarr.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	names, err := in.Arrays()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		a, err := in.OpenArray(name)
		if err != nil {
			t.Fatal(err)
		}
		dtype := a.DType().String()
		ch := a.Chunks()
		if len(a.Shape()) == 4 {
			ch = chunks
		}
		b, err := out.CreateArray(name, zarr.ArraySpec{Shape: a.Shape(), Chunks: ch, DType: dtype, Codec: a.Codec(), FillValue: a.FillValue()})
		if err != nil {
			t.Fatal(err)
		}
		start := make([]int, len(a.Shape()))
		buf := make([]byte, a.DType().Size*prod(a.Shape()))
		if err := a.ReadRegion(start, a.Shape(), buf); err != nil {
			t.Fatal(err)
		}
		if err := b.WriteRegion(start, a.Shape(), buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.Consolidate(); err != nil {
		t.Fatal(err)
	}
	return dst
}

func prod(v []int) int {
	n := 1
	for _, x := range v {
		n *= x
	}
	return n
}

// decodeLog counts chunk decodes per batch.
type decodeLog struct {
	mu     sync.Mutex
	counts map[string]int // "batch array chunk" -> decodes
	camera int            // camera chunk decodes in all
	last   int64          // highest batch with a camera decode
}

func (d *decodeLog) hook(batch int64, a *zarr.Array, idx []int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.counts == nil {
		d.counts = map[string]int{}
	}
	d.counts[fmt.Sprintf("batch %d %s %s", batch, a.Path(), a.ChunkKey(idx))]++
	if len(a.Shape()) == 4 {
		d.camera++
		d.last = max(d.last, batch)
	}
}

// TestChunkDecodedAtMostOncePerBatch checks the loader's promise that makes
// it never slower than decoding per sample: whatever the cache holds, each
// chunk a batch needs is decoded at most once for that batch, and a larger
// cache never decodes more. Frames are split into one-channel tiles, as
// zarr's default chunking does with 128x128 cameras.
func TestChunkDecodedAtMostOncePerBatch(t *testing.T) {
	dir := withCameraChunks(t, sizedDataset(t, 0, "blosc-lz4", 4, 50), []int{40, 16, 16, 1})
	ref := newReference(t, dir)
	frameBytes := int64(32 * 32 * 3)
	const batches = 24 // two epochs of 168 windows at batch 16, and more
	for _, sampler := range []string{"uniform", "chunk"} {
		prev := -1
		for _, cache := range []int64{1, 100 * frameBytes, 1 << 30} {
			for _, workers := range []int{0, 2} {
				var log decodeLog
				cfg := Config{Dir: dir, Batch: 16, Workers: workers, Sampler: sampler, Seed: 3, CacheBytes: cache, onDecode: log.hook}
				got := collect(t, cfg, batches)
				for _, k := range []int{0, 7, batches - 1} {
					ref.check(t, got[k])
				}
				for k, n := range log.counts {
					if n > 1 {
						t.Fatalf("%s, cache %d, %d workers: %s decoded %d times", sampler, cache, workers, k, n)
					}
				}
				if workers == 0 {
					if prev >= 0 && log.camera > prev {
						t.Errorf("%s: cache %d decoded %d camera chunks, more than the smaller cache's %d", sampler, cache, log.camera, prev)
					}
					prev = log.camera
				}
				if cache == 1<<30 && log.last >= 11 {
					t.Errorf("%s: a cache holding the dataset still decoded camera chunks for batch %d (epoch 2)", sampler, log.last)
				}
			}
		}
	}
}

// TestFrameStoreAdmission checks the store's rule on a two-frame store:
// evict the frame needed furthest ahead, admit a frame only when it is
// needed sooner than that one, never evict a pinned frame.
func TestFrameStoreAdmission(t *testing.T) {
	s := newFrameStore(2*8, 8, 0)
	j := &job{}
	key := func(f int64) frameKey { return frameKey{0, f} }
	admit := func(f, next int64) *frameEntry {
		e := s.admit(key(f), next, 0, j)
		if e != nil {
			s.unpin(e, nil) // as the filling job does when it finishes
		}
		return e
	}
	if admit(1, 10) == nil || admit(2, 20) == nil {
		t.Fatal("an empty store refused a frame")
	}
	if admit(3, 30) != nil {
		t.Error("admitted a frame needed later than everything it would evict")
	}
	if admit(4, noUse) != nil {
		t.Error("admitted a frame nobody needs")
	}
	if admit(5, 5) == nil || s.m[key(2)] != nil || s.m[key(1)] == nil {
		t.Error("a frame needed sooner did not displace the one needed furthest ahead")
	}
	// Pinned by a batch, frames 1 and 5 stay, whatever comes.
	s.pin(s.m[key(1)], 11)
	s.pin(s.m[key(5)], 11)
	if admit(6, 0) != nil || s.m[key(1)] == nil || s.m[key(5)] == nil {
		t.Error("evicted a pinned frame")
	}
	// Unpinned, an entry's key becomes its next use after the batch.
	s.unpin(s.m[key(1)], func(f, p int64) int64 { return 100 })
	s.unpin(s.m[key(5)], func(f, p int64) int64 { return 50 })
	if admit(7, 60) == nil || s.m[key(1)] != nil || s.m[key(5)] == nil {
		t.Error("after unpinning, the frame needed at 100 should have made room for one needed at 60")
	}
	if s.used > s.cap {
		t.Errorf("store holds %d bytes over its cap %d", s.used, s.cap)
	}
}
