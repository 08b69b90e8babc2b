package stage

import (
	"cmp"
	"slices"
)

// PauseHold is the part of a pause's mean time that a stacks frame's
// samples of the pause's stage must exceed the frames' typical rate by for
// the frame to hold a pause (a pause may straddle two frames).
const PauseHold = 0.25

// PauseApart is how many frames' time apart pauses must recur for some
// frames to hold none: more often, the frames differ only by how many
// pauses they hold, and their difference is not a pause's code.
const PauseApart = 2.0

// PauseProfile is Profile with the code of the window's periodic pauses
// (s's data_wait pattern and its Pauses) in Pauses: see PauseGroup.
func (c *CodeRing) PauseProfile(fromNs, toNs int64, s *Summary) *CodeProfile {
	p := c.Profile(fromNs, toNs)
	if p == nil || s == nil {
		return p
	}
	patterns := []Pause{}
	if s.Waits != nil {
		patterns = append(patterns, Pause{Stage: DataWait, WaitPattern: *s.Waits})
	}
	patterns = append(patterns, s.Pauses...)
	for _, pat := range patterns {
		if !pat.Bursty() || pat.Period <= 0 {
			continue
		}
		if g := c.PauseGroup(fromNs, toNs, pat.Stage, pat.EachNs(), float64(pat.Period)*s.WallMean); g != nil {
			p.Pauses = append(p.Pauses, *g)
		}
	}
	return p
}

// PauseGroup profiles the training thread's own samples of a pause of
// stage st that lasts spikeNs and recurs every periodNs. The stacks
// frames in [fromNs, toNs] whose samples in st exceed the frames' median
// rate by PauseHold of a pause hold one; their samples of st, less what
// the other frames sample of each stack in as long a time, are the
// pause's. nil when no frame holds a pause or every frame does, when the
// pauses recur within PauseApart frames (nothing tells them from the rest
// of the steps), or when nothing is left. Only the training thread's
// samples are taken: they are folded in the frame of their own second,
// while the workers' come up to a second later. Its hot spot needs the
// time of MinHotSamples samples, not their count: a pause that holds the
// GIL (torch.save) gets few samples, each standing for a long time.
func (c *CodeRing) PauseGroup(fromNs, toNs int64, st string, spikeNs, periodNs float64) *CodeGroup {
	key := groupKey{RoleTrain, st}
	var window []*codeEntry
	var rates, intervals []float64
	for i := range c.entries {
		if e := &c.entries[i]; e.timeNs >= fromNs && e.timeNs <= toNs && e.intervalNs > 0 {
			window = append(window, e)
			rates = append(rates, float64(e.sampled(key))/float64(e.intervalNs))
			intervals = append(intervals, float64(e.intervalNs))
		}
	}
	if len(window) == 0 || periodNs < PauseApart*selectKth(intervals, rank(len(intervals), 0.5)) {
		return nil // pauses in most frames: none is free of them
	}
	median := selectKth(rates, rank(len(rates), 0.5))
	var in, out []*codeEntry
	for _, e := range window {
		if float64(e.sampled(key)) >= median*float64(e.intervalNs)+PauseHold*spikeNs {
			in = append(in, e)
		} else {
			out = append(out, e)
		}
	}
	if len(in) == 0 || len(out) == 0 {
		return nil
	}
	ws := excess(key, in, out)
	if len(ws) == 0 {
		return nil
	}
	var minNs int64
	if hz := in[0].hz; hz > 0 {
		minNs = int64(MinHotSamples * 1e9 / hz)
	}
	g := c.t.group(key, ws, minNs)
	return &g
}

// sampled is the wall time e's samples of group key stand for.
func (e *codeEntry) sampled(key groupKey) int64 {
	var ns int64
	for _, r := range e.rows {
		if r.group == key {
			ns += r.ns
		}
	}
	return ns
}

// excess is each stack of group key in the entries in, less what the
// entries out sample of it in as long a time; stacks left with nothing
// are dropped.
func excess(key groupKey, in, out []*codeEntry) []weighted {
	sum := func(es []*codeEntry) (map[int32]*[2]int64, int64) {
		acc := map[int32]*[2]int64{}
		var span int64
		for _, e := range es {
			span += e.intervalNs
			for _, r := range e.rows {
				if r.group != key {
					continue
				}
				a := acc[r.stack]
				if a == nil {
					a = &[2]int64{}
					acc[r.stack] = a
				}
				a[0] += r.n
				a[1] += r.ns
			}
		}
		return acc, span
	}
	a, inSpan := sum(in)
	b, outSpan := sum(out)
	scale := float64(inSpan) / float64(outSpan)
	var ws []weighted
	for stack, x := range a {
		n, ns := float64(x[0]), float64(x[1])
		if y := b[stack]; y != nil {
			n -= scale * float64(y[0])
			ns -= scale * float64(y[1])
		}
		if n >= 0.5 && ns > 0 {
			ws = append(ws, weighted{stack: stack, n: int64(n + 0.5), ns: int64(ns)})
		}
	}
	slices.SortFunc(ws, func(x, y weighted) int { return cmp.Compare(x.stack, y.stack) })
	return ws
}
