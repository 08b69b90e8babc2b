package zarr

import (
	"encoding/json"
	"fmt"
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
			s := src[so : so+inner]
			d := dst[do : do+(inner-1)*dStep+1]
			for x, v := range s {
				d[x*dStep] = v
			}
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
	n := len(a.shape)
	if len(start) != n || len(count) != n {
		return fmt.Errorf("array %q: region rank %d/%d, array rank %d", a.path, len(start), len(count), n)
	}
	want := a.dtype.Size
	for i := range start {
		if start[i] < 0 || count[i] < 0 || start[i]+count[i] > a.shape[i] {
			return fmt.Errorf("array %q: region start %v count %v outside shape %v", a.path, start, count, a.shape)
		}
		want *= count[i]
	}
	if len(dst) != want {
		return fmt.Errorf("array %q: region buffer is %d bytes, want %d", a.path, len(dst), want)
	}
	if want == 0 {
		return nil
	}
	lo, hi := make([]int, n), make([]int, n)
	for i := range start {
		lo[i] = start[i] / a.chunks[i]
		hi[i] = (start[i] + count[i] - 1) / a.chunks[i]
	}
	buf := make([]byte, a.chunkBytes)
	var raw []byte
	idx := append([]int(nil), lo...)
	srcOff, dstOff, cnt := make([]int, n), make([]int, n), make([]int, n)
	for {
		var err error
		if raw, err = a.ReadRaw(idx, raw[:0]); err != nil {
			return err
		}
		if err := a.DecodeChunk(idx, raw, buf); err != nil {
			return err
		}
		for i := range idx {
			c0 := idx[i] * a.chunks[i]
			b0 := max(c0, start[i])
			b1 := min(c0+a.chunks[i], start[i]+count[i])
			srcOff[i], dstOff[i], cnt[i] = b0-c0, b0-start[i], b1-b0
		}
		CopyBox(dst, count, dstOff, buf, a.chunks, srcOff, cnt, a.dtype.Size)
		if !nextIndex(idx, lo, hi) {
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

// WriteRegion writes src (C-ordered, shape count, stored byte order) at
// start. Chunks only partly covered are read, merged and rewritten.
func (a *Array) WriteRegion(start, count []int, src []byte) error {
	n := len(a.shape)
	if len(start) != n || len(count) != n {
		return fmt.Errorf("array %q: region rank %d/%d, array rank %d", a.path, len(start), len(count), n)
	}
	want := a.dtype.Size
	for i := range start {
		if start[i] < 0 || count[i] < 0 || start[i]+count[i] > a.shape[i] {
			return fmt.Errorf("array %q: region start %v count %v outside shape %v", a.path, start, count, a.shape)
		}
		want *= count[i]
	}
	if len(src) != want {
		return fmt.Errorf("array %q: region buffer is %d bytes, want %d", a.path, len(src), want)
	}
	if want == 0 {
		return nil
	}
	lo, hi := make([]int, n), make([]int, n)
	for i := range start {
		lo[i] = start[i] / a.chunks[i]
		hi[i] = (start[i] + count[i] - 1) / a.chunks[i]
	}
	buf := make([]byte, a.chunkBytes)
	idx := append([]int(nil), lo...)
	srcOff, dstOff, cnt := make([]int, n), make([]int, n), make([]int, n)
	for {
		whole := true
		for i := range idx {
			c0 := idx[i] * a.chunks[i]
			b0 := max(c0, start[i])
			b1 := min(c0+a.chunks[i], start[i]+count[i])
			dstOff[i], srcOff[i], cnt[i] = b0-c0, b0-start[i], b1-b0
			// A chunk is whole when the region covers its in-bounds part.
			if b0 != c0 || b1 != min(c0+a.chunks[i], a.shape[i]) {
				whole = false
			}
		}
		if whole {
			a.fillChunk(buf)
		} else if err := a.ReadChunk(idx, buf); err != nil {
			return err
		}
		CopyBox(buf, a.chunks, dstOff, src, count, srcOff, cnt, a.dtype.Size)
		if err := a.WriteChunk(idx, buf); err != nil {
			return err
		}
		if !nextIndex(idx, lo, hi) {
			return nil
		}
	}
}
