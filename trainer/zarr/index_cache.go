package zarr

import "sync"

// maxIndexCache bounds the decoded shard indexes one array keeps (16 bytes
// per inner chunk): 64 MiB is the index of four million inner chunks.
const maxIndexCache = 64 << 20

// shardIndexes caches the decoded indexes of an array's shards. Each is
// loaded once, even when several workers ask for it at the same moment;
// a failed load is not kept, so the next read tries again.
type shardIndexes struct {
	mu    sync.Mutex
	m     map[string]*indexEntry
	bytes int64
}

type indexEntry struct {
	ready chan struct{}
	ents  []uint64 // nil: the shard does not exist
	err   error
}

// get returns the index of the shard at key, calling load if no one has.
func (c *shardIndexes) get(key string, load func() ([]uint64, error)) ([]uint64, error) {
	c.mu.Lock()
	if e, ok := c.m[key]; ok {
		c.mu.Unlock()
		<-e.ready
		return e.ents, e.err
	}
	if c.m == nil {
		c.m = map[string]*indexEntry{}
	}
	e := &indexEntry{ready: make(chan struct{})}
	c.m[key] = e
	c.mu.Unlock()
	e.ents, e.err = load()
	close(e.ready)
	c.mu.Lock()
	if e.err != nil {
		delete(c.m, key)
	} else if c.bytes += 8 * int64(len(e.ents)); c.bytes > maxIndexCache {
		c.dropReady()
	}
	c.mu.Unlock()
	return e.ents, e.err
}

// dropReady forgets every loaded index (the cache is over its bound).
func (c *shardIndexes) dropReady() {
	for k, e := range c.m {
		select {
		case <-e.ready:
			c.bytes -= 8 * int64(len(e.ents))
			delete(c.m, k)
		default:
		}
	}
}

// forget drops the index of the shard at key, after the shard was written.
func (c *shardIndexes) forget(key string) {
	c.mu.Lock()
	if e, ok := c.m[key]; ok {
		select {
		case <-e.ready:
			c.bytes -= 8 * int64(len(e.ents))
			delete(c.m, key)
		default:
		}
	}
	c.mu.Unlock()
}
