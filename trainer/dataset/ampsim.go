package dataset

import (
	"container/list"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// DefaultCacheBytes is the loader's default decoded-chunk cache (see
// loader.Config.CacheBytes); inspect models the same cache.
const DefaultCacheBytes = 1 << 30

// DefaultBatch is the batch inspect models: pipetrain train's default.
const DefaultBatch = 8

// ampSimWindows bounds the windows the read-amplification model replays.
const ampSimWindows = 8000

// uniformAmp replays what the loader decodes for batches of windows drawn
// in shuffled epochs (the uniform sampler), the way its per-batch planner
// works: every camera frame a batch needs and the frame store lacks is
// decoded with its whole chunk row, each row once per batch; the store
// (the cache less the low-dim share) keeps the decoded frames needed
// soonest, knowing the sample order; chunks of one whole frame are decoded
// straight into the batch and kept only when needed again within 8
// batches; low-dim chunks go through their own LRU share of the cache. The result is decoded bytes per byte used over the second
// half of the replay (past the cold start).
func uniformAmp(b *episodes.Buffer, idx *episodes.Index, cacheBytes int64, batch int, seed uint64) float64 {
	n := len(idx.Windows)
	if n == 0 {
		return 0
	}
	batch = max(1, batch)
	total := max(min(2*n, ampSimWindows)/batch, 2) * batch
	rng := rand.New(rand.NewPCG(seed, 1))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	seq := make([]episodes.Window, 0, total)
	for len(seq) < total {
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, id := range order {
			if len(seq) < total {
				seq = append(seq, idx.Windows[id])
			}
		}
	}
	s := newAmpSim(b, idx.Params, cacheBytes, seq)
	for start := 0; start < total; start += batch {
		if start >= total/2 && s.measureFrom < 0 {
			s.measureFrom = start
			s.decoded, s.used = 0, 0
		}
		s.batch(start, min(start+batch, total))
	}
	if s.used == 0 {
		return 0
	}
	return s.decoded / s.used
}

// frameKey is one camera frame.
type frameKey struct {
	cam   int
	frame int64
}

// ampSim is the loader's decoding as bookkeeping only.
type ampSim struct {
	b             *episodes.Buffer
	win           episodes.WindowParams
	seq           []episodes.Window
	uses          map[int64][]int // frame -> positions in seq that need it, ascending
	store         map[frameKey]bool
	storeCap      int // frames the store holds
	low           lowCache
	decoded, used float64
	measureFrom   int
}

func newAmpSim(b *episodes.Buffer, win episodes.WindowParams, cacheBytes int64, seq []episodes.Window) *ampSim {
	var lowBytes, fb int64
	for _, a := range append(append([]*zarr.Array(nil), b.LowDim...), b.Action) {
		lowBytes += int64(a.NumChunks()) * int64(a.ChunkBytes())
	}
	if len(b.Cameras) > 0 {
		sh := b.Cameras[0].Shape()
		fb = int64(sh[1] * sh[2] * sh[3] * b.Cameras[0].DType().Size)
	}
	lowCap := min(cacheBytes/8, lowBytes)
	s := &ampSim{b: b, win: win, seq: seq, uses: map[int64][]int{}, store: map[frameKey]bool{},
		low: lowCache{cap: lowCap, m: map[[2]int64]*list.Element{}, sizes: map[[2]int64]int64{}}, measureFrom: -1}
	if fb > 0 {
		s.storeCap = int((cacheBytes - lowCap) / fb)
	}
	for p, w := range seq {
		for j := 0; j < win.NObs; j++ {
			f := w.Frame(j)
			if u := s.uses[f]; len(u) == 0 || u[len(u)-1] != p {
				s.uses[f] = append(u, p)
			}
		}
	}
	return s
}

// next is the first position at or after p that needs frame f.
func (s *ampSim) next(f int64, p int) int {
	u := s.uses[f]
	i := sort.SearchInts(u, p)
	if i == len(u) {
		return math.MaxInt
	}
	return u[i]
}

// batch accounts the windows seq[from:to] as one batch.
func (s *ampSim) batch(from, to int) {
	type row struct {
		cam int
		row int64
	}
	rows := map[row]bool{}
	direct := map[frameKey]bool{}
	for _, w := range s.seq[from:to] {
		for j := 0; j < s.win.NObs; j++ {
			f := w.Frame(j)
			for c, a := range s.b.Cameras {
				sh := a.Shape()
				s.used += float64(sh[1] * sh[2] * sh[3] * a.DType().Size)
				k := frameKey{c, f}
				switch {
				case s.store[k]:
				case isDirect(a):
					direct[k] = true
				default:
					rows[row{c, f / int64(a.Chunks()[0])}] = true
				}
			}
			for i, a := range s.b.LowDim {
				s.lowRow(len(s.b.Cameras)+i, a, f)
			}
		}
		act := len(s.b.Cameras) + len(s.b.LowDim)
		for j := 0; j < s.win.Horizon; j++ {
			s.lowRow(act, s.b.Action, w.Frame(j))
		}
	}
	batch := to - from
	for k := range direct {
		s.decoded += float64(s.b.Cameras[k.cam].ChunkBytes())
	}
	// Decode each missing row once; offer its frames and the stored ones
	// to the store, which keeps those needed soonest after this batch.
	type cand struct {
		k    frameKey
		next int
	}
	var cands []cand
	for k := range s.store {
		if nx := s.next(k.frame, to); nx != math.MaxInt {
			cands = append(cands, cand{k, nx})
		}
	}
	for r := range rows {
		a := s.b.Cameras[r.cam]
		g, rf := a.Grid(), int64(a.Chunks()[0])
		s.decoded += float64(a.ChunkBytes() * g[1] * g[2] * g[3])
		for f := r.row * rf; f < min((r.row+1)*rf, int64(a.Shape()[0])); f++ {
			if k := (frameKey{r.cam, f}); !s.store[k] {
				if nx := s.next(f, to); nx != math.MaxInt {
					cands = append(cands, cand{k, nx})
				}
			}
		}
	}
	// A frame of a one-frame chunk is kept only when it is needed again
	// within 8 batches (it is cheap to decode again).
	for k := range direct {
		if nx := s.next(k.frame, to); nx < to+8*batch {
			cands = append(cands, cand{k, nx})
		}
	}
	slices.SortFunc(cands, func(x, y cand) int { return x.next - y.next })
	clear(s.store)
	for _, c := range cands[:min(len(cands), s.storeCap)] {
		s.store[c.k] = true
	}
}

func isDirect(a *zarr.Array) bool {
	ch, sh := a.Chunks(), a.Shape()
	return ch[0] == 1 && ch[1] == sh[1] && ch[2] == sh[2] && ch[3] == sh[3]
}

// lowRow accounts row f of a low-dim array through the low-dim cache.
func (s *ampSim) lowRow(ai int, a *zarr.Array, f int64) {
	ch, g := a.Chunks(), a.Grid()
	s.used += float64(a.Shape()[1] * a.DType().Size)
	r := f / int64(ch[0])
	for cc := 0; cc < g[1]; cc++ {
		if s.low.get([2]int64{int64(ai), r*int64(g[1]) + int64(cc)}, int64(a.ChunkBytes())) {
			s.decoded += float64(a.ChunkBytes())
		}
	}
}

// lowCache is an LRU of chunk keys that always keeps its newest entry.
type lowCache struct {
	cap, size int64
	lru       list.List
	m         map[[2]int64]*list.Element
	sizes     map[[2]int64]int64
}

// get reports whether key was missing (and so decoded), caching it.
func (c *lowCache) get(key [2]int64, size int64) bool {
	if e, ok := c.m[key]; ok {
		c.lru.MoveToFront(e)
		return false
	}
	c.m[key] = c.lru.PushFront(key)
	c.sizes[key] = size
	c.size += size
	for c.size > c.cap && c.lru.Len() > 1 {
		old := c.lru.Remove(c.lru.Back()).([2]int64)
		delete(c.m, old)
		c.size -= c.sizes[old]
		delete(c.sizes, old)
	}
	return true
}
