package loader

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// chunkKey identifies a cache entry: an array (its position in the
// loader's array list) and a unit of it (a chunk's linear index for
// low-dim arrays, a row of frame chunks for cameras).
type chunkKey struct {
	array int
	unit  int64
}

// assembler fills part i of an entry's buffer, using the calling worker's
// scratch memory.
type assembler func(w *worker, buf []byte, part int) error

// entry is a cached decoded unit. Its buffer is assembled from parts (the
// chunks it is made of); every worker that wants the entry while it is
// being assembled takes unclaimed parts, so a large entry is built by all
// workers together instead of one working while the others wait. done is
// closed when the last part is finished.
type entry struct {
	key      chunkKey
	data     []byte
	parts    int32
	assemble assembler
	next     atomic.Int32 // next unclaimed part
	finished atomic.Int32
	errMu    sync.Mutex
	err      error
	done     chan struct{}
	elem     *list.Element
	onDone   func(e *entry)
}

// help assembles unclaimed parts of e until none are left.
func (e *entry) help(c *cache, w *worker) {
	for {
		i := e.next.Add(1) - 1
		if i >= e.parts {
			return
		}
		if err := e.assemble(w, e.data, int(i)); err != nil {
			e.errMu.Lock()
			if e.err == nil {
				e.err = err
			}
			e.errMu.Unlock()
		}
		if e.finished.Add(1) == e.parts {
			c.finish(e)
		}
	}
}

// cache holds decoded entries up to a byte cap, evicting least recently
// used ones. Eviction only drops an entry from the map, so a worker may keep
// reading an entry it already holds.
type cache struct {
	mu           sync.Mutex
	cap, used    int64
	m            map[chunkKey]*entry
	lru          list.List // front = most recent
	hits, misses int64
}

func newCache(capBytes int64) *cache {
	return &cache{cap: capBytes, m: map[chunkKey]*entry{}}
}

// get returns the entry for k, creating it (size bytes, assembled from
// parts) when absent. onDone, if set, runs once when a new entry completes
// without error.
func (c *cache) get(w *worker, k chunkKey, size, parts int, asm assembler, onDone func(*entry)) ([]byte, error) {
	c.mu.Lock()
	e, ok := c.m[k]
	if ok {
		c.hits++
		c.lru.MoveToFront(e.elem)
	} else {
		c.misses++
		e = &entry{key: k, data: make([]byte, size), parts: int32(parts), assemble: asm,
			done: make(chan struct{}), onDone: onDone}
		e.elem = c.lru.PushFront(e)
		c.m[k] = e
		c.used += int64(size)
		c.evict()
	}
	c.mu.Unlock()
	e.help(c, w)
	<-e.done
	if e.err != nil {
		return nil, e.err
	}
	return e.data, nil
}

// peek returns a finished entry's data without loading anything.
func (c *cache) peek(k chunkKey) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || e.finished.Load() != e.parts || e.err != nil {
		return nil
	}
	c.hits++
	c.lru.MoveToFront(e.elem)
	return e.data
}

func (c *cache) finish(e *entry) {
	if e.err != nil {
		c.mu.Lock()
		if c.m[e.key] == e {
			c.remove(e) // a later get retries
		}
		c.mu.Unlock()
	} else if e.onDone != nil {
		e.onDone(e)
	}
	close(e.done)
}

func (c *cache) remove(e *entry) {
	c.lru.Remove(e.elem)
	delete(c.m, e.key)
	c.used -= int64(len(e.data))
}

// evict drops least recently used entries until under the cap, always
// keeping the most recent one.
func (c *cache) evict() {
	for c.used > c.cap && c.lru.Len() > 1 {
		c.remove(c.lru.Back().Value.(*entry))
	}
}

// counts returns cumulative hits and misses.
func (c *cache) counts() (hits, misses int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}
