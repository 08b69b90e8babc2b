package stage

import (
	"slices"
	"time"
)

// AggRing keeps the most recent aggregates of one stage list and
// summarizes them as a StepRing summarizes steps: means exactly, the
// quantiles from the merged sketches (within 1/128 of the exact ones),
// the wait pattern from the waits the aggregates carry. It is not safe
// for concurrent use.
type AggRing struct {
	names []string
	aggs  []Aggregate
	next  int
	full  bool
	m     sketchMerge // scratch for the quantiles of one column
	waits []int64     // scratch: the window's waits
}

// NewAggRing returns an AggRing holding up to capacity aggregates made
// with the stage list names.
func NewAggRing(names []string, capacity int) *AggRing {
	return &AggRing{names: slices.Clone(names), aggs: make([]Aggregate, max(capacity, 1))}
}

// Len is the number of aggregates held.
func (a *AggRing) Len() int {
	if a.full {
		return len(a.aggs)
	}
	return a.next
}

// Add keeps g, evicting the oldest aggregate when full.
func (a *AggRing) Add(g Aggregate) {
	a.aggs[a.next] = g
	a.next++
	if a.next == len(a.aggs) {
		a.next, a.full = 0, true
	}
}

// Each calls fn with every aggregate held, oldest first.
func (a *AggRing) Each(fn func(g *Aggregate)) {
	for i := range a.Len() {
		fn(a.at(i))
	}
}

// at is the i-th aggregate held, oldest first.
func (a *AggRing) at(i int) *Aggregate {
	if !a.full {
		return &a.aggs[i]
	}
	return &a.aggs[(a.next+i)%len(a.aggs)]
}

// Summarize aggregates the aggregates that ended within d of the newest
// one (all when d <= 0; at least the newest).
func (a *AggRing) Summarize(d time.Duration) Summary {
	n := a.Len()
	if n == 0 {
		return Summary{}
	}
	first := n - 1
	if d <= 0 {
		first = 0
	}
	for cut := a.at(n-1).EndNs - int64(d); first > 0 && a.at(first-1).EndNs > cut; {
		first--
	}
	return a.summarize(a.window(first, n))
}

// window is the aggregates first..end-1.
func (a *AggRing) window(first, end int) []*Aggregate {
	w := make([]*Aggregate, 0, end-first)
	for i := first; i < end; i++ {
		w = append(w, a.at(i))
	}
	return w
}

func (a *AggRing) summarize(w []*Aggregate) Summary {
	var steps, samples int64
	for _, g := range w {
		steps += g.Steps
		samples += g.Samples
	}
	last := w[len(w)-1]
	s := Summary{Steps: int(steps), LastStep: last.LastStep, LastEndNs: last.EndNs, SpanNs: last.EndNs - w[0].StartNs}
	if s.SpanNs > 0 {
		sec := float64(s.SpanNs) / 1e9
		s.StepsPerSec = float64(steps) / sec
		s.SamplesPerSec = float64(samples) / sec
	}
	a.column(w, func(g *Aggregate) *Sketch { return &g.Wall })
	s.WallMean, s.WallP50, s.WallP99 = a.m.mean(), a.m.quantile(0.5), a.m.quantile(0.99)
	wallTypical := a.m.quantile(TypicalRank)
	s.Stages = make([]StageStat, len(a.names))
	dataWait := slices.Index(a.names, DataWait)
	var waitTypical, waitTotal float64
	for k, name := range a.names {
		st := StageStat{Name: name}
		a.column(w, func(g *Aggregate) *Sketch { return sketchAt(g.CPU, k) })
		st.Mean, st.P50, st.P99 = a.m.mean(), a.m.quantile(0.5), a.m.quantile(0.99)
		if k == dataWait {
			waitTypical, waitTotal = a.m.quantile(TypicalRank), float64(a.m.sum)
		}
		a.column(w, func(g *Aggregate) *Sketch { return sketchAt(g.GPU, k) })
		st.HasGPU = a.m.n > 0
		st.GPUMean, st.GPUP99 = a.m.mean(), a.m.quantile(0.99)
		s.Stages[k] = st
	}
	a.column(w, func(g *Aggregate) *Sketch { return &g.Busy })
	s.finish(a.m.mean())
	for i := len(w) - 1; i >= 0; i-- {
		if l := w[i].Loss; l != nil {
			s.HasLoss, s.LastLoss = true, l.Value
			break
		}
	}
	if dataWait >= 0 {
		a.waits = a.waits[:0]
		for _, g := range w {
			a.waits = append(a.waits, g.Waits...)
		}
		s.Waits = waitPattern(s.Steps, waitTotal, a.waits, s.WallP50, wallTypical, waitTypical)
	}
	return s
}

// column merges the sketch that col picks from each aggregate of w into
// a.m.
func (a *AggRing) column(w []*Aggregate, col func(*Aggregate) *Sketch) {
	a.m.reset()
	for _, g := range w {
		if s := col(g); s != nil {
			a.m.merge(s)
		}
	}
}

// sketchAt is v[k], nil past its end.
func sketchAt(v []Sketch, k int) *Sketch {
	if k >= len(v) {
		return nil
	}
	return &v[k]
}

// mean is the mean of the merged times, 0 when there are none.
func (m *sketchMerge) mean() float64 {
	if m.n == 0 {
		return 0
	}
	return float64(m.sum) / float64(m.n)
}
