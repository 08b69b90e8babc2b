package zarr

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// benchFrames writes frames 128x128x3 camera frames (a smooth pattern
// with noise, so they compress like images) in 1-frame chunks, each in
// its own file (v2) or in shards of shard frames (v3).
func benchFrames(b *testing.B, frames, shard int) *Array {
	b.Helper()
	format := 2
	var shards []int
	if shard > 0 {
		format, shards = 3, []int{shard, 128, 128, 3}
	}
	s, err := CreateFormat(filepath.Join(b.TempDir(), "s"), format)
	if err != nil {
		b.Fatal(err)
	}
	codec, _ := NewCodec("blosc-lz4")
	a, err := s.CreateArray("cam", ArraySpec{Shape: []int{frames, 128, 128, 3}, Chunks: []int{1, 128, 128, 3},
		ShardShape: shards, DType: "|u1", Codec: codec})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	rows := 100
	if shard > 0 {
		rows = shard
	}
	slab := make([]byte, rows*128*128*3)
	for t0 := 0; t0 < frames; t0 += rows {
		for i := range slab {
			slab[i] = byte(i/3%128 + (t0+i/(128*128*3))%50 + r.IntN(8))
		}
		if err := a.WriteRegion([]int{t0, 0, 0, 0}, []int{rows, 128, 128, 3}, slab); err != nil {
			b.Fatal(err)
		}
	}
	return a
}

// BenchmarkReadFrame reads and decodes random 1-frame chunks: each from
// its own file (v2), and from 1,000-frame shards with the shard indexes
// cached (v3), the loader's read path for a sharded camera.
func BenchmarkReadFrame(b *testing.B) {
	for _, tc := range []struct {
		name  string
		shard int
	}{{"v2-1frame", 0}, {"v3-shard1000", 1000}} {
		b.Run(tc.name, func(b *testing.B) {
			const frames = 2000
			a := benchFrames(b, frames, tc.shard)
			r := rand.New(rand.NewPCG(3, 4))
			dst := make([]byte, a.ChunkBytes())
			var raw []byte
			idx := []int{0, 0, 0, 0}
			b.SetBytes(int64(len(dst)))
			for b.Loop() {
				idx[0] = r.IntN(frames)
				var err error
				if raw, err = a.ReadRaw(idx, raw[:0]); err != nil {
					b.Fatal(err)
				}
				if err := a.DecodeChunk(idx, raw, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
