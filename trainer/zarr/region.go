package zarr

import (
	"encoding/json"
	"fmt"
	"unsafe"
)

func jsonMarshal(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	return b, nil
}

// CopyBox copies the box of extent count (elements of itemSize bytes) at
// srcOff in a C-ordered src of shape srcShape to dstOff in a C-ordered dst of
// shape dstShape. Trailing axes that are copied whole are merged into one
// contiguous run, so copying whole frames is a single copy per frame.
func CopyBox(dst []byte, dstShape, dstOff []int, src []byte, srcShape, srcOff []int, count []int, itemSize int) {
	n := len(count)
	for _, c := range count {
		if c == 0 {
			return
		}
	}
	if n == 0 {
		copy(dst[:itemSize], src[:itemSize])
		return
	}
	// Merge trailing axes that are whole in both arrays.
	run := itemSize
	k := n - 1
	for k > 0 && count[k] == srcShape[k] && count[k] == dstShape[k] {
		run *= count[k]
		k--
	}
	run *= count[k]
	var sStride, dStride [32]int
	ss, ds := itemSize, itemSize
	for i := n - 1; i >= 0; i-- {
		sStride[i], dStride[i] = ss, ds
		ss *= srcShape[i]
		ds *= dstShape[i]
	}
	// The innermost loop walks axis k-1 with running offsets; the outer
	// loop walks axes 0..k-2.
	inner, sStep, dStep := 1, 0, 0
	outer := k
	if k > 0 {
		outer = k - 1
		inner, sStep, dStep = count[k-1], sStride[k-1], dStride[k-1]
	}
	var idx [32]int
	for {
		so, do := 0, 0
		for i := 0; i < n; i++ {
			so += (srcOff[i] + idx[i]) * sStride[i]
			do += (dstOff[i] + idx[i]) * dStride[i]
		}
		switch {
		case run == 1 && sStep == 1 && inner > 0:
			// Interleaving a planar run (one channel of a chunk) into
			// an interleaved destination: the hot case for chunks
			// that split the channel axis.
			scatter(dst[do:do+(inner-1)*dStep+1], src[so:so+inner], dStep)
		case run == 1:
			for x := 0; x < inner; x++ {
				dst[do] = src[so]
				so += sStep
				do += dStep
			}
		default:
			for x := 0; x < inner; x++ {
				copy(dst[do:do+run], src[so:so+run])
				so += sStep
				do += dStep
			}
		}
		i := outer - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < count[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

// ReadRegion reads the box [start, start+count) of the array into dst, a
// C-ordered buffer of shape count, in stored byte order. Chunks that are
// missing read as the fill value; partial edge chunks are handled.
func (a *Array) ReadRegion(start, count []int, dst []byte) error {
	var raw []byte
	return a.eachChunk(a.chunks, start, count, len(dst), func(p *chunkPart) error {
		var err error
		if raw, err = a.ReadRaw(p.idx, raw[:0]); err != nil {
			return err
		}
		if err := a.DecodeChunk(p.idx, raw, p.buf); err != nil {
			return err
		}
		CopyBox(dst, count, p.inRegion, p.buf, a.chunks, p.inChunk, p.count, a.dtype.Size)
		return nil
	})
}

// WriteRegion writes src (C-ordered, shape count, stored byte order) at
// start. Chunks (shards, when sharded) only partly covered are read,
// merged and rewritten.
func (a *Array) WriteRegion(start, count []int, src []byte) error {
	unit := a.chunks
	read, write := a.ReadChunk, a.WriteChunk
	if a.shard != nil {
		unit, read, write = a.shard.shape, a.readShard, a.writeShard
	}
	return a.eachChunk(unit, start, count, len(src), func(p *chunkPart) error {
		if p.whole {
			a.fillChunk(p.buf)
		} else if err := read(p.idx, p.buf); err != nil {
			return err
		}
		CopyBox(p.buf, unit, p.inChunk, src, count, p.inRegion, p.count, a.dtype.Size)
		return write(p.idx, p.buf)
	})
}

// chunkPart is where one chunk (or shard) meets a region, with a scratch
// buffer the size of the chunk. Its slices are reused from one chunk to
// the next.
type chunkPart struct {
	idx      []int // the chunk's grid index
	inChunk  []int // the overlap's offset in the chunk
	inRegion []int // the overlap's offset in the region
	count    []int // the overlap's extent
	// whole is true when the region covers the chunk's in-bounds part.
	whole bool
	buf   []byte // scratch for the chunk's decoded bytes
}

// eachChunk checks the region [start, start+count) against the array and
// a region buffer of bufLen bytes, then calls fn for every chunk of shape
// unit (the chunks, or the shards) the region touches, in C order,
// stopping at the first error.
func (a *Array) eachChunk(unit, start, count []int, bufLen int, fn func(*chunkPart) error) error {
	n := len(a.shape)
	if len(start) != n || len(count) != n {
		return fmt.Errorf("array %q: region rank %d/%d, array rank %d", a.path, len(start), len(count), n)
	}
	want, unitBytes := a.dtype.Size, a.dtype.Size
	for i := range start {
		if start[i] < 0 || count[i] < 0 || start[i]+count[i] > a.shape[i] {
			return fmt.Errorf("array %q: region start %v count %v outside shape %v", a.path, start, count, a.shape)
		}
		want *= count[i]
		unitBytes *= unit[i]
	}
	if bufLen != want {
		return fmt.Errorf("array %q: region buffer is %d bytes, want %d", a.path, bufLen, want)
	}
	if want == 0 {
		return nil
	}
	lo, hi := make([]int, n), make([]int, n)
	for i := range start {
		lo[i] = start[i] / unit[i]
		hi[i] = (start[i] + count[i] - 1) / unit[i]
	}
	p := &chunkPart{idx: append([]int(nil), lo...),
		inChunk: make([]int, n), inRegion: make([]int, n), count: make([]int, n),
		buf: make([]byte, unitBytes)}
	for {
		p.whole = true
		for i, c := range p.idx {
			c0 := c * unit[i]
			b0 := max(c0, start[i])
			b1 := min(c0+unit[i], start[i]+count[i])
			p.inChunk[i], p.inRegion[i], p.count[i] = b0-c0, b0-start[i], b1-b0
			if b0 != c0 || b1 != min(c0+unit[i], a.shape[i]) {
				p.whole = false
			}
		}
		if err := fn(p); err != nil {
			return err
		}
		if !nextIndex(p.idx, lo, hi) {
			return nil
		}
	}
}

// nextIndex advances idx through the box [lo, hi] in C order.
func nextIndex(idx, lo, hi []int) bool {
	for i := len(idx) - 1; i >= 0; i-- {
		idx[i]++
		if idx[i] <= hi[i] {
			return true
		}
		idx[i] = lo[i]
	}
	return false
}

// scatter writes s[x] to d[x*step]. The slicing by the caller has checked
// that d holds (len(s)-1)*step+1 bytes, so the loop indexes without bounds
// checks: it runs once per byte of every camera chunk that splits the
// channel axis (zarr's default chunking does), and was the loader's
// largest cost.
func scatter(d, s []byte, step int) {
	if len(s) == 0 {
		return
	}
	_ = d[(len(s)-1)*step] // the one bounds check
	dp := unsafe.Pointer(unsafe.SliceData(d))
	x := 0
	for ; x+4 <= len(s); x += 4 {
		o := x * step
		*(*byte)(unsafe.Add(dp, o)) = s[x]
		*(*byte)(unsafe.Add(dp, o+step)) = s[x+1]
		*(*byte)(unsafe.Add(dp, o+2*step)) = s[x+2]
		*(*byte)(unsafe.Add(dp, o+3*step)) = s[x+3]
	}
	for ; x < len(s); x++ {
		*(*byte)(unsafe.Add(dp, x*step)) = s[x]
	}
}
