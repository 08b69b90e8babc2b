package verdict

import "github.com/pipetop/pipetop/metrics/stage"

// Baseline accumulates the means of a run's first minutes, for the drift
// rule, without keeping its steps: it sums each whole second since the
// first step on its own, so the means up to any whole second are the sum
// of a few buckets. A viewer attached to 64 ranks once kept 8,192 steps of
// every rank for this, 1.3 MiB a rank written a column at a time; a
// second's bucket is one small struct that stays in the cache.
//
// The first BaselineSkip steps (warm-up) are left out, and steps that end
// more than BaselineNs after the first one ends are not kept. It is not
// safe for concurrent use.
type Baseline struct {
	names    []string
	rankWait []bool // rankWait[k]: stage k is comm-class, its GPU time not busy
	seen     int    // steps offered, the skipped ones included
	first    int64  // the number of the first step offered
	anchorNs int64  // when the first step offered ended: second 0 starts here
	startNs  int64  // when the first kept step started
	secs     []baselineSecond
}

// baselineSecond sums the kept steps that ended in one second: bucket i
// holds those that ended in (anchor + i s, anchor + (i+1) s], bucket 0
// also the anchor itself.
type baselineSecond struct {
	sums
	steps            int
	lastStep, lastNs int64 // the newest step's number and end
}

// NewBaseline returns an empty Baseline for steps of the stage list names.
func NewBaseline(names []string) *Baseline {
	b := &Baseline{names: append([]string(nil), names...), rankWait: make([]bool, len(names))}
	for k, n := range names {
		b.rankWait[k] = stage.ClassOf(n) == stage.ClassComm
	}
	return b
}

// Add counts r when it belongs to the run's first minutes.
func (b *Baseline) Add(r *stage.Record) {
	b.seen++
	if b.seen == 1 {
		b.anchorNs, b.first = r.EndNs, r.Step
	}
	if b.seen <= BaselineSkip || r.EndNs > b.anchorNs+int64(BaselineNs) {
		return
	}
	i := b.second(r.EndNs)
	for len(b.secs) <= i {
		b.secs = append(b.secs, baselineSecond{})
	}
	if b.startNs == 0 {
		b.startNs = r.StartNs
	}
	s := &b.secs[i]
	s.steps++
	if r.EndNs >= s.lastNs {
		s.lastStep, s.lastNs = r.Step, r.EndNs
	}
	s.wall.addOne(r.EndNs - r.StartNs)
	s.samples += int64(r.Samples)
	n := min(r.NumStages, len(b.names))
	busy := int64(-1) // unknown, as a Record writes it, until a stage has a GPU time
	for k := range n {
		s.cpu[k].addOne(r.CPU[k])
		s.gpu[k].addOne(r.GPU[k])
		if r.GPU[k] >= 0 && !b.rankWait[k] {
			busy = max(busy, 0) + r.GPU[k]
		}
	}
	for k := len(b.names); k < r.NumStages; k++ { // stages beyond the list: GPU busy time only
		if r.GPU[k] >= 0 {
			busy = max(busy, 0) + r.GPU[k]
		}
	}
	s.busy.addOne(busy)
}

// AddAggregate counts g's steps when they belong to the run's first
// minutes. An aggregate counts whole, in the second in which its last step
// ended; one that ends within the first BaselineSkip steps is left out.
func (b *Baseline) AddAggregate(g *stage.Aggregate) {
	if b.seen == 0 {
		b.first = g.FirstStep
	}
	b.seen += int(g.Steps)
	if b.anchorNs == 0 {
		b.anchorNs = g.EndNs
	}
	if b.seen <= BaselineSkip || g.EndNs > b.anchorNs+int64(BaselineNs) {
		return
	}
	i := b.second(g.EndNs)
	for len(b.secs) <= i {
		b.secs = append(b.secs, baselineSecond{})
	}
	if b.startNs == 0 {
		b.startNs = g.StartNs
	}
	s := &b.secs[i]
	s.steps += int(g.Steps)
	if g.EndNs >= s.lastNs {
		s.lastStep, s.lastNs = g.LastStep, g.EndNs
	}
	s.wall.mergeSketch(&g.Wall)
	s.busy.mergeSketch(&g.Busy)
	s.samples += g.Samples
	for k := range min(len(g.CPU), len(b.names)) {
		s.cpu[k].mergeSketch(&g.CPU[k])
		if k < len(g.GPU) {
			s.gpu[k].mergeSketch(&g.GPU[k])
		}
	}
}

