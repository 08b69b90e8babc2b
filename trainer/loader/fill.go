package loader

import (
	"fmt"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"

	"github.com/pipetop/pipetop/trainer/zarr"
)

// worker holds one decode goroutine's scratch memory. Workers also lend it
// to each other's cache entries while helping to assemble them.
type worker struct {
	l     *Loader
	raw   []byte // compressed chunk bytes
	chunk []byte // one decoded chunk, when it must be scattered
}

func (l *Loader) newWorker() *worker { return &worker{l: l} }

// camera describes how a camera array is chunked.
type camera struct {
	a *zarr.Array
	// direct: one whole frame per chunk, decoded straight into the batch.
	direct bool
	// rowFrames is the chunk length along the frame axis; a "row" is that
	// many whole frames assembled from every chunk covering them.
	rowFrames int
	spatial   []int // chunks per row along H, W, C
	parts     int   // chunks per row
}

func newCamera(a *zarr.Array) camera {
	c, s, g := a.Chunks(), a.Shape(), a.Grid()
	cam := camera{a: a, rowFrames: c[0], spatial: []int{g[1], g[2], g[3]}, parts: g[1] * g[2] * g[3]}
	cam.direct = c[0] == 1 && c[1] == s[1] && c[2] == s[2] && c[3] == s[3]
	return cam
}

// edges keeps the last frames of each assembled camera row, so a window
// whose observations start in the previous row needs no reassembly of that
// whole row (the chunk-aware sampler groups windows by the row of their
// last observation, and the previous row is usually long evicted). Edge
// frames are few (NObs-1 per row) and kept for the loader's life, within a
// byte budget; past it, rows are simply reassembled when needed.
type edges struct {
	mu     sync.Mutex
	frames map[[2]int64][]byte // (camera, frame) -> HWC bytes
	bytes  int64
	limit  int64
}

func (e *edges) get(cam int, f int64) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.frames[[2]int64{int64(cam), f}]
}

func (e *edges) put(cam int, f int64, frame []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := [2]int64{int64(cam), f}
	if _, ok := e.frames[k]; ok || e.bytes+int64(len(frame)) > e.limit {
		return
	}
	if e.frames == nil {
		e.frames = map[[2]int64][]byte{}
	}
	e.frames[k] = append([]byte(nil), frame...)
	e.bytes += int64(len(frame))
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
		for c := range l.cams {
			if err := w.frame(c, f, b.Frame(i, j, c)); err != nil {
				return err
			}
		}
		off := (i*b.NObs + j) * b.StateDim
		for k, a := range l.buf.LowDim {
			d := a.Shape()[1]
			if err := w.row(len(l.cams)+k, a, f, b.State[off:off+d]); err != nil {
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

// frame copies frame f of camera c into dst.
func (w *worker) frame(c int, f int64, dst []byte) error {
	cam := &w.l.cams[c]
	if cam.direct {
		return w.decodeInto(cam.a, []int{int(f), 0, 0, 0}, dst, true)
	}
	st := &w.l.st
	fb := int64(len(dst))
	rf := int64(cam.rowFrames)
	r := f / rf
	key := chunkKey{c, r}
	data := w.l.cache.peek(key)
	var off int64
	if data != nil {
		off = (f - r*rf) * fb
	} else if f%rf >= rf-int64(w.l.cfg.Window.NObs-1) {
		data = w.l.edges.get(c, f) // a single frame
	}
	if data == nil {
		var err error
		data, err = w.l.cache.get(w, key, int(rf*fb), cam.parts, w.l.assembleRow(c, r), w.l.keepEdges(c, r))
		if err != nil {
			return err
		}
		off = (f - r*rf) * fb
	}
	t0 := time.Now()
	copy(dst, data[off:off+fb])
	st.collateNs.Add(time.Since(t0).Nanoseconds())
	st.bytesUsed.Add(fb)
	return nil
}

// assembleRow returns the assembler of row r of camera c: part i decodes
// one chunk of the row and scatters it into whole HWC frames.
func (l *Loader) assembleRow(c int, r int64) assembler {
	cam := &l.cams[c]
	return func(w *worker, buf []byte, part int) error {
		a := cam.a
		sh, ch := a.Shape(), a.Chunks()
		sp := cam.spatial
		idx := []int{int(r), part / (sp[1] * sp[2]), part / sp[2] % sp[1], part % sp[2]}
		if cam.parts == 1 {
			return w.decodeInto(a, idx, buf, false) // whole frames: no scatter
		}
		if len(w.chunk) != a.ChunkBytes() {
			w.chunk = make([]byte, a.ChunkBytes())
		}
		if err := w.decodeInto(a, idx, w.chunk, false); err != nil {
			return err
		}
		t0 := time.Now()
		rows := min(ch[0], sh[0]-idx[0]*ch[0])
		dstShape := []int{ch[0], sh[1], sh[2], sh[3]}
		var off, cnt [4]int
		cnt[0] = rows
		for k := 1; k < 4; k++ {
			off[k] = idx[k] * ch[k]
			cnt[k] = min(ch[k], sh[k]-off[k])
		}
		zarr.CopyBox(buf, dstShape, off[:], w.chunk, ch, []int{0, 0, 0, 0}, cnt[:], 1)
		l.st.collateNs.Add(time.Since(t0).Nanoseconds())
		return nil
	}
}

// keepEdges returns the completion hook that keeps the last NObs-1 frames
// of a camera row as edge frames.
func (l *Loader) keepEdges(c int, r int64) func(*entry) {
	keep := int64(l.cfg.Window.NObs - 1)
	rf := int64(l.cams[c].rowFrames)
	if keep == 0 || rf == 1 {
		return nil
	}
	fb := int64(l.shape.FrameBytes())
	last := min((r+1)*rf, int64(l.cams[c].a.Shape()[0]))
	return func(e *entry) {
		for f := max(r*rf, last-keep); f < last; f++ {
			o := (f - r*rf) * fb
			l.edges.put(c, f, e.data[o:o+fb])
		}
	}
}

// decodeInto reads chunk idx of a and decodes it into dst (ChunkBytes
// long). used says whether all of dst goes into a batch.
func (w *worker) decodeInto(a *zarr.Array, idx []int, dst []byte, used bool) error {
	st := &w.l.st
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
	if used {
		st.bytesUsed.Add(int64(len(dst)))
	}
	return nil
}

// row copies row f of a 2-D float32 array (index ai) into dst, in native
// byte order, through the chunk cache.
func (w *worker) row(ai int, a *zarr.Array, f int64, dst []float32) error {
	sh, ch, g := a.Shape(), a.Chunks(), a.Grid()
	out := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 4*len(dst))
	r := int(f) / ch[0]
	for cc := 0; cc < g[1]; cc++ {
		key := chunkKey{ai, int64(r*g[1] + cc)}
		idx := []int{r, cc}
		data, err := w.l.cache.get(w, key, a.ChunkBytes(), 1, func(w *worker, buf []byte, _ int) error {
			return w.decodeInto(a, idx, buf, false)
		}, nil)
		if err != nil {
			return err
		}
		rr := int(f) - r*ch[0]
		c0 := cc * ch[1]
		n := min(ch[1], sh[1]-c0)
		copy(out[4*c0:4*(c0+n)], data[4*rr*ch[1]:4*(rr*ch[1]+n)])
	}
	w.l.st.bytesUsed.Add(int64(len(out)))
	a.DType().ToNative(out)
	return nil
}
