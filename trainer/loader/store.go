package loader

import "container/heap"

// frameKey names one frame of one camera.
type frameKey struct {
	cam   int32
	frame int64
}

// frameEntry is a decoded HWC camera frame held by the frame store.
type frameEntry struct {
	key  frameKey
	data []byte
	// pins counts the batches that will copy from the entry, plus one
	// while the job that fills it runs. Pinned entries are never evicted.
	pins int32
	// next is the stream position of the entry's next use when unpinned
	// (noUse when no known sample needs it): the eviction key.
	next int64
	// last is the end position of the latest batch that pinned it.
	last int64
	hi   int  // index in the heap; -1 while pinned
	fill *job // the job filling data; nil once filled
	dead bool // dropped after its job failed
}

// frameStore caches decoded camera frames up to a byte cap. It knows when
// each frame is needed next (the sample order is fixed by the seed), so it
// evicts the frame needed furthest in the future and admits a frame only
// when it is needed sooner than every frame it would displace (Belady's
// rule). A scan of frames used once cannot flush frames used again soon,
// and a batch's own frames are pinned until it has copied them. All
// methods run under the loader's plan lock.
type frameStore struct {
	cap, used  int64
	frameBytes int64
	m          map[frameKey]*frameEntry
	h          entryHeap // unpinned entries, furthest next use first
	mem        *arena    // entry buffers
	// harvest caps the bytes one job may add for later batches. It starts
	// small and doubles with every job, so the first batches do not wait
	// for the whole cache to be filled.
	harvest      int64
	hits, misses int64
}

func newFrameStore(capBytes int64, frameBytes, firstHarvest int) *frameStore {
	return &frameStore{cap: capBytes, frameBytes: int64(frameBytes), m: map[frameKey]*frameEntry{},
		harvest: int64(firstHarvest), mem: newArena(capBytes, frameBytes)}
}

// pin marks e as needed by a batch ending at stream position end.
func (s *frameStore) pin(e *frameEntry, end int64) {
	if e.hi >= 0 {
		heap.Remove(&s.h, e.hi)
		e.hi = -1
	}
	e.pins++
	e.last = max(e.last, end)
}

// unpin releases one pin; next computes the entry's next use after the
// last batch that pinned it.
func (s *frameStore) unpin(e *frameEntry, next func(f, p int64) int64) {
	if e.pins--; e.pins > 0 {
		return
	}
	if e.dead {
		s.recycle(e.data)
		e.data = nil
		return
	}
	if next != nil {
		e.next = next(e.key.frame, e.last)
	}
	heap.Push(&s.h, e)
}

// threshold is the next-use position a new frame must beat to be admitted:
// noUse while there is free room, else the furthest next use of the
// evictable entries (nothing beats it when every entry is pinned).
func (s *frameStore) threshold() int64 {
	if s.used+s.frameBytes <= s.cap {
		return noUse
	}
	if len(s.h) == 0 {
		return -1
	}
	return s.h[0].next
}

// admit makes room for a frame next needed at position next, evicting
// entries needed later, and returns its new entry pinned once (for the
// job that fills it), or nil when the frame does not earn a place.
func (s *frameStore) admit(k frameKey, next, end int64, j *job) *frameEntry {
	if next == noUse || s.frameBytes > s.cap {
		return nil
	}
	for s.used+s.frameBytes > s.cap {
		if len(s.h) == 0 || s.h[0].next <= next {
			return nil
		}
		s.evict(heap.Pop(&s.h).(*frameEntry))
	}
	e := &frameEntry{key: k, data: s.mem.get(), pins: 1, next: next, last: end, hi: -1, fill: j}
	s.m[k] = e
	s.used += s.frameBytes
	return e
}

func (s *frameStore) evict(e *frameEntry) {
	e.hi = -1
	delete(s.m, e.key)
	s.used -= s.frameBytes
	s.recycle(e.data)
	e.data = nil
}

// drop removes an entry whose job failed; its pins are released as usual.
func (s *frameStore) drop(e *frameEntry) {
	if s.m[e.key] == e {
		delete(s.m, e.key)
		s.used -= s.frameBytes
	}
	e.dead = true
}

func (s *frameStore) recycle(b []byte) { s.mem.put(b) }

// entryHeap is a max-heap of entries by next use.
type entryHeap []*frameEntry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].next > h[j].next }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hi, h[j].hi = i, j
}

func (h *entryHeap) Push(x any) {
	e := x.(*frameEntry)
	e.hi = len(*h)
	*h = append(*h, e)
}

func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.hi = -1
	return e
}
