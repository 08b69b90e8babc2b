package loader

import (
	"fmt"

	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// Config configures a Loader. Zero fields take the defaults noted.
type Config struct {
	// Dir is the Zarr replay buffer (required).
	Dir string
	// Keys names the camera, low-dim and action arrays (episodes.DefaultKeys
	// when all are empty; Action defaults to "action").
	Keys episodes.Keys
	// Window is the window geometry (episodes.DefaultWindow).
	Window episodes.WindowParams
	// Batch is the batch size (required, >= 1).
	Batch int
	// Workers is the number of decode goroutines; 0 decodes inline in Next.
	Workers int
	// Sampler is "uniform" (default) or "chunk" (see package replay).
	Sampler string
	// Mix is how many chunk groups the chunk-aware sampler mixes; 0 picks
	// as many as fit in a third of the cache, between 2 and 64.
	Mix int
	// Seed fixes the sample order.
	Seed uint64
	// CacheBytes caps the decoded-chunk cache (1 GiB).
	CacheBytes int64
	// Prefetch is the number of batches prepared ahead (max(2, Workers)).
	Prefetch int
	// StartSample resumes the sample stream at this position (see
	// Loader.Position).
	StartSample int64
	// Rank and World shard the windows among data-parallel ranks (see
	// episodes.Shard); World 0 or 1 reads every window.
	Rank, World int

	// onDecode, when set (by tests), sees every chunk decode and the
	// batch it was for.
	onDecode func(batch int64, a *zarr.Array, idx []int)
}

func (c *Config) setDefaults() error {
	if c.Dir == "" {
		return fmt.Errorf("loader: no dataset directory")
	}
	if c.Batch < 1 {
		return fmt.Errorf("loader: batch size %d must be >= 1", c.Batch)
	}
	if c.Workers < 0 {
		return fmt.Errorf("loader: workers %d must be >= 0", c.Workers)
	}
	if c.StartSample < 0 {
		return fmt.Errorf("loader: start sample %d must be >= 0", c.StartSample)
	}
	if len(c.Keys.Cameras) == 0 && len(c.Keys.LowDim) == 0 && c.Keys.Action == "" {
		c.Keys = episodes.DefaultKeys
	}
	if c.Keys.Action == "" {
		c.Keys.Action = episodes.DefaultKeys.Action
	}
	if c.Window == (episodes.WindowParams{}) {
		c.Window = episodes.DefaultWindow
	}
	switch c.Sampler {
	case "":
		c.Sampler = "uniform"
	case "uniform", "chunk":
	default:
		return fmt.Errorf("loader: unknown sampler %q (want uniform or chunk)", c.Sampler)
	}
	if c.CacheBytes <= 0 {
		c.CacheBytes = 1 << 30
	}
	if c.Prefetch <= 0 {
		c.Prefetch = max(2, c.Workers)
	}
	return nil
}