// AddSpan counts a span of steps known only by its totals (a run
// summary's timeline between two of its points) as AddAggregate counts an
// aggregate: steps steps from firstStep, begun at startNs and ended by
// endNs, wallNs of wall time in all and cpuNs of each stage of the list.
func (b *Baseline) AddSpan(firstStep, steps, startNs, endNs, wallNs int64, cpuNs []int64) {
	if steps <= 0 {
		return
	}
	g := stage.Aggregate{Steps: steps, FirstStep: firstStep, LastStep: firstStep + steps - 1, StartNs: startNs, EndNs: endNs,
		Wall: stage.Sketch{N: steps, Sum: wallNs}, CPU: make([]stage.Sketch, len(cpuNs))}
	for k, ns := range cpuNs {
		g.CPU[k] = stage.Sketch{N: steps, Sum: ns}
	}
	b.AddAggregate(&g)
}

// second is the bucket of a step that ended at endNs (not before the
// anchor).
func (b *Baseline) second(endNs int64) int {
	d := endNs - b.anchorNs
	if d <= 0 {
		return 0
	}
	return int((d - 1) / 1e9)
}

// First is the number of the first step offered (0 before any): past
// the run's start for a viewer that attached late.
func (b *Baseline) First() int64 { return b.first }

// AnchorNs is when the first step offered ended (Unix ns), 0 before any.
func (b *Baseline) AnchorNs() int64 { return b.anchorNs }

// WholeAt is how many whole seconds of the run's first minutes a viewer
// judges drift against at atNs: at most BaselineNs, and the first third of
// the time since the first step ended, so that a short run's baseline does
// not overlap its recent steps. It moves in whole seconds: a viewer keeps
// its baseline's summary until it moves.
func (b *Baseline) WholeAt(atNs int64) int {
	if b == nil || b.anchorNs == 0 {
		return 0
	}
	return int(min((atNs-b.anchorNs)/3, int64(BaselineNs)) / 1e9)
}

// At is the baseline a viewer judges drift against at atNs: the means of
// the first WholeAt(atNs) seconds (drift compares means); nil until they
// hold MinSteps steps. It is the one baseline rule: the live feed, a
// recording's summary and a run summary's timeline all take it.
func (b *Baseline) At(atNs int64) *stage.Summary {
	if b == nil || b.anchorNs == 0 {
		return nil
	}
	if m := b.Means(b.WholeAt(atNs)); m.Steps >= MinSteps {
		return &m
	}
	return nil
}

// Means summarizes the kept steps that ended at most whole seconds after
// the anchor, as stage.StepRing.SummarizeBetween would: counts, span,
// rates, means and shares, every quantile zero.
func (b *Baseline) Means(whole int) stage.Summary {
	var m sums
	var n int
	var last *baselineSecond
	for i := range min(whole, len(b.secs)) {
		s := &b.secs[i]
		if s.steps == 0 {
			continue
		}
		n += s.steps
		m.merge(&s.sums)
		last = s
	}
	if n == 0 {
		return stage.Summary{}
	}
	s := stage.Summary{Steps: n, LastStep: last.lastStep, LastEndNs: last.lastNs, SpanNs: last.lastNs - b.startNs}
	if s.SpanNs > 0 {
		sec := float64(s.SpanNs) / 1e9
		s.StepsPerSec = float64(n) / sec
		s.SamplesPerSec = float64(m.samples) / sec
	}
	s.WallMean = m.wall.mean()
	s.Stages = make([]stage.StageStat, len(b.names))
	for k, name := range b.names {
		s.Stages[k] = stage.StageStat{Name: name, Mean: m.cpu[k].mean(), HasGPU: m.gpu[k].n > 0, GPUMean: m.gpu[k].mean()}
	}
	s.Finish(m.busy.mean())
	return s
}

// known is a running sum of known values and their count, for a mean
// (not a run's stage.Totals).
type known struct {
	sum float64
	n   int
}

// addOne adds x when it is known. A sum of float64 adds integers
// exactly while it stays below 2^53 ns (104 days).
func (t *known) addOne(x int64) {
	if x >= 0 {
		t.sum += float64(x)
		t.n++
	}
}

// merge adds u's values.
func (t *known) merge(u known) { t.sum, t.n = t.sum+u.sum, t.n+u.n }

// mergeSketch adds the times s counts.
func (t *known) mergeSketch(s *stage.Sketch) { t.sum, t.n = t.sum+float64(s.Sum), t.n+int(s.N) }

func (t known) mean() float64 {
	if t.n == 0 {
		return 0
	}
	return t.sum / float64(t.n)
}

// sums is a span of records reduced to the totals a means-only summary
// needs.
type sums struct {
	wall, busy known
	cpu, gpu   [stage.MaxStages]known
	samples    int64
}

// merge adds u's totals.
func (m *sums) merge(u *sums) {
	m.wall.merge(u.wall)
	m.busy.merge(u.busy)
	for k := range m.cpu {
		m.cpu[k].merge(u.cpu[k])
		m.gpu[k].merge(u.gpu[k])
	}
	m.samples += u.samples
}
