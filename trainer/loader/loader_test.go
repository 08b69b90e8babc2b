package loader

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// smallDataset writes a 32x32 procedural dataset with the given camera
// chunking (0 = zarr's default guess) and returns its directory.
func smallDataset(t testing.TB, chunkFrames int, codec string) string {
	return sizedDataset(t, chunkFrames, codec, 3, 25)
}

func sizedDataset(t testing.TB, chunkFrames int, codec string, episodes, frames int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ds")
	err := dataset.Generate(dataset.GenOptions{Out: dir, Episodes: episodes, Frames: frames, ChunkFrames: chunkFrames, Codec: codec, Seed: 3, Size: 32})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// reference reads a window's frames directly with zarr.ReadRegion, an
// independent path from the loader's.
type reference struct {
	b   *episodes.Buffer
	idx *episodes.Index
}

func newReference(t *testing.T, dir string) reference {
	b, err := episodes.Open(dir, episodes.DefaultKeys)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := b.Index(episodes.DefaultWindow)
	if err != nil {
		t.Fatal(err)
	}
	return reference{b, idx}
}

func (r reference) row(t *testing.T, a *zarr.Array, f int64) []byte {
	sh := a.Shape()
	count := append([]int{1}, sh[1:]...)
	start := make([]int, len(sh))
	start[0] = int(f)
	n := a.DType().Size
	for _, c := range count {
		n *= c
	}
	buf := make([]byte, n)
	if err := a.ReadRegion(start, count, buf); err != nil {
		t.Fatal(err)
	}
	return buf
}

func floatsLE(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
	return out
}

// check compares every sample of a batch with the reference reader.
func (r reference) check(t *testing.T, b *Batch) {
	t.Helper()
	for i := 0; i < b.Size; i++ {
		w := r.idx.Windows[b.Windows[i]]
		for j := 0; j < b.NObs; j++ {
			f := w.Frame(j)
			for c, a := range r.b.Cameras {
				if !bytes.Equal(b.Frame(i, j, c), r.row(t, a, f)) {
					t.Fatalf("sample %d obs %d camera %d (frame %d) differs", i, j, c, f)
				}
			}
			st := b.State[(i*b.NObs+j)*b.StateDim : (i*b.NObs+j+1)*b.StateDim]
			if !bytes.Equal(floatsLE(st), r.row(t, r.b.LowDim[0], f)) {
				t.Fatalf("sample %d obs %d state differs", i, j)
			}
		}
		for j := 0; j < b.Horizon; j++ {
			act := b.Action[(i*b.Horizon+j)*b.ActionDim : (i*b.Horizon+j+1)*b.ActionDim]
			if !bytes.Equal(floatsLE(act), r.row(t, r.b.Action, w.Frame(j))) {
				t.Fatalf("sample %d action %d differs", i, j)
			}
		}
	}
}

func collect(t *testing.T, cfg Config, batches int) []*Batch {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []*Batch
	for range batches {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		b, err := l.Next(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		c := *b
		c.Images, c.State, c.Action, c.Windows = slices.Clone(b.Images), slices.Clone(b.State), slices.Clone(b.Action), slices.Clone(b.Windows)
		out = append(out, &c)
		l.Release(b)
	}
	return out
}

func TestLoaderMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name             string
		chunk            int
		codec            string
		episodes, frames int
	}{
		{"1-frame blosc", 1, "blosc-lz4", 3, 25},
		{"default chunking, one row", 0, "blosc-lz4", 3, 25},
		// zarr's guess here is (500,16,16,3): two rows of four chunks.
		{"default chunking, split frames", 0, "blosc-lz4", 4, 250},
		{"7-frame zstd", 7, "zstd", 3, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sizedDataset(t, tc.chunk, tc.codec, tc.episodes, tc.frames)
			ref := newReference(t, dir)
			for _, sampler := range []string{"uniform", "chunk"} {
				var first []*Batch
				for _, workers := range []int{0, 1, 3} {
					cfg := Config{Dir: dir, Batch: 8, Workers: workers, Sampler: sampler, Mix: 3, Seed: 5}
					if workers == 3 {
						cfg.CacheBytes = 1 // nothing cached: every batch decodes what it needs (Mix is set: its default follows the cache)
					}
					got := collect(t, cfg, 12)
					for _, b := range got {
						ref.check(t, b)
					}
					if first == nil {
						first = got
						continue
					}
					for k := range got {
						if !slices.Equal(got[k].Windows, first[k].Windows) || !bytes.Equal(got[k].Images, first[k].Images) {
							t.Fatalf("%s: batch %d differs between 0 and %d workers", sampler, k, workers)
						}
					}
				}
				// Each window appears once in the first epoch.
				var seen []int32
				for _, b := range first {
					seen = append(seen, b.Windows...)
				}
				epoch := slices.Clone(seen[:min(len(seen), ref.idx.Len())])
				slices.Sort(epoch)
				epoch = slices.Compact(epoch)
				if len(epoch) != min(len(seen), ref.idx.Len()) {
					t.Fatalf("%s: a window repeats within the first epoch", sampler)
				}
				for k, v := range epoch {
					if len(seen) >= ref.idx.Len() && int(v) != k {
						t.Fatalf("%s: first epoch is not a permutation of the windows", sampler)
					}
				}
			}
		})
	}
}

