package loader

import (
	"fmt"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/pipetop/pipetop/trainer/zarr"
)

// worker holds one decode goroutine's scratch memory and its batch plan.
// Workers also lend it to each other's jobs while helping with them.
type worker struct {
	l      *Loader
	raw    []byte    // compressed chunk bytes
	chunk  []byte    // one decoded chunk, when frames are copied out of it
	planes [3][]byte // the channel chunks of one tile (planar cameras)
	batch  *Batch    // the batch being planned
	plan   plan
	memo   map[chunkKey][]byte // low-dim chunks this batch already got
	n      int64               // the batch being filled
}

func (l *Loader) newWorker() *worker { return &worker{l: l, memo: map[chunkKey][]byte{}} }

// camera describes how a camera array is chunked.
type camera struct {
	a *zarr.Array
	// direct: one whole frame per chunk, decoded straight into its slot.
	direct bool
	// rowFrames is the chunk length along the frame axis; a chunk "row"
	// is that many whole frames, spread over every chunk covering them.
	rowFrames int
	spatial   []int // chunks per row along H, W, C
	// planar: every chunk holds one channel (zarr's default chunking of
	// RGB frames); a part then decodes the three channel chunks of one
	// spatial tile and interleaves them, writing each frame sequentially.
	planar bool
	parts  int // parts per row: chunks, or tiles when planar
}

func newCamera(a *zarr.Array) camera {
	c, s, g := a.Chunks(), a.Shape(), a.Grid()
	cam := camera{a: a, rowFrames: c[0], spatial: []int{g[1], g[2], g[3]}, parts: g[1] * g[2] * g[3]}
	cam.direct = c[0] == 1 && c[1] == s[1] && c[2] == s[2] && c[3] == s[3]
	if c[3] == 1 && s[3] == 3 {
		cam.planar, cam.parts = true, g[1]*g[2]
	}
	return cam
}

// fillBatch claims the next batch number (the delivery counter when
// inline), fills b with that batch of the sample stream and returns its
// number. A panic in the decoders is turned into an error so the loop
// sees it.
func (w *worker) fillBatch(b *Batch, inline bool) (n int64, err error) {
	t0 := time.Now()
	n = -1
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("loader: batch %d: internal error: %v\n%s", n, r, debug.Stack())
		}
		w.l.st.busyNs.Add(time.Since(t0).Nanoseconds())
	}()
	n = w.start(b, inline)
	w.n = n
	if err := w.runCameras(); err != nil {
		return n, fmt.Errorf("loader: batch %d: %w", n, err)
	}
	return n, w.fillLowDim(b)
}

// start claims a batch number and plans the batch, under the plan lock so
// that batches are planned in stream order: a batch sees every frame the
// batches before it decided to keep.
func (w *worker) start(b *Batch, inline bool) int64 {
	l := w.l
	l.planMu.Lock()
	defer l.planMu.Unlock()
	n := l.claim(inline)
	first := l.cfg.StartSample + n*int64(l.cfg.Batch)
	b.Sample = first
	per := int64(l.sampler.Len())
	for i := 0; i < b.Size; i++ {
		s := first + int64(i)
		b.Windows[i] = l.orders.get(s / per)[s%per]
	}
	w.batch = b
	w.planCameras(b, n, first+int64(b.Size))
	return n
}

// runCameras does the planned camera work: helps with its own job and the
// jobs it waits on, copies frames out of the store, and unpins them.
func (w *worker) runCameras() error {
	l, p := w.l, &w.plan
	if p.own != nil {
		p.own.help(l, w)
	}
	for _, j := range p.waits {
		j.help(l, w)
	}
	var err error
	if p.own != nil {
		err = p.own.wait(l, w)
	}
	for _, j := range p.waits {
		if e := j.wait(l, w); e != nil && err == nil {
			err = e
		}
	}
	if err == nil {
		t0 := time.Now()
		for _, c := range p.copies {
			for _, nd := range p.needs[c.g.a:c.g.b] {
				copy(w.batchSlot(nd.slot), c.e.data)
			}
		}
		for _, g := range p.direct {
			src := w.batchSlot(p.needs[g.a].slot)
			for _, nd := range p.needs[g.a+1 : g.b] {
				copy(w.batchSlot(nd.slot), src)
			}
		}
		l.st.collateNs.Add(time.Since(t0).Nanoseconds())
		l.st.bytesUsed.Add(int64(len(p.needs) * l.shape.FrameBytes()))
	}
	l.planMu.Lock()
	for _, c := range p.copies {
		l.store.unpin(c.e, l.uses.next)
	}
	l.planMu.Unlock()
	return err
}

// fillLowDim copies the state and action rows of every sample.
func (w *worker) fillLowDim(b *Batch) error {
	l := w.l
	clear(w.memo)
	for i := 0; i < b.Size; i++ {
		win := l.idx.Windows[b.Windows[i]]
		for j := 0; j < b.NObs; j++ {
			f := win.Frame(j)
			off := (i*b.NObs + j) * b.StateDim
			for k, a := range l.buf.LowDim {
				d := a.Shape()[1]
				if err := w.row(len(l.cams)+k, a, f, b.State[off:off+d]); err != nil {
					return fmt.Errorf("loader: sample %d (window %d): %w", b.Sample+int64(i), b.Windows[i], err)
				}
				off += d
			}
		}
		act := len(l.arrays) - 1
		for j := 0; j < b.Horizon; j++ {
			off := (i*b.Horizon + j) * b.ActionDim
			if err := w.row(act, l.buf.Action, win.Frame(j), b.Action[off:off+b.ActionDim]); err != nil {
				return fmt.Errorf("loader: sample %d (window %d): %w", b.Sample+int64(i), b.Windows[i], err)
			}
		}
	}
	return nil
}

// decodeInto reads chunk idx of a and decodes it into dst (ChunkBytes
// long) for batch number batch.
func (w *worker) decodeInto(a *zarr.Array, idx []int, dst []byte, batch int64) error {
	st := &w.l.st
	if h := w.l.cfg.onDecode; h != nil {
		h(batch, a, idx)
	}
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
	return nil
}

// row copies row f of a 2-D float32 array (index ai) into dst, in native
// byte order. Each chunk is taken from the low-dim cache once per batch.
func (w *worker) row(ai int, a *zarr.Array, f int64, dst []float32) error {
	sh, ch, g := a.Shape(), a.Chunks(), a.Grid()
	out := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 4*len(dst))
	r := int(f) / ch[0]
	for cc := 0; cc < g[1]; cc++ {
		key := chunkKey{ai, int64(r*g[1] + cc)}
		data, ok := w.memo[key]
		if !ok {
			var err error
			data, err = w.l.low.get(key, a.ChunkBytes(), func(buf []byte) error {
				return w.decodeInto(a, []int{r, cc}, buf, w.n)
			})
			if err != nil {
				return err
			}
			w.memo[key] = data
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
