package episodes

import (
	"fmt"
	"math/rand/v2"
)

// Shuffle fixes the order in which windows are visited (the --sampler of
// pipetrain, as PyTorch calls it). Order(epoch) is a
// permutation of window ids that depends only on the shuffle's seed and the
// epoch, so a resumed run can continue exactly where it stopped.
type Shuffle interface {
	// Order returns the visiting order for an epoch (a fresh slice).
	Order(epoch int64) []int32
	// Len is the number of windows per epoch.
	Len() int
	// Name is "uniform" or "chunk".
	Name() string
}

func epochRand(seed uint64, epoch int64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(epoch)*0x9e3779b97f4a7c15+1))
}

// Uniform visits all windows in a fresh uniformly random order each epoch.
type Uniform struct {
	N    int
	Seed uint64
}

// Order implements Shuffle.
func (u Uniform) Order(epoch int64) []int32 {
	out := make([]int32, u.N)
	for i := range out {
		out[i] = int32(i)
	}
	r := epochRand(u.Seed, epoch)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// Len implements Shuffle.
func (u Uniform) Len() int { return u.N }

// Name implements Shuffle.
func (u Uniform) Name() string { return "uniform" }

// ChunkAware shuffles at chunk granularity (see the package doc): groups of
// windows sharing a span of their last observation frame's chunk are
// visited in random order through a shuffle buffer holding Mix groups; the
// spans of one chunk are visited one after another.
type ChunkAware struct {
	groups  [][]int32
	groupOf []int32   // window id -> group
	rows    [][]int32 // chunk row -> its groups, in frame order
	n       int
	Mix     int
	Seed    uint64
}

// NewChunkAware groups the windows of idx by spanFrames-frame spans of the
// chunkFrames-frame chunks of the frame axis (spanFrames <= 0 or >=
// chunkFrames: whole chunks) and mixes mix groups at a time.
func NewChunkAware(idx *Index, chunkFrames, spanFrames, mix int, seed uint64) (*ChunkAware, error) {
	if chunkFrames < 1 || mix < 1 {
		return nil, fmt.Errorf("chunk-aware sampler: chunk frames %d and mix %d must be >= 1", chunkFrames, mix)
	}
	if spanFrames <= 0 || spanFrames > chunkFrames {
		spanFrames = chunkFrames
	}
	anchor := idx.Params.NObs - 1
	type key struct{ row, span int64 }
	byKey := map[key]int{}
	byRow := map[int64]int{}
	c := &ChunkAware{n: idx.Len(), Mix: mix, Seed: seed}
	for i, w := range idx.Windows {
		f := w.Frame(anchor)
		k := key{f / int64(chunkFrames), f % int64(chunkFrames) / int64(spanFrames)}
		g, ok := byKey[k]
		if !ok {
			g = len(c.groups)
			byKey[k] = g
			c.groups = append(c.groups, nil)
			r, ok := byRow[k.row]
			if !ok {
				r = len(c.rows)
				byRow[k.row] = r
				c.rows = append(c.rows, nil)
			}
			c.rows[r] = append(c.rows[r], int32(g))
		}
		c.groups[g] = append(c.groups[g], int32(i))
		c.groupOf = append(c.groupOf, int32(g))
	}
	return c, nil
}

// Groups is the number of chunk groups (spans).
func (c *ChunkAware) Groups() int { return len(c.groups) }

// Len implements Shuffle.
func (c *ChunkAware) Len() int { return c.n }

// Name implements Shuffle.
func (c *ChunkAware) Name() string { return "chunk" }

// Order implements Shuffle.
func (c *ChunkAware) Order(epoch int64) []int32 {
	r := epochRand(c.Seed, epoch)
	perm := c.groupOrder(r)
	out := make([]int32, 0, c.n)
	buf := make([]int32, 0, c.Mix*(c.n/max(1, len(c.groups))+1))
	left := make([]int, len(c.groups)) // windows of a buffered group not yet emitted
	next := 0
	refill := func() {
		if next < len(perm) {
			g := perm[next]
			buf = append(buf, c.groups[g]...)
			left[g] = len(c.groups[g])
			next++
		}
	}
	for range c.Mix {
		refill()
	}
	for len(buf) > 0 {
		i := r.IntN(len(buf))
		w := buf[i]
		buf[i] = buf[len(buf)-1]
		buf = buf[:len(buf)-1]
		out = append(out, w)
		g := c.groupOf[w]
		if left[g]--; left[g] == 0 {
			refill()
		}
	}
	return out
}

// groupOrder visits the chunk rows in random order and, within a row, its
// spans in random order, so a chunk decoded for one span can serve the
// next ones from the loader's store.
func (c *ChunkAware) groupOrder(r *rand.Rand) []int32 {
	out := make([]int32, 0, len(c.groups))
	for _, row := range r.Perm(len(c.rows)) {
		spans := append([]int32(nil), c.rows[row]...)
		r.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
		out = append(out, spans...)
	}
	return out
}

// Shard is one rank's part of another sampler's order, with the semantics
// of PyTorch's DistributedSampler: each epoch the inner order (already
// shuffled by seed and epoch, the same on every rank) is padded by
// repeating its start until its length is a multiple of World, and rank R
// takes positions R, R+World, R+2*World, ... So the ranks' shards are
// disjoint apart from the padding, cover every window, and are equally
// long, which keeps every rank at the same number of steps.
type Shard struct {
	Inner Shuffle
	Rank  int
	World int
}

// NewShard checks rank and world and returns rank's shard of inner.
func NewShard(inner Shuffle, rank, world int) (*Shard, error) {
	if world < 1 || rank < 0 || rank >= world {
		return nil, fmt.Errorf("shard: rank %d of world %d: want 0 <= rank < world", rank, world)
	}
	if inner.Len() < 1 {
		return nil, fmt.Errorf("shard: no windows to share among %d ranks", world)
	}
	return &Shard{Inner: inner, Rank: rank, World: world}, nil
}

// Order implements Shuffle.
func (s *Shard) Order(epoch int64) []int32 {
	all := s.Inner.Order(epoch)
	out := make([]int32, 0, s.Len())
	for i := s.Rank; len(out) < s.Len(); i += s.World {
		out = append(out, all[i%len(all)])
	}
	return out
}

// Len implements Shuffle: ceil(inner windows / world).
func (s *Shard) Len() int { return (s.Inner.Len() + s.World - 1) / s.World }

// Name implements Shuffle: the inner shuffle's name.
func (s *Shard) Name() string { return s.Inner.Name() }
