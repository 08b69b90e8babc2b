package loader

import (
	"cmp"
	"slices"
)

// need is one camera frame slot of a batch: frame key.frame of camera
// key.cam goes to image slot (sample*NObs+obs)*Cams+cam.
type need struct {
	key  frameKey
	slot int32
}

// group is a run of needs for the same frame: needs[a:b].
type group struct{ a, b int }

// candidate is a frame a pass could keep in the store.
type candidate struct {
	next int64
	key  frameKey
	pass int
	g    int // index into plan.missing when the batch itself needs it; -1 otherwise
}

// fromEntry copies a store entry into the slots of a group.
type fromEntry struct {
	e *frameEntry
	g group
}

// plan is a worker's camera work for one batch, built under the plan lock.
// Every chunk row the batch needs and the store lacks is decoded by
// exactly one pass of the batch's job, so no chunk is decoded twice for one
// batch whatever the store holds.
type plan struct {
	end     int64 // stream position after the batch
	needs   []need
	missing []group
	direct  []group // missing groups decoded into their first slot
	copies  []fromEntry
	waits   []*job // jobs of earlier batches filling entries this one uses
	own     *job
	cands   []candidate
	tgts    []passTarget
}

// passTarget is a target of the pass with index pass, while planning.
type passTarget struct {
	pass int
	t    target
}

// planCameras builds w.plan for batch b, number n (windows already
// chosen), ending at stream position end. Called in batch order under l.planMu.
func (w *worker) planCameras(b *Batch, n, end int64) {
	l, p := w.l, &w.plan
	s := l.store
	p.end, p.own = end, nil
	p.needs, p.missing, p.direct, p.copies, p.waits = p.needs[:0], p.missing[:0], p.direct[:0], p.copies[:0], p.waits[:0]
	for i := 0; i < b.Size; i++ {
		win := l.idx.Windows[b.Windows[i]]
		for j := 0; j < b.NObs; j++ {
			f := win.Frame(j)
			for c := range l.cams {
				p.needs = append(p.needs, need{frameKey{int32(c), f}, int32((i*b.NObs+j)*b.Cams + c)})
			}
		}
	}
	slices.SortFunc(p.needs, func(x, y need) int {
		return cmp.Or(cmp.Compare(x.key.cam, y.key.cam), cmp.Compare(x.key.frame, y.key.frame), cmp.Compare(x.slot, y.slot))
	})
	for a := 0; a < len(p.needs); {
		bnd := a + 1
		for bnd < len(p.needs) && p.needs[bnd].key == p.needs[a].key {
			bnd++
		}
		g := group{a, bnd}
		if e := s.m[p.needs[a].key]; e != nil {
			s.hits++
			s.pin(e, end)
			p.copies = append(p.copies, fromEntry{e, g})
			if e.fill != nil && !slices.Contains(p.waits, e.fill) {
				p.waits = append(p.waits, e.fill)
			}
		} else {
			s.misses++
			p.missing = append(p.missing, g)
		}
		a = bnd
	}
	if len(p.missing) > 0 {
		w.planJob(n)
	}
}

// planJob groups the missing frames by chunk row into passes, offers every
// frame of those rows to the store (it keeps the ones needed soonest, for
// later batches: the chunks are decoded anyway), and builds the job.
func (w *worker) planJob(n int64) {
	l, p := w.l, &w.plan
	s := l.store
	j := &job{n: n, done: make(chan struct{})}
	p.own = j
	p.cands, p.tgts = p.cands[:0], p.tgts[:0]
	limit := s.threshold()
	for m := 0; m < len(p.missing); {
		k := p.needs[p.missing[m].a].key
		cam := &l.cams[k.cam]
		rf := int64(cam.rowFrames)
		row := k.frame / rf
		pi := len(j.passes)
		j.passes = append(j.passes, pass{cam: int(k.cam), row: row, first: j.total, parts: int32(cam.parts)})
		j.total += int32(cam.parts)
		hi := min((row+1)*rf, int64(cam.a.Shape()[0]))
		for f := row * rf; f < hi; f++ {
			key := frameKey{k.cam, f}
			own := m < len(p.missing) && p.needs[p.missing[m].a].key == key
			g := -1
			if own {
				g = m
				m++
			} else if s.m[key] != nil {
				continue
			}
			next := noUse
			if own || limit > p.end {
				next = l.uses.next(f, p.end)
			}
			if next < limit || own {
				p.cands = append(p.cands, candidate{next, key, pi, g})
			}
		}
	}
	slices.SortFunc(p.cands, func(x, y candidate) int { return cmp.Compare(x.next, y.next) })
	admitting := true
	harvest := s.harvest
	for _, c := range p.cands {
		cam := &l.cams[c.key.cam]
		var e *frameEntry
		if admitting && c.next < limit && (c.g >= 0 || harvest >= s.frameBytes) && (!cam.direct || c.next < p.end+l.directHorizon) {
			if e = s.admit(c.key, c.next, p.end, j); e == nil {
				admitting = false
			} else if c.g < 0 {
				harvest -= s.frameBytes
			}
		}
		switch {
		case e != nil:
			j.entries = append(j.entries, e)
			w.addTarget(c.pass, c.key.frame, e.data)
			if c.g >= 0 {
				s.pin(e, p.end)
				p.copies = append(p.copies, fromEntry{e, p.missing[c.g]})
			}
		case c.g >= 0:
			g := p.missing[c.g]
			p.direct = append(p.direct, g)
			w.addTarget(c.pass, c.key.frame, w.batchSlot(p.needs[g.a].slot))
		}
	}
	s.harvest = min(2*s.harvest, s.cap)
	// Targets in pass order, frames ascending within a pass.
	slices.SortFunc(p.tgts, func(x, y passTarget) int {
		return cmp.Or(cmp.Compare(x.pass, y.pass), cmp.Compare(x.t.off, y.t.off))
	})
	j.targets = make([]target, len(p.tgts))
	t := 0
	for pi := range j.passes {
		j.passes[pi].t0 = t
		for t < len(p.tgts) && p.tgts[t].pass == pi {
			j.targets[t] = p.tgts[t].t
			t++
		}
		j.passes[pi].t1 = t
	}
}

func (w *worker) addTarget(pass int, frame int64, dst []byte) {
	rf := int64(w.l.cams[w.plan.own.passes[pass].cam].rowFrames)
	w.plan.tgts = append(w.plan.tgts, passTarget{pass, target{int(frame % rf), dst}})
}

// batchSlot is image slot i of the batch being planned.
func (w *worker) batchSlot(i int32) []byte {
	n := w.l.shape.FrameBytes()
	return w.batch.Images[int(i)*n : (int(i)+1)*n]
}
