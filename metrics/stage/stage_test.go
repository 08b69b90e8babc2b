package stage

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestTimerStagesAddUpToWall(t *testing.T) {
	tm, err := NewTimer([]string{DataWait, Forward})
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.Names(); len(got) != 3 || got[2] != Other {
		t.Fatalf("names = %v, want Other appended", got)
	}
	tm.StartStep(5)
	sp := tm.Begin(0)
	time.Sleep(2 * time.Millisecond)
	sp.End()
	time.Sleep(time.Millisecond) // untimed: lands in other
	sp = tm.Begin(1)
	time.Sleep(3 * time.Millisecond)
	sp.End()
	r := tm.EndStep(8, 0.5, true)
	var sum int64
	for i := 0; i < r.NumStages; i++ {
		sum += r.CPU[i]
	}
	if sum != r.WallNs() {
		t.Fatalf("stages sum %d != wall %d", sum, r.WallNs())
	}
	if r.CPU[0] < 2e6 || r.CPU[1] < 3e6 || r.CPU[2] < 1e6 {
		t.Fatalf("stage times %v", r.CPU[:3])
	}
	if r.Step != 5 || r.Samples != 8 || !r.HasLoss {
		t.Fatalf("record %+v", r)
	}
	if r.HasGPU() {
		t.Fatal("GPU times should be unknown")
	}
}

func TestNewTimerErrors(t *testing.T) {
	for _, names := range [][]string{{"a", "a"}, {""}, make([]string, MaxStages+1)} {
		if len(names) == MaxStages+1 {
			for i := range names {
				names[i] = string(rune('a' + i))
			}
		}
		if _, err := NewTimer(names); err == nil {
			t.Errorf("NewTimer(%v) accepted", names)
		}
	}
}

