package loader

import (
	"fmt"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/pipetop/pipetop/trainer/zarr"
)

// worker holds one decode goroutine's scratch memory.
type worker struct {
	l   *Loader
	raw []byte // compressed chunk bytes
	idx []int  // chunk grid index scratch
	// direct marks camera arrays chunked exactly one frame per chunk, which
	// decode straight into the batch.
	direct []bool
}

func (l *Loader) newWorker() *worker {
	w := &worker{l: l, idx: make([]int, 4)}
	for _, a := range l.buf.Cameras {
		c, s := a.Chunks(), a.Shape()
		w.direct = append(w.direct, c[0] == 1 && c[1] == s[1] && c[2] == s[2] && c[3] == 3)
	}
	return w
}

// fillBatch fills b with batch number n of the sample stream. A panic in
// the decoders is turned into an error so the loop sees it.
func (w *worker) fillBatch(b *Batch, n int64) (err error) {
	t0 := time.Now()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("loader: batch %d: internal error: %v\n%s", n, r, debug.Stack())
		}
		w.l.st.busyNs.Add(time.Since(t0).Nanoseconds())
	}()
	l := w.l
	first := l.cfg.StartSample + n*int64(l.cfg.Batch)
	b.Sample = first
	per := int64(l.sampler.Len())
	for i := 0; i < b.Size; i++ {
		s := first + int64(i)
		id := l.orders.get(s / per)[s%per]
		b.Windows[i] = id
		if err := w.fillSample(b, i, id); err != nil {
			return fmt.Errorf("loader: sample %d (window %d): %w", s, id, err)
		}
	}
	return nil
}

func (w *worker) fillSample(b *Batch, i int, id int32) error {
	l := w.l
	win := l.idx.Windows[id]
	for j := 0; j < b.NObs; j++ {
		f := win.Frame(j)
		for c, a := range l.buf.Cameras {
			if err := w.frame(c, a, f, b.Frame(i, j, c)); err != nil {
				return err
			}
		}
		off := (i*b.NObs + j) * b.StateDim
		for k, a := range l.buf.LowDim {
			d := a.Shape()[1]
			if err := w.row(len(l.buf.Cameras)+k, a, f, b.State[off:off+d]); err != nil {
				return err
			}
			off += d
		}
	}
	act := len(l.arrays) - 1
	for j := 0; j < b.Horizon; j++ {
		off := (i*b.Horizon + j) * b.ActionDim
		if err := w.row(act, l.buf.Action, win.Frame(j), b.Action[off:off+b.ActionDim]); err != nil {
			return err
		}
	}
	return nil
}

// frame copies camera frame f of array a (index c) into dst.
func (w *worker) frame(c int, a *zarr.Array, f int64, dst []byte) error {
	st := &w.l.st
	if w.direct[c] {
		idx := w.idx[:4]
		idx[0], idx[1], idx[2], idx[3] = int(f), 0, 0, 0
		t0 := time.Now()
		raw, err := a.ReadRaw(idx, w.raw[:0])
		t1 := time.Now()
		st.readNs.Add(t1.Sub(t0).Nanoseconds())
		if err != nil {
			return err
		}
		if raw != nil {
			w.raw = raw
		}
		if err := a.DecodeChunk(idx, raw, dst); err != nil {
			return err
		}
		st.decodeNs.Add(time.Since(t1).Nanoseconds())
		st.bytesRead.Add(int64(len(raw)))
		st.bytesDecoded.Add(int64(len(dst)))
		st.bytesUsed.Add(int64(len(dst)))
		return nil
	}
	sh, ch := a.Shape(), a.Chunks()
	frameShape := [4]int{1, sh[1], sh[2], 3}
	return w.box(c, a, [4]int{int(f), 0, 0, 0}, frameShape, func(data []byte, idx []int) {
		var src, dOff, cnt [4]int
		src[0] = int(f) - idx[0]*ch[0]
		cnt[0] = 1
		for k := 1; k < 4; k++ {
			c0 := idx[k] * ch[k]
			src[k], dOff[k], cnt[k] = 0, c0, min(ch[k], sh[k]-c0)
		}
		zarr.CopyBox(dst, frameShape[:], dOff[:], data, ch, src[:], cnt[:], 1)
	})
}

// row copies row f of a 2-D float32 array into dst, in native byte order.
func (w *worker) row(ai int, a *zarr.Array, f int64, dst []float32) error {
	sh, ch := a.Shape(), a.Chunks()
	out := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 4*len(dst))
	err := w.box(ai, a, [4]int{int(f), 0}, [4]int{1, sh[1]}, func(data []byte, idx []int) {
		r := int(f) - idx[0]*ch[0]
		c0 := idx[1] * ch[1]
		n := min(ch[1], sh[1]-c0)
		copy(out[4*c0:4*(c0+n)], data[4*(r*ch[1]):4*(r*ch[1]+n)])
	})
	if err == nil {
		a.DType().ToNative(out)
	}
	return err
}

// box visits, through the cache, every chunk of a that intersects the
// box [start, start+count) (rank <= 4), calling use with its decoded bytes
// and grid index.
func (w *worker) box(ai int, a *zarr.Array, start, count [4]int, use func(data []byte, idx []int)) error {
	ch := a.Chunks()
	rank := len(ch)
	var lo, hi, idx [4]int
	for k := 0; k < rank; k++ {
		lo[k] = start[k] / ch[k]
		hi[k] = (start[k] + count[k] - 1) / ch[k]
	}
	idx = lo
	grid := a.Grid()
	st := &w.l.st
	for {
		var lin int64
		for k := 0; k < rank; k++ {
			lin = lin*int64(grid[k]) + int64(idx[k])
		}
		ci := idx
		data, err := w.l.cache.get(chunkKey{ai, lin}, func() ([]byte, error) {
			return w.decode(a, ci[:rank])
		})
		if err != nil {
			return err
		}
		t0 := time.Now()
		use(data, idx[:rank])
		st.collateNs.Add(time.Since(t0).Nanoseconds())
		used := a.DType().Size
		for k := 0; k < rank; k++ {
			c0 := idx[k] * ch[k]
			used *= min(c0+ch[k], start[k]+count[k]) - max(c0, start[k])
		}
		st.bytesUsed.Add(int64(used))
		k := rank - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] <= hi[k] {
				break
			}
			idx[k] = lo[k]
		}
		if k < 0 {
			return nil
		}
	}
}

// decode reads and decodes one chunk into a fresh buffer (the cache keeps it).
func (w *worker) decode(a *zarr.Array, idx []int) ([]byte, error) {
	st := &w.l.st
	t0 := time.Now()
	raw, err := a.ReadRaw(idx, w.raw[:0])
	t1 := time.Now()
	st.readNs.Add(t1.Sub(t0).Nanoseconds())
	if err != nil {
		return nil, err
	}
	if raw != nil {
		w.raw = raw
	}
	data := make([]byte, a.ChunkBytes())
	if err := a.DecodeChunk(idx, raw, data); err != nil {
		return nil, err
	}
	st.decodeNs.Add(time.Since(t1).Nanoseconds())
	st.bytesRead.Add(int64(len(raw)))
	st.bytesDecoded.Add(int64(len(data)))
	return data, nil
}
