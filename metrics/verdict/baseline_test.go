package verdict

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// baselineRun adds n records of wall ns each, from one Unix time on, to a
// Baseline and to a StepRing large enough for all of them: with and
// without GPU times, with fewer stages than the list and with one more.
func baselineRun(names []string, n int, wall int64) (*Baseline, *stage.StepRing) {
	b, w := NewBaseline(names), stage.NewStepRing(names, n)
	rng := rand.New(rand.NewPCG(3, 4))
	at := int64(1e18)
	for i := range int64(n) {
		cpu := []int64{rng.Int64N(5e6), rng.Int64N(9e6), rng.Int64N(7e6), rng.Int64N(1e6), rng.Int64N(2e6)}
		var gpu []int64
		if i%3 != 0 {
			gpu = []int64{-1, rng.Int64N(8e6), rng.Int64N(6e6), -1, rng.Int64N(3e6)}
		}
		switch {
		case i%7 == 0:
			cpu = cpu[:2]
		case i%5 != 0:
			cpu = cpu[:4]
		}
		if gpu != nil {
			gpu = gpu[:len(cpu)]
		}
		r := stage.RecordOf(i, at, at+wall, int32(8+i%3), cpu, gpu)
		at += wall
		b.Add(&r)
		w.Add(&r)
	}
	return b, w
}

// Means over whole seconds agrees with SummarizeBetween over the same
// steps on everything it computes, leaves out the warm-up and stops at
// BaselineNs.
func TestBaselineMatchesSummarizeBetween(t *testing.T) {
	names := []string{stage.DataWait, stage.Forward, stage.Backward, stage.Comm}
	for _, c := range []struct {
		steps int
		wall  int64
		whole []int
	}{{500, 25e6, []int{1, 3, 7, 12, 40}}, {600, 300e6, []int{10, 119, 120, 121, 500}}} {
		b, w := baselineRun(names, c.steps, c.wall)
		first, _ := w.First()
		for _, whole := range c.whole {
			to := first.EndNs + int64(min(whole, 120))*1e9
			want, got := w.SummarizeBetween(BaselineSkip, 0, to), b.Means(whole)
			if want.Steps == 0 || want.Steps == c.steps {
				t.Fatalf("%d s: %d steps of %d: the case should cut the run", whole, want.Steps, c.steps)
			}
			sameMeans(t, got, want)
		}
	}
}

// sameMeans fails t unless got has want's counts, span, rates, means and
// shares.
func sameMeans(t *testing.T, got, want stage.Summary) {
	t.Helper()
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) }
	if got.Steps != want.Steps || got.SpanNs != want.SpanNs || got.LastStep != want.LastStep || got.LastEndNs != want.LastEndNs ||
		!near(got.WallMean, want.WallMean) || !near(got.StepsPerSec, want.StepsPerSec) || !near(got.SamplesPerSec, want.SamplesPerSec) ||
		got.HasGPU != want.HasGPU || !near(got.GPUBusyMean, want.GPUBusyMean) || !near(got.GPUBusy, want.GPUBusy) {
		t.Fatalf("means %+v\nwant  %+v", got, want)
	}
	for k := range want.Stages {
		g, s := got.Stages[k], want.Stages[k]
		if g.Name != s.Name || !near(g.Mean, s.Mean) || !near(g.Share, s.Share) || g.HasGPU != s.HasGPU || !near(g.GPUMean, s.GPUMean) {
			t.Errorf("stage %s: %+v, want %+v", s.Name, g, s)
		}
	}
}

// A Baseline with no step, or none past the warm-up, has an empty
// summary.
func TestBaselineEmpty(t *testing.T) {
	b := NewBaseline([]string{stage.Forward})
	if s := b.Means(10); s.Steps != 0 || b.AnchorNs() != 0 {
		t.Fatalf("empty: %+v, anchor %d", s, b.AnchorNs())
	}
	for i := range int64(BaselineSkip) {
		r := stage.RecordOf(i, 1e18+i*10, 1e18+i*10+10, 1, []int64{5}, nil)
		b.Add(&r)
	}
	if s := b.Means(10); s.Steps != 0 || b.AnchorNs() != 1e18+10 {
		t.Fatalf("warm-up only: %+v, anchor %d", s, b.AnchorNs())
	}
}