func TestSpanAllocatesNothing(t *testing.T) {
	tm, _ := NewTimer(Canonical)
	fwd := slices.Index(tm.Names(), Forward)
	allocs := testing.AllocsPerRun(1000, func() {
		tm.StartStep(1)
		tm.Begin(fwd).End()
		tm.EndStep(1, 0, false)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per step", allocs)
	}
}

// plantedWith summarizes n steps of the canonical stages and of any custom
// ones in stages (before other), each stage taking stages[name] ms; forward
// also takes gpuFwdMs ms on the GPU when that is above 0.
func plantedWith(n int, stages map[string]float64, gpuFwdMs float64) Summary {
	names := append([]string(nil), Canonical[:len(Canonical)-1]...)
	for name := range stages {
		if !IsKnown(name) {
			names = append(names, name)
		}
	}
	names = append(names, Other)
	w := NewStepRing(names, 1024)
	var t0 int64
	for i := 0; i < n; i++ {
		r := Record{Step: int64(i), NumStages: len(names), Samples: 64}
		r.ClearGPU()
		var sum int64
		for k, name := range names {
			r.CPU[k] = int64(stages[name] * 1e6)
			sum += r.CPU[k]
			if gpuFwdMs > 0 {
				r.GPU[k] = 0
				if name == Forward {
					r.GPU[k] = int64(gpuFwdMs * 1e6)
				}
			}
		}
		r.StartNs, r.EndNs = t0, t0+sum
		t0 = r.EndNs
		w.Add(&r)
	}
	return w.Summarize(0)
}

func TestSummarize(t *testing.T) {
	s := plantedWith(100, map[string]float64{DataWait: 6, Forward: 3, Other: 1}, 0)
	if s.Steps != 100 || s.WallMean != 10e6 {
		t.Fatalf("steps %d wall %v", s.Steps, s.WallMean)
	}
	if got := s.StepsPerSec; got < 99.9 || got > 100.1 {
		t.Fatalf("steps/s %v", got)
	}
	if got := s.SamplesPerSec; got < 6399 || got > 6401 {
		t.Fatalf("samples/s %v", got)
	}
	if st := s.Stage(DataWait); st.Share != 0.6 || st.P50 != 6e6 || st.P99 != 6e6 {
		t.Fatalf("data_wait %+v", st)
	}
	if s.HasGPU {
		t.Fatal("no GPU times planted")
	}
}

// TestCommGPUTimeIsNotBusy: a DDP rank's stream waiting for the others'
// reductions (comm's GPU time) is shown as comm's, and is not GPU busy: a
// rank that waits for a straggler is not gpu-bound.
func TestCommGPUTimeIsNotBusy(t *testing.T) {
	w := NewStepRing([]string{Forward, Backward, Comm, Other}, 10)
	for i := range 10 {
		r := RecordOf(int64(i), int64(i)*10e6, int64(i+1)*10e6, 1, []int64{2e6, 2e6, 6e6, 0}, []int64{2e6, 2e6, 6e6, -1})
		w.Add(&r)
	}
	s := w.Summarize(0)
	if got := s.Stage(Comm); !got.HasGPU || got.GPUMean != 6e6 {
		t.Fatalf("comm %+v: want its GPU time, 6 ms", got)
	}
	if s.GPUBusyMean != 4e6 || s.GPUBusy != 0.4 {
		t.Fatalf("GPU busy %v ns (%v): want forward and backward only, 4 ms of 10", s.GPUBusyMean, s.GPUBusy)
	}
	if !w.UpdateGPU(9, []int64{1e6, 1e6, 8e6, -1}) {
		t.Fatal("UpdateGPU: step 9 not found")
	}
	if s = w.Summarize(0); s.GPUBusyMean != 3.8e6 {
		t.Fatalf("GPU busy after an update %v ns, want 3.8 ms", s.GPUBusyMean)
	}
}

func TestWindowRingAndDuration(t *testing.T) {
	w := NewStepRing([]string{Forward, Other}, 10)
	for i := 0; i < 25; i++ {
		r := Record{Step: int64(i), StartNs: int64(i) * 1e9, EndNs: int64(i)*1e9 + int64(i+1)*1e6, NumStages: 2}
		r.ClearGPU()
		r.CPU[0] = int64(i+1) * 1e6
		w.Add(&r)
	}
	if last, _ := w.Last(); w.Len() != 10 || last.Step != 24 {
		t.Fatalf("len %d last %d", w.Len(), last.Step)
	}
	s := w.Summarize(0)
	if s.Steps != 10 || s.Stage(Forward).P99 != 25e6 || s.Stage(Forward).P50 != 20e6 {
		t.Fatalf("%+v", s.Stage(Forward))
	}
	s = w.Summarize(3 * time.Second)
	if s.Steps != 3 {
		t.Fatalf("3 s window holds %d steps", s.Steps)
	}
	if !w.UpdateGPU(24, []int64{5, 0}) || gpuMean(w) != 5 {
		t.Fatal("UpdateGPU")
	}
}

func TestSelectKthMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Small ranges, and large ones where the selection samples first;
	// values with many duplicates, distinct ones, and sorted, reversed and
	// constant input.
	sizes := []int{601, 602, 1000, 4999, 5000, 20000}
	for n := 1; n < 200; n++ {
		sizes = append(sizes, n)
	}
	inputs := map[string]func(n int) []float64{
		"duplicates": func(n int) []float64 { return fill(n, func(int) float64 { return float64(rng.IntN(10)) }) },
		"distinct":   func(n int) []float64 { return fill(n, func(int) float64 { return rng.Float64() * 1e7 }) },
		"sorted":     func(n int) []float64 { return fill(n, func(i int) float64 { return float64(i) }) },
		"reversed":   func(n int) []float64 { return fill(n, func(i int) float64 { return float64(n - i) }) },
		"constant":   func(n int) []float64 { return fill(n, func(int) float64 { return 5e5 }) },
	}
	for name, gen := range inputs {
		for _, n := range sizes {
			v := gen(n)
			sorted := slices.Clone(v)
			slices.Sort(sorted)
			for _, q := range []float64{0, 0.1, 0.5, 0.99, 1} {
				k := rank(n, q)
				w := slices.Clone(v)
				if got := selectKth(w, k); got != sorted[k] {
					t.Fatalf("%s n=%d q=%v: selectKth %v, sort says %v", name, n, q, got, sorted[k])
				}
				if slices.Max(w[:k+1]) != w[k] || slices.Min(w[k:]) != w[k] {
					t.Fatalf("%s n=%d q=%v: not partitioned around v[%d]", name, n, q, k)
				}
			}
		}
	}
}

