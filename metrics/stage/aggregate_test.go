package stage

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func TestSketchBins(t *testing.T) {
	prev := -1
	for _, v := range []int64{0, 1, 127, 128, 129, 191, 255, 256, 1000, 2e6, 1e9, 1e12, math.MaxInt64} {
		i := SketchIndex(v)
		if i < prev {
			t.Errorf("index %d of %d below %d", i, v, prev)
		}
		prev = i
		if i > MaxSketchIndex {
			t.Errorf("index %d of %d above MaxSketchIndex %d", i, v, MaxSketchIndex)
		}
		if got := SketchValue(i); math.Abs(got-float64(v)) > float64(v)/128+0.5 {
			t.Errorf("value of bin %d (%d ns) = %v: more than 1/128 off", i, v, got)
		}
	}
	// Every bin's midpoint falls in that bin.
	for i := range MaxSketchIndex - 64 {
		if j := SketchIndex(int64(SketchValue(i))); j != i {
			t.Fatalf("midpoint %v of bin %d falls in bin %d", SketchValue(i), i, j)
		}
	}
}

// plant makes n records of a loader that spikes every period steps and a
// GPU that times forward.
func plant(n, period int) []Record {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]Record, n)
	t := int64(1_700_000_000e9)
	for i := range recs {
		wait := int64(300e3 + rng.IntN(200e3))
		if i%period == 0 {
			wait = int64(40e6 + rng.IntN(5e6))
		}
		fwd, bwd := int64(4e6+rng.IntN(1e6)), int64(6e6+rng.IntN(2e6))
		cpu := []int64{wait, fwd, bwd, int64(rng.IntN(50e3))}
		r := RecordOf(int64(i), t, t+cpu[0]+cpu[1]+cpu[2]+cpu[3], 64, cpu, []int64{-1, fwd - 1e5, bwd - 1e5, -1})
		if i%50 == 0 {
			r.HasLoss, r.Loss = true, float32(i)
		}
		recs[i] = r
		t = r.EndNs
	}
	return recs
}

var plantNames = []string{DataWait, Forward, Backward, Other}