// Times too large to sum exactly are still summed, and unknown ones are
// left out.
func TestBaselineHugeTimes(t *testing.T) {
	b := NewBaseline([]string{stage.Forward})
	at := int64(1e18)
	for i, x := range []int64{0, 0, 0, 0, 0, 1 << 62, 3, -1, 1 << 62, 5, 1 << 62} {
		r := stage.RecordOf(int64(i), at, at+10, 1, []int64{x}, nil)
		b.Add(&r)
		at += 10
	}
	got := b.Means(1).Stages[0].Mean
	if want := (3*math.Pow(2, 62) + 8) / 5; got != want {
		t.Fatalf("mean %g, want %g", got, want)
	}
}

// plant makes n records of a loader that spikes every period steps and a
// GPU that times forward, as metrics/stage's aggregate tests do.
func plant(n, period int) []stage.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]stage.Record, n)
	t := int64(1_700_000_000e9)
	for i := range recs {
		wait := int64(300e3 + rng.IntN(200e3))
		if i%period == 0 {
			wait = int64(40e6 + rng.IntN(5e6))
		}
		fwd, bwd := int64(4e6+rng.IntN(1e6)), int64(6e6+rng.IntN(2e6))
		cpu := []int64{wait, fwd, bwd, int64(rng.IntN(50e3))}
		r := stage.RecordOf(int64(i), t, t+cpu[0]+cpu[1]+cpu[2]+cpu[3], 64, cpu, []int64{-1, fwd - 1e5, bwd - 1e5, -1})
		if i%50 == 0 {
			r.HasLoss, r.Loss = true, float32(i)
		}
		recs[i] = r
		t = r.EndNs
	}
	return recs
}

var plantNames = []string{stage.DataWait, stage.Forward, stage.Backward, stage.Other}

// aggregated folds recs into aggregates of about a second each.
func aggregated(recs []stage.Record) *stage.AggRing {
	ring := stage.NewAggRing(plantNames, 256)
	a := stage.NewAggregator(plantNames)
	for i := range recs {
		a.Add(&recs[i])
		if recs[i].EndNs-recs[0].EndNs > int64(ring.Len()+1)*1e9 {
			ring.Add(a.Take())
		}
	}
	if a.Steps() > 0 {
		ring.Add(a.Take())
	}
	return ring
}

// A Baseline fed a run's aggregates has about the means of one fed its
// steps.
func TestAggregateBaseline(t *testing.T) {
	recs := plant(2000, 5)
	rawBase, aggBase := NewBaseline(plantNames), NewBaseline(plantNames)
	for i := range recs {
		rawBase.Add(&recs[i])
	}
	aggregated(recs).Each(aggBase.AddAggregate)
	whole := int((recs[len(recs)-1].EndNs - rawBase.AnchorNs()) / 1e9)
	rb, ab := rawBase.Means(whole), aggBase.Means(whole)
	if rb.Steps == 0 || ab.Steps == 0 || math.Abs(ab.WallMean-rb.WallMean) > 0.02*rb.WallMean {
		t.Errorf("baseline from aggregates %d steps, wall mean %v; from steps %d, %v", ab.Steps, ab.WallMean, rb.Steps, rb.WallMean)
	}
}

// BenchmarkBaseline is what a viewer attached to 64 ranks spends on the
// drift baseline in its first minutes: every step of every rank added
// (7 stages, CPU times only, 100 steps/s a rank, interleaved as they
// arrive) and each rank's means taken once per three seconds.
func BenchmarkBaseline(b *testing.B) {
	names := []string{stage.DataWait, stage.H2D, stage.Forward, stage.Backward, stage.Comm, stage.Optim, stage.Other}
	const ranks = 64
	bases := make([]*Baseline, ranks)
	for k := range bases {
		bases[k] = NewBaseline(names)
	}
	at := int64(1e18)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := i % ranks
		step := int64(i / ranks)
		end := at + (step+1)*10e6
		r := stage.RecordOf(step, end-10e6, end, 64, []int64{1e6, 2e5, 3e6, 4e6, 5e5, 6e5, 7e4}, nil)
		bases[k].Add(&r)
		if step%300 == 0 {
			bases[k].Means(int(step / 300))
		}
		i = (i + 1) % (ranks * 12000) // the first two minutes, over and over
	}
}
