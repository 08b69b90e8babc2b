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
func (a *AggRing) Summarize(d time.Duration) Summary { return a.summarize(d, true) }

// Brief is Summarize without the stages' quantiles and the wait pattern:
// counts, rates, the wall time's mean and quantiles, every stage's means
// and share. It is what a run's view reads of the ranks it does not show
// (the ranks pane and the run's rules), for a tenth of the merging.
func (a *AggRing) Brief(d time.Duration) Summary { return a.summarize(d, false) }

func (a *AggRing) summarize(d time.Duration, full bool) Summary {
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
	w := a.window(first, n)
	s := a.head(w)
	a.column(w, func(g *Aggregate) *Sketch { return &g.Wall })
	s.WallMean, s.WallP50, s.WallP99 = a.m.mean(), a.m.quantile(0.5), a.m.quantile(0.99)
	wallTypical := a.m.quantile(TypicalRank)
	s.Stages = make([]StageStat, len(a.names))
	dataWait := slices.Index(a.names, DataWait)
	var waitTypical, waitTotal float64
	var pauses [MaxStages][2]float64 // pauses[k]: a PauseStage's typical time and total
	for k, name := range a.names {
		cpu := func(g *Aggregate) *Sketch { return sketchAt(g.CPU, k) }
		gpu := func(g *Aggregate) *Sketch { return sketchAt(g.GPU, k) }
		st := StageStat{Name: name}
		if !full {
			st.Mean, _ = columnMean(w, cpu)
			var gn int64
			st.GPUMean, gn = columnMean(w, gpu)
			st.HasGPU = gn > 0
			s.Stages[k] = st
			continue
		}
		a.column(w, cpu)
		st.Mean, st.P50, st.P99 = a.m.mean(), a.m.quantile(0.5), a.m.quantile(0.99)
		if k == dataWait {
			waitTypical, waitTotal = a.m.quantile(TypicalRank), float64(a.m.sum)
		}
		if slices.Contains(PauseStages, name) {
			pauses[k] = [2]float64{a.m.quantile(TypicalRank), float64(a.m.sum)}
		}
		a.column(w, gpu)
		st.HasGPU = a.m.n > 0
		st.GPUMean, st.GPUP99 = a.m.mean(), a.m.quantile(0.99)
		s.Stages[k] = st
	}
	busy, _ := columnMean(w, func(g *Aggregate) *Sketch { return &g.Busy })
	s.Finish(busy)
	if full && dataWait >= 0 {
		a.waits = a.waits[:0]
		for _, g := range w {
			a.waits = append(a.waits, g.Waits...)
		}
		s.Waits = waitPattern(s.Steps, waitTotal, a.waits, s.WallP50, wallTypical, waitTypical)
	}
	for _, name := range PauseStages {
		if k := slices.Index(a.names, name); full && k >= 0 {
			a.stageWaits(w, k)
			s.addPause(name, waitPattern(s.Steps, pauses[k][1], a.waits, s.WallP50, wallTypical, pauses[k][0]))
		}
	}
	return s
}

// stageWaits gathers into a.waits the step, ns pairs of stage k's pauses
// the window w's aggregates carry, in step order.
func (a *AggRing) stageWaits(w []*Aggregate, k int) {
	a.waits = a.waits[:0]
	for _, g := range w {
		for j := 0; j+2 < len(g.Pauses); j += 3 {
			if g.Pauses[j] == int64(k) {
				a.waits = append(a.waits, g.Pauses[j+1], g.Pauses[j+2])
			}
		}
	}
}

// window is the aggregates first..end-1.
func (a *AggRing) window(first, end int) []*Aggregate {
	w := make([]*Aggregate, 0, end-first)
	for i := first; i < end; i++ {
		w = append(w, a.at(i))
	}
	return w
}

// head is the summary's counts, span, rates and newest loss of the
// window w.
func (a *AggRing) head(w []*Aggregate) Summary {
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
	for i := len(w) - 1; i >= 0; i-- {
		if l := w[i].Loss; l != nil {
			s.HasLoss, s.LastLoss = true, l.Value
			break
		}
	}
	return s
}

// columnMean is the mean of the times of the sketch that col picks from
// each aggregate of w, from their counts and sums (no bins), and how many
// there are.
func columnMean(w []*Aggregate, col func(*Aggregate) *Sketch) (float64, int64) {
	var n, sum int64
	for _, g := range w {
		if s := col(g); s != nil {
			n += s.N
			sum += s.Sum
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(sum) / float64(n), n
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