// aggregated folds recs into aggregates of about a second each.
func aggregated(recs []Record) *AggRing {
	ring := NewAggRing(plantNames, 256)
	a := NewAggregator(plantNames)
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

func TestAggRingMatchesStepRing(t *testing.T) {
	recs := plant(3000, 7)
	raw := NewStepRing(plantNames, len(recs))
	for i := range recs {
		raw.Add(&recs[i])
	}
	ring := aggregated(recs)
	for _, a := range []*Aggregate{ring.at(0), ring.at(ring.Len() - 1)} {
		if err := a.Validate(); err != nil {
			t.Fatalf("aggregate: %v", err)
		}
	}
	want, got := raw.Summarize(0), ring.Summarize(0)
	near := func(what string, g, w float64, rel float64) {
		t.Helper()
		if math.Abs(g-w) > rel*math.Abs(w)+1e-9 {
			t.Errorf("%s = %v, raw steps say %v", what, g, w)
		}
	}
	if got.Steps != want.Steps || got.LastStep != want.LastStep || got.LastEndNs != want.LastEndNs || got.SpanNs != want.SpanNs {
		t.Errorf("head %+v, raw steps %+v", got, want)
	}
	near("wall mean", got.WallMean, want.WallMean, 1e-12)
	near("wall p50", got.WallP50, want.WallP50, 1.0/128)
	near("wall p99", got.WallP99, want.WallP99, 1.0/128)
	near("gpu busy", got.GPUBusy, want.GPUBusy, 1e-12)
	for k := range want.Stages {
		w, g := want.Stages[k], got.Stages[k]
		near(w.Name+" mean", g.Mean, w.Mean, 1e-12)
		near(w.Name+" p50", g.P50, w.P50, 1.0/128)
		near(w.Name+" p99", g.P99, w.P99, 1.0/128)
		near(w.Name+" gpu p99", g.GPUP99, w.GPUP99, 1.0/128)
		if g.HasGPU != w.HasGPU {
			t.Errorf("%s has gpu %v, raw %v", w.Name, g.HasGPU, w.HasGPU)
		}
	}
	if got.HasLoss != want.HasLoss || got.LastLoss != want.LastLoss {
		t.Errorf("loss %v %v, raw %v %v", got.HasLoss, got.LastLoss, want.HasLoss, want.LastLoss)
	}
	gw, ww := got.Waits, want.Waits
	if gw == nil || ww == nil || gw.Period != 7 || ww.Period != 7 || gw.Spikes != ww.Spikes || gw.Waiting != ww.Waiting {
		t.Fatalf("waits %+v, raw %+v", gw, ww)
	}
	near("spike share", gw.SpikeShare, ww.SpikeShare, 1e-12)
	if !gw.Bursty() {
		t.Errorf("planted spikes every 7 steps are not bursty: %+v", gw)
	}
	// A window of the last seconds.
	w5, g5 := raw.Summarize(5*time.Second), ring.Summarize(5*time.Second)
	if g5.Steps < w5.Steps || g5.Steps > w5.Steps+w5.Steps/4 {
		t.Errorf("5 s window: %d steps, raw %d", g5.Steps, w5.Steps)
	}
}

// A brief summary is the full one without the stages' quantiles and the
// wait pattern, for every window.
func TestAggRingBrief(t *testing.T) {
	ring := aggregated(plant(3000, 7))
	for _, d := range []time.Duration{0, 5 * time.Second, time.Nanosecond} {
		full, brief := ring.Summarize(d), ring.Brief(d)
		if brief.Waits != nil {
			t.Errorf("window %v: a brief summary with a wait pattern %+v", d, brief.Waits)
		}
		for k := range full.Stages {
			st := &full.Stages[k]
			if st.Mean <= 0 || st.P99 <= 0 || brief.Stages[k].P50 != 0 || brief.Stages[k].P99 != 0 || brief.Stages[k].GPUP99 != 0 {
				t.Errorf("window %v: stage %s full %+v, brief %+v", d, st.Name, *st, brief.Stages[k])
			}
			st.P50, st.P99, st.GPUP99 = 0, 0, 0
		}
		full.Waits = nil
		if !reflect.DeepEqual(full, brief) {
			t.Errorf("window %v:\nfull  %+v\nbrief %+v", d, full, brief)
		}
	}
}

// A ring of brief copies summarizes in brief as the aggregates do, a copy
// shares no memory with its aggregate, and only the copy is brief.
func TestAggregateBrief(t *testing.T) {
	ring := aggregated(plant(3000, 7))
	briefs := NewAggRing(plantNames, 256)
	ring.Each(func(g *Aggregate) { briefs.Add(g.Brief()) })
	for _, d := range []time.Duration{0, 5 * time.Second} {
		if a, b := ring.Brief(d), briefs.Brief(d); !reflect.DeepEqual(a, b) {
			t.Errorf("window %v: from the aggregates\n%+v\nfrom brief copies\n%+v", d, a, b)
		}
	}
	g := ring.at(0)
	b := g.Brief()
	if b.Waits != nil || b.Busy.Bins != nil || b.CPU[0].Bins != nil || b.CPU[0].N != g.CPU[0].N || len(b.Wall.Bins) == 0 {
		t.Fatalf("brief copy %+v", b)
	}
	if g.IsBrief() || !b.IsBrief() {
		t.Errorf("IsBrief: %v of the aggregate, %v of its brief copy", g.IsBrief(), b.IsBrief())
	}
	b.Wall.Bins[0]++
	b.CPU[0].N++
	b.Loss.Value++
	if b.Wall.Bins[0] == g.Wall.Bins[0] || b.CPU[0].N == g.CPU[0].N || b.Loss.Value == g.Loss.Value {
		t.Error("a brief copy shares memory with its aggregate")
	}
}

func TestAggregateTotals(t *testing.T) {
	recs := plant(2000, 5)
	raw, agg := NewTotals(plantNames), NewTotals(plantNames)
	for i := range recs {
		raw.Add(&recs[i])
	}
	ring := aggregated(recs)
	for i := range ring.Len() {
		agg.AddAggregate(ring.at(i))
	}
	if raw.Steps != agg.Steps || raw.Samples != agg.Samples || raw.LastStep != agg.LastStep || raw.Wall.SumNs != agg.Wall.SumNs ||
		raw.Wall.Count != agg.Wall.Count || raw.DataWait.SumNs != agg.DataWait.SumNs {
		t.Errorf("totals %+v, raw %+v", agg, raw)
	}
	for i := range raw.Stages {
		if raw.Stages[i] != agg.Stages[i] {
			t.Errorf("stage %+v, raw %+v", agg.Stages[i], raw.Stages[i])
		}
	}
	if raw.Wall.Classic != agg.Wall.Classic {
		t.Logf("classic buckets differ at bounds: %v vs %v", agg.Wall.Classic, raw.Wall.Classic)
	}
}

func TestAggregateValidate(t *testing.T) {
	a := NewAggregator(plantNames)
	recs := plant(20, 3)
	for i := range recs {
		a.Add(&recs[i])
	}
	good := a.Take()
	if err := good.Validate(); err != nil {
		t.Fatalf("good aggregate: %v", err)
	}
	for name, bad := range map[string]func(g *Aggregate){
		"no steps":      func(g *Aggregate) { g.Steps = 0 },
		"wall count":    func(g *Aggregate) { g.Wall.N++ },
		"bins order":    func(g *Aggregate) { g.CPU[1].Bins[0], g.CPU[1].Bins[2] = g.CPU[1].Bins[2], g.CPU[1].Bins[0] },
		"odd waits":     func(g *Aggregate) { g.Waits = g.Waits[:1] },
		"small wait":    func(g *Aggregate) { g.Waits[1] = 5 },
		"t1 before t0":  func(g *Aggregate) { g.EndNs = g.StartNs - 1 },
		"index too big": func(g *Aggregate) { g.Wall.Bins[len(g.Wall.Bins)-2] = MaxSketchIndex + 1 },
	} {
		g := good
		g.CPU = append([]Sketch(nil), good.CPU...)
		g.CPU[1].Bins = append([]int64(nil), good.CPU[1].Bins...)
		g.Wall.Bins = append([]int64(nil), good.Wall.Bins...)
		g.Waits = append([]int64(nil), good.Waits...)
		bad(&g)
		if err := g.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func BenchmarkAggregatorAdd(b *testing.B) {
	recs := plant(4096, 7)
	a := NewAggregator(plantNames)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		a.Add(&recs[i%len(recs)])
		if a.Steps() == 1000 {
			a.Take()
		}
	}
}

// BenchmarkAggRingSummarize is a 10 s window at 1,000 steps/s as
// aggregates, in full and in brief; BenchmarkSummarize's raw window is
// the full one's peer.
func BenchmarkAggRingSummarize(b *testing.B) {
	recs := plant(10000, 7)
	ring := aggregated(recs)
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ring.Summarize(0)
		}
	})
	b.Run("brief", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ring.Brief(0)
		}
	})
}