// fill returns n values made by f.
func fill(n int, f func(i int) float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

func TestRank(t *testing.T) {
	for _, tc := range []struct {
		n    int
		q    float64
		want int
	}{{10, 0.5, 4}, {10, 0.99, 9}, {10, 0, 0}, {10, 0.11, 1}, {1, 0.99, 0}, {100, 0.99, 98}} {
		if got := rank(tc.n, tc.q); got != tc.want {
			t.Errorf("rank(%d, %v) = %d, want %d", tc.n, tc.q, got, tc.want)
		}
	}
}

func BenchmarkSpan(b *testing.B) {
	tm, _ := NewTimer(Canonical)
	fwd := slices.Index(tm.Names(), Forward)
	tm.StartStep(0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tm.Begin(fwd).End()
	}
}

func BenchmarkStep(b *testing.B) {
	tm, _ := NewTimer(Canonical)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tm.StartStep(int64(i))
		for k := 0; k < 6; k++ {
			tm.Begin(k).End()
		}
		tm.EndStep(64, 0, false)
	}
}

func BenchmarkSummarize(b *testing.B) {
	w := NewStepRing(Canonical, 1000)
	r := Record{NumStages: len(Canonical)}
	for i := 0; i < 1000; i++ {
		r.Step, r.StartNs, r.EndNs = int64(i), int64(i)*1e6, int64(i+1)*1e6
		w.Add(&r)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Summarize(0)
	}
}

// BenchmarkSummarizeRefresh is a viewer's refresh at 1,000 steps/s: the
// last 5 s of a two-minute ring of varied records. With cold, the caches are
// flushed before each call, as they are after a second of other work.
func BenchmarkSummarizeRefresh(b *testing.B) {
	for _, cold := range []bool{false, true} {
		b.Run(map[bool]string{false: "hot", true: "cold"}[cold], func(b *testing.B) {
			w := NewStepRing(Canonical, 120000)
			rng := rand.New(rand.NewPCG(1, 2))
			cpu := make([]int64, len(Canonical))
			for i := range int64(130000) {
				for k := range cpu {
					cpu[k] = rng.Int64N(1e6)
				}
				r := RecordOf(i, i*1e6, (i+1)*1e6, 64, cpu, nil)
				w.Add(&r)
			}
			junk := make([]byte, 64<<20)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if cold {
					b.StopTimer()
					for j := 0; j < len(junk); j += 64 {
						junk[j]++
					}
					b.StartTimer()
				}
				w.Summarize(5e9)
			}
		})
	}
}

func gpuMean(w *StepRing) float64 {
	s := w.Summarize(0)
	return s.Stage(Forward).GPUMean
}

// A ring that has wrapped summarizes its records exactly as a ring that
// holds the same records without wrapping, whether it was full at its
// first growth (40) or grew several times before (1,000: 256, 512, 1,000).
func TestWrappedRingSummarizesLikeAFreshOne(t *testing.T) {
	for _, capacity := range []int{40, 1000} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) { testWrappedRing(t, capacity) })
	}
}

func testWrappedRing(t *testing.T, capacity int) {
	names := []string{DataWait, "forward", "other"}
	rec := func(i int64) Record {
		gpu := []int64{-1, 1000 + i*i%97, -1}
		if i%3 == 0 {
			gpu[1] = -1
		}
		return RecordOf(i, i*1e6, i*1e6+9e5, 8, []int64{i * 37 % 1000, 500 + i%7, 10}, gpu)
	}
	wrapped, fresh := NewStepRing(names, capacity), NewStepRing(names, capacity)
	total := int64(3*capacity + 17)
	for i := range total {
		r := rec(i)
		wrapped.Add(&r)
	}
	for i := total - int64(capacity); i < total; i++ {
		r := rec(i)
		fresh.Add(&r)
	}
	if wrapped.Len() != capacity || wrapped.Cap() != capacity || len(wrapped.steps) != capacity {
		t.Fatalf("wrapped ring holds %d of %d (%d slots)", wrapped.Len(), wrapped.Cap(), len(wrapped.steps))
	}
	for _, d := range []time.Duration{0, 15 * time.Millisecond, time.Hour} {
		a, b := wrapped.Summarize(d), fresh.Summarize(d)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("window %v: wrapped ring gave %+v, fresh ring %+v", d, a, b)
		}
		if a.Steps == 0 || !a.HasGPU {
			t.Fatalf("window %v: %d steps, GPU %v: the test data should have both", d, a.Steps, a.HasGPU)
		}
	}
}

