package dataset

import (
	"container/list"
	"math/rand/v2"

	"github.com/pipetop/pipetop/trainer/replay"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// DefaultCacheBytes is the loader's default decoded-chunk cache (see
// loader.Config.CacheBytes); inspect models the same cache.
const DefaultCacheBytes = 1 << 30

// ampSimWindows bounds the windows the read-amplification model replays.
const ampSimWindows = 40000

// uniformAmp replays what the loader decodes for windows drawn in shuffled
// epochs (the uniform sampler): camera rows (every chunk covering a run of
// frames) and low-dim chunks go through one LRU cache of cacheBytes that
// always keeps its newest entry, so the frames of one window, and windows
// that share rows while they are cached, share one decode; the last
// frames of every assembled row are kept as edge frames. Chunks of one
// whole frame are decoded straight into the batch, uncached. The result is
// decoded bytes per byte used over the second half of the replay (past the
// cold start).
func uniformAmp(b *replay.Buffer, idx *replay.Index, cacheBytes int64, seed uint64) float64 {
	n := len(idx.Windows)
	if n == 0 {
		return 0
	}
	total := min(2*n, ampSimWindows)
	s := newAmpSim(b, idx.Params, cacheBytes)
	rng := rand.New(rand.NewPCG(seed, 1))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	for done := 0; done < total; {
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, id := range order {
			if done == total/2 {
				s.decoded, s.used = 0, 0
			}
			s.window(idx.Windows[id])
			if done++; done == total {
				break
			}
		}
	}
	if s.used == 0 {
		return 0
	}
	return s.decoded / s.used
}

// ampSim is the loader's decoding as bookkeeping only.
type ampSim struct {
	b             *replay.Buffer
	win           replay.WindowParams
	cap, size     int64
	lru           list.List // of simKey, front = newest
	m             map[simKey]*list.Element
	sizes         map[simKey]int64
	edges         map[[2]int64]bool
	edgeBytes     int64
	decoded, used float64
}

type simKey struct {
	array int
	chunk int64
}

func newAmpSim(b *replay.Buffer, win replay.WindowParams, cacheBytes int64) *ampSim {
	return &ampSim{b: b, win: win, cap: cacheBytes, m: map[simKey]*list.Element{},
		sizes: map[simKey]int64{}, edges: map[[2]int64]bool{}}
}

// window accounts one window the way loader.fillSample reads it.
func (s *ampSim) window(w replay.Window) {
	for j := 0; j < s.win.NObs; j++ {
		f := w.Frame(j)
		for c, a := range s.b.Cameras {
			s.frame(c, a, f)
		}
		for k, a := range s.b.LowDim {
			s.row(len(s.b.Cameras)+k, a, f)
		}
	}
	act := len(s.b.Cameras) + len(s.b.LowDim)
	for j := 0; j < s.win.Horizon; j++ {
		s.row(act, s.b.Action, w.Frame(j))
	}
}

func (s *ampSim) frame(c int, a *zarr.Array, f int64) {
	ch, sh, g := a.Chunks(), a.Shape(), a.Grid()
	fb := int64(sh[1] * sh[2] * sh[3] * a.DType().Size)
	s.used += float64(fb)
	if ch[0] == 1 && ch[1] == sh[1] && ch[2] == sh[2] && ch[3] == sh[3] {
		s.decoded += float64(a.ChunkBytes()) // decoded straight into the batch
		return
	}
	rf := int64(ch[0])
	key := simKey{c, f / rf}
	if s.touch(key) {
		return
	}
	keep := int64(s.win.NObs - 1)
	if f%rf >= rf-keep && s.edges[[2]int64{int64(c), f}] {
		return
	}
	s.decoded += float64(a.ChunkBytes() * g[1] * g[2] * g[3])
	s.insert(key, rf*fb)
	last := min((f/rf+1)*rf, int64(sh[0]))
	for e := max(f/rf*rf, last-keep); e < last && keep > 0 && rf > 1; e++ {
		if k := [2]int64{int64(c), e}; !s.edges[k] && s.edgeBytes+fb <= s.cap/8 {
			s.edges[k] = true
			s.edgeBytes += fb
		}
	}
}

func (s *ampSim) row(ai int, a *zarr.Array, f int64) {
	ch, g := a.Chunks(), a.Grid()
	s.used += float64(a.Shape()[1] * a.DType().Size)
	r := f / int64(ch[0])
	for cc := 0; cc < g[1]; cc++ {
		key := simKey{ai, r*int64(g[1]) + int64(cc)}
		if !s.touch(key) {
			s.decoded += float64(a.ChunkBytes())
			s.insert(key, int64(a.ChunkBytes()))
		}
	}
}

// touch reports whether key is cached, making it the newest.
func (s *ampSim) touch(key simKey) bool {
	e, ok := s.m[key]
	if ok {
		s.lru.MoveToFront(e)
	}
	return ok
}

// insert caches key, evicting the oldest entries beyond the cap but never
// the newest.
func (s *ampSim) insert(key simKey, size int64) {
	s.m[key] = s.lru.PushFront(key)
	s.sizes[key] = size
	s.size += size
	for s.size > s.cap && s.lru.Len() > 1 {
		old := s.lru.Remove(s.lru.Back()).(simKey)
		delete(s.m, old)
		s.size -= s.sizes[old]
		delete(s.sizes, old)
	}
}
