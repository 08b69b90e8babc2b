package stage

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func rec(samples int32, cpu []int64, gpu []int64) Record {
	var wall int64
	for _, c := range cpu {
		wall += c
	}
	return RecordOf(0, 1000, 1000+wall, samples, cpu, gpu)
}

func TestTotalsAdd(t *testing.T) {
	tot := NewTotals([]string{DataWait, Forward, Other})
	r1 := rec(8, []int64{3e6, 2e6, 1e6}, []int64{-1, 1_500_000, -1})
	r2 := rec(8, []int64{5e6, 2e6, 1e6}, nil)
	tot.Add(&r1)
	tot.Add(&r2)
	if tot.Steps != 2 || tot.Samples != 16 {
		t.Errorf("steps %d samples %d, want 2 and 16", tot.Steps, tot.Samples)
	}
	want := []StageTotal{{DataWait, 8e6, 0, false}, {Forward, 4e6, 1_500_000, true}, {Other, 2e6, 0, false}}
	if fmt.Sprint(tot.Stages) != fmt.Sprint(want) {
		t.Errorf("stages %v, want %v", tot.Stages, want)
	}
	if tot.Wall.Count != 2 || tot.Wall.SumNs != 14e6 || !tot.HasDataWait || tot.DataWait.SumNs != 8e6 {
		t.Errorf("wall %d/%d data_wait %v %d", tot.Wall.Count, tot.Wall.SumNs, tot.HasDataWait, tot.DataWait.SumNs)
	}
}

// TestTotalsNewStageList checks that a new stage list from the same
// process keeps every stage's total, maps by name and drops data_wait's
// histogram input when the stage goes away.
func TestTotalsNewStageList(t *testing.T) {
	tot := NewTotals([]string{DataWait, Forward})
	r := rec(1, []int64{1e6, 2e6}, nil)
	tot.Add(&r)
	tot.SetStages([]string{Forward, "eval"})
	r = rec(1, []int64{4e6, 7e6}, nil)
	tot.Add(&r)
	got := fmt.Sprint(tot.Stages)
	if want := fmt.Sprint([]StageTotal{{DataWait, 1e6, 0, false}, {Forward, 6e6, 0, false}, {"eval", 7e6, 0, false}}); got != want {
		t.Errorf("stages %s, want %s", got, want)
	}
	if tot.DataWait.Count != 1 || !tot.HasDataWait {
		t.Errorf("data_wait histogram counted %d, want 1 (only while the stage existed)", tot.DataWait.Count)
	}
}

// TestTotalsBoundedNames feeds more stage names than MaxTotalStages: the
// surplus is counted under other, and no time is lost.
func TestTotalsBoundedNames(t *testing.T) {
	tot := NewTotals(nil)
	for i := range 3 * MaxTotalStages {
		tot.SetStages([]string{fmt.Sprintf("s%d", i)})
		r := rec(1, []int64{1}, nil)
		tot.Add(&r)
	}
	if len(tot.Stages) != MaxTotalStages {
		t.Fatalf("%d stage totals, want %d", len(tot.Stages), MaxTotalStages)
	}
	var sum int64
	for _, s := range tot.Stages {
		sum += s.CPUNs
	}
	if last := tot.Stages[len(tot.Stages)-1]; last.Name != Other || sum != 3*MaxTotalStages {
		t.Errorf("last stage %+v, summed cpu %d, want other and %d", last, sum, 3*MaxTotalStages)
	}
}

func TestClassicBuckets(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int
	}{
		{0, 0},
		{100 * time.Microsecond, 0}, // upper bounds are inclusive
		{101 * time.Microsecond, 1},
		{25 * time.Millisecond, 12}, // (20ms, 30ms]
		{60 * time.Second, len(StepBounds) - 1},
		{time.Hour, len(StepBounds)}, // +Inf
	}
	for _, tt := range tests {
		if got := ClassicBucket(tt.d); got != tt.want {
			t.Errorf("ClassicBucket(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
	for i := 1; i < len(StepBounds); i++ {
		if StepBounds[i] <= StepBounds[i-1] {
			t.Errorf("StepBounds not increasing at %d", i)
		}
	}
}

// TestNativeIndex checks the bucket of each value against the definition:
// bucket i holds (2^((i-1)/8), 2^(i/8)].
func TestNativeIndex(t *testing.T) {
	values := []float64{1, 0.5, 2, 1.05, 0.0123, 3.7, 1e-5, 1e-6, 59.9, 1234}
	for k := range 8 { // every bound within a power of two, and next to it
		b := math.Exp2(float64(k) / 8)
		values = append(values, b, math.Nextafter(b, 2), math.Nextafter(b, 0))
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10000 {
		values = append(values, math.Exp2(-19+31*rng.Float64()))
	}
	for _, s := range values {
		i := NativeIndex(s)
		lo, hi := math.Exp2(float64(i-1)/8), math.Exp2(float64(i)/8)
		if !(s > lo*(1-1e-12) && s <= hi*(1+1e-12)) {
			t.Errorf("NativeIndex(%g) = %d: bucket (%g, %g]", s, i, lo, hi)
		}
	}
	if NativeIndex(1) != 0 || NativeIndex(2) != 8 || NativeIndex(0.5) != -8 {
		t.Errorf("powers of two: %d %d %d, want 0 8 -8", NativeIndex(1), NativeIndex(2), NativeIndex(0.5))
	}
	if NativeIndex(1e9) != NativeMaxIndex || NativeIndex(1e-300) != NativeMinIndex {
		t.Error("out-of-range values are not clamped")
	}
}

func TestHistogramObserve(t *testing.T) {
	var h Histogram
	for _, ns := range []int64{-5, 0, 500, 2e6, 2e6, 90e9} {
		h.Observe(ns)
	}
	if h.Count != 6 || h.SumNs != 90e9+4e6+500 {
		t.Errorf("count %d sum %d", h.Count, h.SumNs)
	}
	if h.Zero != 3 { // -5 (as 0), 0 and 500 ns are below 2^-20 s
		t.Errorf("zero bucket %d, want 3", h.Zero)
	}
	var native uint64
	for _, c := range h.Native {
		native += c
	}
	var classic uint64
	for _, c := range h.Classic {
		classic += c
	}
	if native+h.Zero != h.Count || classic != h.Count || h.Classic[len(StepBounds)] != 1 {
		t.Errorf("native %d + zero %d, classic %d (+Inf %d), want %d", native, h.Zero, classic, h.Classic[len(StepBounds)], h.Count)
	}
	if h.Native[NativeIndex(0.002)-NativeMinIndex] != 2 {
		t.Error("2 ms not counted in its native bucket")
	}
}

// BenchmarkTotalsAdd is the per-step cost the viewer pays for the
// exporter's counters and histograms (the trainer pays nothing).
func BenchmarkTotalsAdd(b *testing.B) {
	tot := NewTotals(Canonical)
	r := rec(64, []int64{6e6, 5e5, 2e6, 1e6, 4e5, 1e5, 2e5}, []int64{-1, 4e5, 1.8e6, 9e5, 3e5, -1, -1})
	b.ReportAllocs()
	for b.Loop() {
		tot.Add(&r)
	}
}
