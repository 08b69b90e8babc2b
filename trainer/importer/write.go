package importer

import (
	"bytes"
	"fmt"
	"time"

	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// shardBytes bounds an automatic camera shard: one shard per camera is
// the import's memory.
const shardBytes = 64 << 20

// slabBytes bounds a low-dim slab.
const slabBytes = 16 << 20

// shardFrames is the camera shard length for frames of frameBytes.
func shardFrames(frameBytes int64, o Options) int {
	if o.ShardFrames > 0 {
		return o.ShardFrames
	}
	return int(max(1, min(int64(dataset.DefaultShardFrames), shardBytes/max(1, frameBytes))))
}

// write writes p into a new Zarr v3 store at dir.
func write(p *plan, dir string, codec zarr.Codec, o Options) error {
	s, err := zarr.CreateFormat(dir, 3)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	cols := append([]column(nil), p.cams...)
	for _, c := range []*column{p.state, p.action} {
		if c != nil {
			cols = append(cols, *c)
		}
	}
	for _, c := range cols {
		if err := writeColumn(s, c, codec, o); err != nil {
			return err
		}
	}
	if err := episodes.WriteEpisodeEnds(s, p.ends, codec); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if err := s.SetAttrs("", p.attrs); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if err := s.Consolidate(); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// columnSpec is c's array: cameras in 1-frame chunks in shards, vectors
// in zarr's default chunks; rows is how many it writes at a time (a
// shard, or whole chunks within slabBytes) and row the bytes of one.
func columnSpec(c column, codec zarr.Codec, o Options) (spec zarr.ArraySpec, rows int, row int64) {
	spec = zarr.ArraySpec{Shape: c.shape, DType: "<f4", Codec: codec, FillValue: 0}
	if len(c.shape) == 4 {
		spec.DType = "|u1"
		row = int64(c.shape[1] * c.shape[2] * c.shape[3])
		spec.Chunks = []int{1, c.shape[1], c.shape[2], c.shape[3]}
		rows = shardFrames(row, o)
		spec.ShardShape = []int{rows, c.shape[1], c.shape[2], c.shape[3]}
		return spec, rows, row
	}
	row = 4 * int64(c.shape[1])
	spec.Chunks = dataset.GuessChunks(c.shape, 4)
	return spec, spec.Chunks[0] * int(max(1, slabBytes/(row*int64(spec.Chunks[0])))), row
}

// writeColumn streams one array from its reader into s, a slab (a shard,
// for cameras) at a time, reading each slab back to verify it.
func writeColumn(s *zarr.Store, c column, codec zarr.Codec, o Options) error {
	spec, rows, row := columnSpec(c, codec, o)
	a, err := s.CreateArray("data/"+c.key, spec)
	if err != nil {
		return fmt.Errorf("import data/%s: %w", c.key, err)
	}
	r, err := c.open()
	if err != nil {
		return err
	}
	T := c.shape[0]
	buf := make([]byte, int64(min(rows, T))*row)
	check := make([]byte, len(buf))
	start, count := make([]int, len(c.shape)), append([]int(nil), c.shape...)
	last := time.Now()
	for t0 := 0; t0 < T; t0 += rows {
		n := min(rows, T-t0)
		b, k := buf[:int64(n)*row], check[:int64(n)*row]
		if err := r.read(b); err != nil {
			r.finish()
			return err
		}
		start[0], count[0] = t0, n
		if err := a.WriteRegion(start, count, b); err != nil {
			r.finish()
			return fmt.Errorf("import data/%s rows %d..%d: %w", c.key, t0, t0+n, err)
		}
		if err := a.ReadRegion(start, count, k); err != nil || !bytes.Equal(b, k) {
			r.finish()
			return fmt.Errorf("import data/%s rows %d..%d: read back differs from what was written (%v)", c.key, t0, t0+n, err)
		}
		if time.Since(last) > 2*time.Second {
			fmt.Fprintf(o.Progress, "  data/%s: %d/%d frames\n", c.key, t0+n, T)
			last = time.Now()
		}
	}
	if err := r.finish(); err != nil {
		return err
	}
	fmt.Fprintf(o.Progress, "  data/%s %v <- %s: done\n", c.key, c.shape, c.source)
	return nil
}