// A ring reserved part way through keeps its records, adds the rest
// without allocating and summarizes as a ring that grew step by step.
func TestReservedRingAddsWithoutAllocating(t *testing.T) {
	names := []string{DataWait, "forward"}
	rec := func(i int64) Record {
		return RecordOf(i, i*1e6, i*1e6+9e5, 8, []int64{i * 37 % 1000, 500 + i%7}, []int64{-1, 1000 + i%97})
	}
	reserved, grown := NewStepRing(names, 1000), NewStepRing(names, 1000)
	var i int64
	add := func() {
		r := rec(i)
		reserved.Add(&r)
		grown.Add(&r)
		i++
	}
	for range 300 {
		add()
	}
	reserved.Reserve()
	if allocs := testing.AllocsPerRun(1500, func() {
		r := rec(i)
		reserved.Add(&r)
		i++
	}); allocs != 0 {
		t.Fatalf("a reserved ring allocates %v times per record", allocs)
	}
	for j := i - 1000; j < i; j++ {
		r := rec(j)
		grown.Add(&r)
	}
	if a, b := reserved.Summarize(0), grown.Summarize(0); !reflect.DeepEqual(a, b) {
		t.Fatalf("reserved ring summarizes as\n%+v\nnot as\n%+v", a, b)
	}
}

func TestTimerProgress(t *testing.T) {
	tm, err := NewTimer([]string{DataWait, Forward})
	if err != nil {
		t.Fatal(err)
	}
	if p := tm.Progress(); p.Step != -1 || p.Stage != "" {
		t.Fatalf("before the first step: %+v", p)
	}
	tm.StartStep(7)
	sp := tm.Begin(0)
	p := tm.Progress()
	if p.Step != 7 || p.Stage != DataWait || p.SinceNs < p.StepStartNs || p.SinceNs > p.TimeNs {
		t.Fatalf("in data_wait: %+v", p)
	}
	sp.End()
	if p := tm.Progress(); p.Stage != Other {
		t.Fatalf("between spans: %+v", p)
	}
	tm.EndStep(8, 0, false)
	if p := tm.Progress(); p.Done != 1 || p.Stage != Other {
		t.Fatalf("after the step: %+v", p)
	}
}

// Prepend puts older records before those held, each step once, in order,
// the oldest going when the ring cannot hold them all.
func TestStepRingPrepend(t *testing.T) {
	names := []string{DataWait, Other}
	rec := func(step int64) Record {
		return RecordOf(step, step*10, step*10+9, 1, []int64{step, 1}, nil)
	}
	for _, c := range []struct {
		capacity int
		want     []int64
	}{{8, []int64{14, 15, 16, 17, 18, 19, 20, 21}}, {6, []int64{16, 17, 18, 19, 20, 21}}, {16, []int64{14, 15, 16, 17, 18, 19, 20, 21}}} {
		w := NewStepRing(names, c.capacity)
		for _, s := range []int64{20, 21} {
			r := rec(s)
			w.Add(&r)
		}
		var older []Record
		for s := int64(14); s <= 20; s++ { // 20 came already
			older = append(older, rec(s))
		}
		w.Prepend(older)
		var got []int64
		for i := range w.Len() {
			r := w.at(i)
			got = append(got, r.Step)
			if r.CPU[0] != r.Step {
				t.Errorf("capacity %d: step %d has data_wait %d, want its own", c.capacity, r.Step, r.CPU[0])
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("capacity %d: after Prepend %v, want %v", c.capacity, got, c.want)
		}
	}
}
