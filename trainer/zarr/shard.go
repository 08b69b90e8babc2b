package zarr

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// emptyEntry marks an inner chunk a shard does not hold (it reads as the
// fill value): both its offset and its length are 2^64-1.
const emptyEntry = math.MaxUint64

// shardLayout is how a sharded Zarr v3 array (the sharding_indexed codec)
// stores its chunks: each shard file holds the encoded inner chunks of a
// block of the chunk grid, back to back, and an index of (offset, length)
// pairs, one per inner chunk in C order, before or after them.
type shardLayout struct {
	shape      []int // shard shape in elements
	per        []int // inner chunks per shard along each axis
	count      int   // inner chunks per shard
	atStart    bool  // the index precedes the chunks
	index      pipeline
	indexBig   bool // byte order of the index's integers
	indexBytes int  // stored size of the index
}

// shardingConfig is the configuration of the sharding_indexed codec.
type shardingConfig struct {
	ChunkShape    []int       `json:"chunk_shape"`
	Codecs        []codecMeta `json:"codecs"`
	IndexCodecs   []codecMeta `json:"index_codecs"`
	IndexLocation string      `json:"index_location"`
}

// parseSharding reads a sharding_indexed codec for shards of shardShape:
// the inner chunks' own codec chain and the index's.
func parseSharding(m codecMeta, shardShape []int, dt DType) (chain, error) {
	var cfg shardingConfig
	if err := m.config(&cfg); err != nil {
		return chain{}, err
	}
	if len(cfg.ChunkShape) != len(shardShape) {
		return chain{}, fmt.Errorf("sharding_indexed: chunk_shape %v and shard shape %v differ in rank", cfg.ChunkShape, shardShape)
	}
	l := &shardLayout{shape: shardShape, per: make([]int, len(shardShape)), count: 1}
	for i, c := range cfg.ChunkShape {
		if c < 1 || shardShape[i]%c != 0 {
			return chain{}, fmt.Errorf("sharding_indexed: chunk_shape %v does not divide the shard shape %v", cfg.ChunkShape, shardShape)
		}
		l.per[i] = shardShape[i] / c
		l.count *= l.per[i]
	}
	if err := checkChunkSize("shard shape", shardShape, dt.Size); err != nil {
		return chain{}, err
	}
	if err := checkChunkSize("shard index of", append(slices.Clone(l.per), 2), 8); err != nil {
		return chain{}, err
	}
	switch cfg.IndexLocation {
	case "", "end":
	case "start":
		l.atStart = true
	default:
		return chain{}, fmt.Errorf("sharding_indexed: index_location %q: want start or end", cfg.IndexLocation)
	}
	inner, err := parseChain(cfg.Codecs, cfg.ChunkShape, dt, false)
	if err != nil {
		return chain{}, fmt.Errorf("sharding_indexed codecs: %w", err)
	}
	idx, err := parseChain(cfg.IndexCodecs, append(slices.Clone(l.per), 2), DType{Uint, 8, false}, false)
	if err != nil {
		return chain{}, fmt.Errorf("sharding_indexed index_codecs: %w", err)
	}
	if l.indexBytes = idx.pipe.encodedSize(); l.indexBytes < 0 || idx.pipe.order != nil {
		return chain{}, fmt.Errorf("sharding_indexed index_codecs: only bytes and crc32c are supported (the index must have a fixed size)")
	}
	l.index, l.indexBig = idx.pipe, idx.dtype.BigEndian
	inner.shard = l
	return inner, nil
}

// dataRange is where a shard of size bytes keeps its chunks.
func (l *shardLayout) dataRange(size int64) (lo, hi int64) {
	if l.atStart {
		return int64(l.indexBytes), size
	}
	return 0, size - int64(l.indexBytes)
}

// indexOffset is where a shard of size bytes keeps its index.
func (l *shardLayout) indexOffset(size int64) int64 {
	if l.atStart {
		return 0
	}
	return size - int64(l.indexBytes)
}

// parseIndex decodes a shard's stored index (checking its checksum) and
// checks every entry against the chunk data of a shard of size bytes, so
// that no read goes past the end of a truncated shard. It returns the
// (offset, length) pairs.
func (l *shardLayout) parseIndex(raw []byte, size int64) ([]uint64, error) {
	buf := make([]byte, 16*l.count)
	if err := l.index.decode(buf, raw); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	order := binary.ByteOrder(binary.LittleEndian)
	if l.indexBig {
		order = binary.BigEndian
	}
	ents := make([]uint64, 2*l.count)
	for i := range ents {
		ents[i] = order.Uint64(buf[8*i:])
	}
	lo, hi := l.dataRange(size)
	for i := 0; i < l.count; i++ {
		off, n := ents[2*i], ents[2*i+1]
		switch {
		case off == emptyEntry && n == emptyEntry:
		case off == emptyEntry || n == emptyEntry:
			return nil, fmt.Errorf("index entry %d (offset %d, length %d) is neither a chunk nor empty", i, off, n)
		case off < uint64(lo) || off > uint64(hi) || n > uint64(hi)-off:
			return nil, fmt.Errorf("index entry %d (bytes %d..%d) lies outside the chunk data (bytes %d..%d of %d): truncated or corrupt shard", i, off, off+n, lo, hi, size)
		}
	}
	return ents, nil
}

// innerOf splits a chunk grid index into its shard's grid index (written
// into sidx) and its position in the shard's index.
func (l *shardLayout) innerOf(idx, sidx []int) int {
	pos := 0
	for i, v := range idx {
		sidx[i] = v / l.per[i]
		pos = pos*l.per[i] + v%l.per[i]
	}
	return pos
}

// shardKey is the store key of the shard holding chunk idx.
func (a *Array) shardKey(idx []int) string {
	sidx := make([]int, len(idx))
	a.shard.innerOf(idx, sidx)
	return a.keys.key(sidx)
}

// readInner returns the stored bytes of inner chunk idx, appended to
// buf[:0]: one ranged read, after the shard's index (read once, cached).
// A missing shard or an empty entry returns (nil, nil).
func (a *Array) readInner(idx []int, buf []byte) ([]byte, error) {
	var sb [32]int
	sidx := sb[:len(idx)]
	pos := a.shard.innerOf(idx, sidx)
	key := a.keys.key(sidx)
	ents, err := a.indexes.get(key, func() ([]uint64, error) { return a.loadIndex(key) })
	if err != nil {
		return nil, fmt.Errorf("array %q shard %s: %w", a.path, key, err)
	}
	if ents == nil || ents[2*pos] == emptyEntry {
		return nil, nil
	}
	off, n := int64(ents[2*pos]), int(ents[2*pos+1])
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if err := a.dirHandle().readAt(key, buf, off); err != nil {
		return nil, fmt.Errorf("array %q shard %s: chunk %v (bytes %d..%d): %w", a.path, key, idx, off, off+int64(n), err)
	}
	return buf, nil
}

// loadIndex reads and checks the index of the shard at key; nil when the
// shard does not exist.
func (a *Array) loadIndex(key string) ([]uint64, error) {
	l := a.shard
	raw := make([]byte, l.indexBytes)
	size, err := a.dirHandle().readIndex(key, raw, l.indexOffset)
	if err != nil || size < 0 {
		return nil, err
	}
	return l.parseIndex(raw, size)
}
