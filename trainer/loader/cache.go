package loader

import (
	"container/list"
	"sync"
)

// chunkKey identifies a chunk: the array's position in the loader's array
// list and the chunk's linear index in that array's grid.
type chunkKey struct {
	array int
	chunk int64
}

// entry is a cached decoded chunk. done is closed once data or err is set;
// until then other workers wanting the same chunk wait on it.
type entry struct {
	key  chunkKey
	data []byte
	err  error
	done chan struct{}
	elem *list.Element
}

// cache holds decoded chunks up to a byte cap, evicting least recently used
// ones. Entries are immutable once done, and eviction only drops them from
// the map, so a worker may keep reading a chunk it already holds.
type cache struct {
	mu           sync.Mutex
	cap, used    int64
	m            map[chunkKey]*entry
	lru          list.List // front = most recent; only finished entries
	hits, misses int64
}

func newCache(capBytes int64) *cache {
	return &cache{cap: capBytes, m: map[chunkKey]*entry{}}
}

// get returns the decoded chunk for k, calling load (outside the lock) when
// it is not cached. Concurrent gets of one key share a single load.
func (c *cache) get(k chunkKey, load func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	if e, ok := c.m[k]; ok {
		c.hits++
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.mu.Unlock()
		<-e.done
		return e.data, e.err
	}
	c.misses++
	e := &entry{key: k, done: make(chan struct{})}
	c.m[k] = e
	c.mu.Unlock()

	data, err := load()
	c.mu.Lock()
	e.data, e.err = data, err
	if err != nil {
		delete(c.m, k) // a later get retries
	} else {
		e.elem = c.lru.PushFront(e)
		c.used += int64(len(data))
		c.evict()
	}
	c.mu.Unlock()
	close(e.done)
	return data, err
}

// evict drops least recently used entries until under the cap, always
// keeping the most recent one.
func (c *cache) evict() {
	for c.used > c.cap && c.lru.Len() > 1 {
		e := c.lru.Remove(c.lru.Back()).(*entry)
		delete(c.m, e.key)
		c.used -= int64(len(e.data))
	}
}

// counts returns cumulative hits and misses.
func (c *cache) counts() (hits, misses int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}
