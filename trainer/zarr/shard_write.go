package zarr

import (
	"encoding/binary"
	"fmt"
)

// writeShard encodes the shard at shard grid index sidx from buf (the
// whole shard, C order, shape shard.shape) and writes it atomically:
// every inner chunk that overlaps the array, encoded, back to back in C
// order, and the index before or after them. Inner chunks wholly outside
// the array are left out (their index entries are empty).
func (a *Array) writeShard(sidx []int, buf []byte) error {
	l := a.shard
	n := len(a.shape)
	key := a.keys.key(sidx)
	ents := make([]uint64, 2*l.count)
	base := uint64(0)
	if l.atStart {
		base = uint64(l.indexBytes)
	}
	var data []byte
	chunk := make([]byte, a.chunkBytes)
	local, off, zero, last := make([]int, n), make([]int, n), make([]int, n), l.lastInner()
	for j := 0; j < l.count; j++ {
		inside := true
		for i := range local {
			off[i] = local[i] * a.chunks[i]
			inside = inside && sidx[i]*l.shape[i]+off[i] < a.shape[i]
		}
		if inside {
			CopyBox(chunk, a.chunks, zero, buf, l.shape, off, a.chunks, a.dtype.Size)
			enc, err := a.pipe.encode(chunk)
			if err != nil {
				return fmt.Errorf("array %q shard %s chunk %d: %w", a.path, key, j, err)
			}
			ents[2*j], ents[2*j+1] = base+uint64(len(data)), uint64(len(enc))
			data = append(data, enc...)
		} else {
			ents[2*j], ents[2*j+1] = emptyEntry, emptyEntry
		}
		nextIndex(local, zero, last)
	}
	index, err := l.encodeIndex(ents)
	if err != nil {
		return fmt.Errorf("array %q shard %s: index: %w", a.path, key, err)
	}
	parts := [][]byte{data, index}
	if l.atStart {
		parts = [][]byte{index, data}
	}
	if err := a.writeFile(key, parts...); err != nil {
		return fmt.Errorf("array %q shard %s: %w", a.path, key, err)
	}
	a.indexes.forget(key)
	return nil
}

// lastInner is the largest inner chunk position in a shard, per axis.
func (l *shardLayout) lastInner() []int {
	out := make([]int, len(l.per))
	for i, p := range l.per {
		out[i] = p - 1
	}
	return out
}

// encodeIndex encodes (offset, length) pairs with the index codecs.
func (l *shardLayout) encodeIndex(ents []uint64) ([]byte, error) {
	order := binary.ByteOrder(binary.LittleEndian)
	if l.indexBig {
		order = binary.BigEndian
	}
	raw := make([]byte, 8*len(ents))
	for i, e := range ents {
		order.PutUint64(raw[8*i:], e)
	}
	return l.index.encode(raw)
}

// readShard decodes the shard at shard grid index sidx into buf (the
// whole shard): its chunks inside the array, the fill value elsewhere.
func (a *Array) readShard(sidx []int, buf []byte) error {
	a.fillChunk(buf)
	n := len(a.shape)
	start, count, zero := make([]int, n), make([]int, n), make([]int, n)
	for i := range start {
		start[i] = sidx[i] * a.shard.shape[i]
		count[i] = min(a.shard.shape[i], a.shape[i]-start[i])
	}
	region := make([]byte, len(buf))
	size := a.dtype.Size
	for _, c := range count {
		size *= c
	}
	if err := a.ReadRegion(start, count, region[:size]); err != nil {
		return err
	}
	CopyBox(buf, a.shard.shape, zero, region[:size], count, zero, count, a.dtype.Size)
	return nil
}