func TestResume(t *testing.T) {
	dir := smallDataset(t, 1, "lz4")
	all := collect(t, Config{Dir: dir, Batch: 5, Workers: 2, Sampler: "chunk", Seed: 9}, 20)
	l, err := New(Config{Dir: dir, Batch: 5, Workers: 2, Sampler: "chunk", Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		l.Release(b)
	}
	pos := l.Position()
	l.Close()
	if pos != 35 {
		t.Fatalf("Position after 7 batches of 5 = %d, want 35", pos)
	}
	rest := collect(t, Config{Dir: dir, Batch: 5, Workers: 1, Sampler: "chunk", Seed: 9, StartSample: pos}, 13)
	for k, b := range rest {
		if !slices.Equal(b.Windows, all[7+k].Windows) || b.Sample != all[7+k].Sample {
			t.Fatalf("resumed batch %d differs from the uninterrupted run", k)
		}
	}
}

func TestStats(t *testing.T) {
	dir := smallDataset(t, 1, "blosc-lz4")
	l, err := New(Config{Dir: dir, Batch: 16, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 10 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		l.Release(b)
	}
	s := l.Stats()
	if s.Dataset != dir || s.Workers != 2 || s.Batch != 16 || s.BytesRead <= 0 || s.BytesUsed <= 0 || s.DecodeNs <= 0 {
		t.Fatalf("stats %+v", s)
	}
	// 1-frame chunks never decode more than is used (frames the cache
	// keeps are used again without decoding); the low-dim arrays are
	// decoded once and cached.
	if s.ReadAmp <= 0 || s.ReadAmp > 1.05 {
		t.Errorf("read amplification %.3f with 1-frame chunks, want in (0, 1]", s.ReadAmp)
	}
	if s.CacheHitRate <= 0.5 {
		t.Errorf("cache hit rate %.2f: low-dim chunks should be cached", s.CacheHitRate)
	}
	// Left alone, the workers fill every free buffer: the queue is full,
	// and never deeper than its reported capacity.
	deadline := time.Now().Add(5 * time.Second)
	for s = l.Stats(); s.QueueDepth < s.QueueCap && time.Now().Before(deadline); s = l.Stats() {
		time.Sleep(10 * time.Millisecond)
	}
	if s.QueueDepth != s.QueueCap || s.QueueCap < 2 {
		t.Errorf("idle loader: queue %d/%d, want full", s.QueueDepth, s.QueueCap)
	}
}

// TestCorruptChunkSurfaces truncates one camera chunk: the batch needing it
// fails with an error naming the array and chunk; nothing hangs or panics
// and the loader keeps going.
func TestCorruptChunkSurfaces(t *testing.T) {
	for _, workers := range []int{0, 2} {
		dir := smallDataset(t, 1, "blosc-lz4")
		// Corrupt every chunk of camera2 so the first batch hits one.
		files, err := filepath.Glob(filepath.Join(dir, "data", "camera2", "*"))
		if err != nil || len(files) == 0 {
			t.Fatal("no chunk files", err)
		}
		for _, f := range files {
			if filepath.Base(f)[0] == '.' {
				continue
			}
			if err := os.Truncate(f, 20); err != nil {
				t.Fatal(err)
			}
		}
		l, err := New(Config{Dir: dir, Batch: 4, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err = l.Next(ctx)
			cancel()
			if err == nil || !strings.Contains(err.Error(), `array "data/camera2" chunk `) || !strings.Contains(err.Error(), "blosc") {
				t.Fatalf("workers %d: error %v does not name the array, chunk and codec", workers, err)
			}
		}
		if s := l.Stats(); s.Errors != 3 {
			t.Errorf("Errors = %d, want 3", s.Errors)
		}
		l.Close()
	}
}

func TestConfigErrors(t *testing.T) {
	dir := smallDataset(t, 1, "lz4")
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Dir: dir}, "batch size 0"},
		{Config{Dir: dir, Batch: 1, Sampler: "random"}, `unknown sampler "random"`},
		{Config{Dir: dir, Batch: 1, Keys: episodes.Keys{Cameras: []string{"wrist"}, Action: "action"}}, `key "wrist"`},
		{Config{Dir: filepath.Join(dir, "nope"), Batch: 1}, "no such file"},
		{Config{Dir: dir, Batch: 1, Window: episodes.WindowParams{NObs: 2, Horizon: 90, NActionSteps: 1}}, "no training windows"},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) error %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

func TestHoldingAllBuffersIsAnError(t *testing.T) {
	dir := smallDataset(t, 1, "lz4")
	l, err := New(Config{Dir: dir, Batch: 2, Workers: 1, Prefetch: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var err2 error
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err2 = l.Next(ctx)
		cancel()
		if err2 != nil {
			break
		}
	}
	if err2 == nil || !strings.Contains(err2.Error(), "without Release") {
		t.Fatalf("never-released batches: %v", err2)
	}
}

func TestNextAfterClose(t *testing.T) {
	l, err := New(Config{Dir: smallDataset(t, 1, "lz4"), Batch: 2, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := l.Next(context.Background()); err != ErrClosed {
		t.Fatalf("Next after Close: %v", err)
	}
}

func TestSyntheticBatch(t *testing.T) {
	a := SyntheticBatch(DefaultShape, 3, 1)
	b := SyntheticBatch(DefaultShape, 3, 1)
	c := SyntheticBatch(DefaultShape, 3, 2)
	if len(a.Images) != 3*2*4*128*128*3 || len(a.State) != 3*2*14 || len(a.Action) != 3*16*14 {
		t.Fatalf("sizes %d %d %d", len(a.Images), len(a.State), len(a.Action))
	}
	if !bytes.Equal(a.Images, b.Images) || bytes.Equal(a.Images, c.Images) {
		t.Error("SyntheticBatch is not seeded")
	}
	if a.Shape() != DefaultShape {
		t.Errorf("shape %+v", a.Shape())
	}
}
