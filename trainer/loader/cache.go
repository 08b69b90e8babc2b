package loader

import (
	"container/list"
	"fmt"
	"sync"
)

// chunkKey identifies a decoded low-dim chunk: an array (its position in
// the loader's array list) and the chunk's linear index.
type chunkKey struct {
	array int
	unit  int64
}

// chunkEntry is a cached decoded chunk; done is closed once data is
// decoded (or err set).
type chunkEntry struct {
	key  chunkKey
	data []byte
	err  error
	done chan struct{}
	elem *list.Element
}

// chunkCache holds decoded low-dim chunks (state, action) up to a byte cap,
// evicting the least recently used, with single-flight decoding: two
// workers never decode the same chunk at once. Eviction only drops an
// entry from the map, so a worker keeps reading an entry it already holds
// (each batch keeps the chunks it got for as long as it needs them).
type chunkCache struct {
	mu           sync.Mutex
	cap, used    int64
	m            map[chunkKey]*chunkEntry
	lru          list.List // front = most recent
	hits, misses int64
}

func newChunkCache(capBytes int64) *chunkCache {
	return &chunkCache{cap: capBytes, m: map[chunkKey]*chunkEntry{}}
}

// get returns the decoded chunk k (size bytes), decoding it with decode
// when absent.
func (c *chunkCache) get(k chunkKey, size int, decode func(buf []byte) error) ([]byte, error) {
	c.mu.Lock()
	e, ok := c.m[k]
	if ok {
		c.hits++
		c.lru.MoveToFront(e.elem)
		c.mu.Unlock()
		<-e.done
		return e.data, e.err
	}
	c.misses++
	e = &chunkEntry{key: k, data: make([]byte, size), done: make(chan struct{})}
	e.elem = c.lru.PushFront(e)
	c.m[k] = e
	c.used += int64(size)
	c.evict()
	c.mu.Unlock()
	e.err = safeDecode(decode, e.data)
	if e.err != nil {
		c.mu.Lock()
		if c.m[k] == e {
			c.remove(e) // a later get retries
		}
		c.mu.Unlock()
	}
	close(e.done)
	return e.data, e.err
}

func (c *chunkCache) remove(e *chunkEntry) {
	c.lru.Remove(e.elem)
	delete(c.m, e.key)
	c.used -= int64(len(e.data))
}

// evict drops least recently used entries until under the cap, always
// keeping the most recent one.
func (c *chunkCache) evict() {
	for c.used > c.cap && c.lru.Len() > 1 {
		c.remove(c.lru.Back().Value.(*chunkEntry))
	}
}

// counts returns cumulative hits and misses.
func (c *chunkCache) counts() (hits, misses int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// safeDecode runs decode, turning a panic into an error so that workers
// waiting on the entry are released.
func safeDecode(decode func([]byte) error, buf []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	return decode(buf)
}
