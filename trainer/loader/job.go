package loader

import (
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipetop/pipetop/trainer/zarr"
)

// job is the camera decoding one batch planned: passes over chunk rows,
// each decoding every chunk of its row once and copying out the frames
// that the batch, or the store on behalf of later batches, wants. Parts
// (one chunk each) are claimed by any worker that waits on the job, so
// the workers of later batches help instead of idling.
type job struct {
	n       int64 // the batch that planned it
	passes  []pass
	targets []target
	entries []*frameEntry // store entries the job fills
	total   int32         // parts over all passes
	next    atomic.Int32  // next unclaimed part
	doneN   atomic.Int32  // finished parts
	done    chan struct{}
	errMu   sync.Mutex
	err     error
}

// pass decodes the chunks of one camera chunk row.
type pass struct {
	cam    int
	row    int64
	first  int32 // the job's index of the pass's first part
	parts  int32
	t0, t1 int // its targets: job.targets[t0:t1]
}

// target is a frame a pass copies out: frame off of the row into dst.
type target struct {
	off int
	dst []byte
}

func (j *job) fail(err error) {
	j.errMu.Lock()
	if j.err == nil {
		j.err = err
	}
	j.errMu.Unlock()
}

func (j *job) passOf(k int32) *pass {
	i := sort.Search(len(j.passes), func(i int) bool { return j.passes[i].first > k }) - 1
	return &j.passes[i]
}

// help runs unclaimed parts of j until none are left.
func (j *job) help(l *Loader, w *worker) {
	for {
		k := j.next.Add(1) - 1
		if k >= j.total {
			return
		}
		p := j.passOf(k)
		if err := w.part(p, j.targets[p.t0:p.t1], int(k-p.first), j.n); err != nil {
			j.fail(err)
		}
		if j.doneN.Add(1) == j.total {
			l.finish(j)
		}
	}
}

// wait helps with j, then waits for it and returns its error.
func (j *job) wait(l *Loader, w *worker) error {
	j.help(l, w)
	<-j.done
	return j.err
}

// finish publishes a completed job's entries (or drops them if it failed).
func (l *Loader) finish(j *job) {
	l.planMu.Lock()
	for _, e := range j.entries {
		e.fill = nil
		if j.err != nil {
			l.store.drop(e)
		}
		l.store.unpin(e, nil)
	}
	l.planMu.Unlock()
	close(j.done)
}

// part decodes chunk i of pass p's row for batch n and copies the
// targets' frames out of it. A panic in a decoder becomes the part's error.
func (w *worker) part(p *pass, ts []target, i int, n int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("loader: camera %d chunk row %d: internal error: %v\n%s", p.cam, p.row, r, debug.Stack())
		}
	}()
	cam := &w.l.cams[p.cam]
	a := cam.a
	sp := cam.spatial
	idx := [4]int{int(p.row), i / (sp[1] * sp[2]), i / sp[2] % sp[1], i % sp[2]}
	if cam.direct {
		// One whole frame per chunk: decode straight into the first
		// target, copy to any other.
		if err := w.decodeInto(a, idx[:], ts[0].dst, n); err != nil {
			return err
		}
		for _, t := range ts[1:] {
			copy(t.dst, ts[0].dst)
		}
		return nil
	}
	if cam.planar {
		return w.planarPart(cam, p.row, i, ts, n)
	}
	if len(w.chunk) != a.ChunkBytes() {
		w.chunk = make([]byte, a.ChunkBytes())
	}
	if err := w.decodeInto(a, idx[:], w.chunk, n); err != nil {
		return err
	}
	t0 := time.Now()
	sh, ch := a.Shape(), a.Chunks()
	frame := [4]int{1, sh[1], sh[2], sh[3]}
	var off, cnt [4]int
	cnt[0] = 1
	for k := 1; k < 4; k++ {
		off[k] = idx[k] * ch[k]
		cnt[k] = min(ch[k], sh[k]-off[k])
	}
	for _, t := range ts {
		zarr.CopyBox(t.dst, frame[:], off[:], w.chunk, ch, []int{t.off, 0, 0, 0}, cnt[:], 1)
	}
	w.l.st.collateNs.Add(time.Since(t0).Nanoseconds())
	return nil
}

// planarPart decodes the three channel chunks of spatial tile i of a
// planar camera's row and interleaves the targets' frames out of them.
func (w *worker) planarPart(cam *camera, row int64, i int, ts []target, n int64) error {
	a := cam.a
	sh, ch := a.Shape(), a.Chunks()
	ty, tx := i/cam.spatial[1], i%cam.spatial[1]
	for c := range w.planes {
		if len(w.planes[c]) != a.ChunkBytes() {
			w.planes[c] = make([]byte, a.ChunkBytes())
		}
		if err := w.decodeInto(a, []int{int(row), ty, tx, c}, w.planes[c], n); err != nil {
			return err
		}
	}
	t0 := time.Now()
	y0, x0 := ty*ch[1], tx*ch[2]
	ny, nx := min(ch[1], sh[1]-y0), min(ch[2], sh[2]-x0)
	tile, stride := ch[1]*ch[2], 3*sh[2]
	for _, t := range ts {
		for y := range ny {
			s := t.off*tile + y*ch[2]
			d := (y0+y)*stride + 3*x0
			interleave3(t.dst[d:d+3*nx], w.planes[0][s:s+nx], w.planes[1][s:s+nx], w.planes[2][s:s+nx])
		}
	}
	w.l.st.collateNs.Add(time.Since(t0).Nanoseconds())
	return nil
}

// interleave3 writes r[i], g[i], b[i] to dst[3i], dst[3i+1], dst[3i+2],
// eight pixels (three 8-byte words) at a time.
func interleave3(dst, r, g, b []byte) {
	n := len(r)
	dst = dst[:3*n]
	g, b = g[:n], b[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		rv := binary.LittleEndian.Uint64(r[i:])
		gv := binary.LittleEndian.Uint64(g[i:])
		bv := binary.LittleEndian.Uint64(b[i:])
		o := dst[3*i : 3*i+24]
		binary.LittleEndian.PutUint64(o, rv&0xff|gv&0xff<<8|bv&0xff<<16|rv>>8&0xff<<24|
			gv>>8&0xff<<32|bv>>8&0xff<<40|rv>>16&0xff<<48|gv>>16&0xff<<56)
		binary.LittleEndian.PutUint64(o[8:], bv>>16&0xff|rv>>24&0xff<<8|gv>>24&0xff<<16|bv>>24&0xff<<24|
			rv>>32&0xff<<32|gv>>32&0xff<<40|bv>>32&0xff<<48|rv>>40&0xff<<56)
		binary.LittleEndian.PutUint64(o[16:], gv>>40&0xff|bv>>40&0xff<<8|rv>>48&0xff<<16|gv>>48&0xff<<24|
			bv>>48&0xff<<32|rv>>56<<40|gv>>56<<48|bv>>56<<56)
	}
	for ; i < n; i++ {
		dst[3*i] = r[i]
		dst[3*i+1] = g[i]
		dst[3*i+2] = b[i]
	}
}
