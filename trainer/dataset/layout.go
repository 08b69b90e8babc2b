package dataset

import "fmt"

// ShardFileThreshold is the number of chunk files per camera array above
// which inspect recommends Zarr v3 shards over one file per frame: past
// about ten thousand files an array is slow to copy, to list and to open
// on network file systems and object stores, where large robot datasets
// live, while its reads stay as fast in shards.
const ShardFileThreshold = 10_000

// DefaultShardFrames is the shard length inspect recommends: 1,000 frames
// of a 128x128 camera is a 49 MB shard, one file where 1-frame chunks
// would make a thousand.
const DefaultShardFrames = 1000

// Layout is how a command stores camera arrays: the Zarr format, and for
// format 3 optionally shards of whole frames.
type Layout struct {
	// Format is the Zarr version to write, 2 or 3.
	Format int
	// ShardFrames, in format 3, stores camera chunks in shards of this
	// many frames (a multiple of the chunk frames); 0 writes a file per
	// chunk.
	ShardFrames int
}

func (l Layout) check(chunkFrames int) error {
	switch {
	case l.Format != 2 && l.Format != 3:
		return fmt.Errorf("format %d: want 2 or 3", l.Format)
	case l.ShardFrames < 0:
		return fmt.Errorf("shard frames %d must be >= 1 (or 0 for no shards)", l.ShardFrames)
	case l.ShardFrames > 0 && l.Format != 3:
		return fmt.Errorf("shards (--shard-frames %d) need Zarr format 3 (--format 3)", l.ShardFrames)
	case l.ShardFrames > 0 && chunkFrames > 0 && l.ShardFrames%chunkFrames != 0:
		return fmt.Errorf("shard frames %d must be a multiple of the chunk frames %d", l.ShardFrames, chunkFrames)
	}
	return nil
}

// shardShape is the shard shape for a camera array chunked as chunks
// (nil without shards): ShardFrames frames, and whole chunks covering the
// frame on the other axes.
func (l Layout) shardShape(shape, chunks []int) []int {
	if l.ShardFrames == 0 || len(shape) < 3 {
		return nil
	}
	out := []int{l.ShardFrames}
	for i := 1; i < len(shape); i++ {
		out = append(out, (shape[i]+chunks[i]-1)/chunks[i]*chunks[i])
	}
	return out
}

// writeRows is how many frames a writer of a should cover at a time:
// a shard when sharded (each shard is then written once), else a chunk.
func writeRows(chunks, shards []int) int {
	if shards != nil {
		return shards[0]
	}
	return chunks[0]
}
