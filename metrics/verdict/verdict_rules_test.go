package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

const ms1 = int64(1e6)

// run builds a window of n steps of the canonical stages, back to back from
// t0, whose CPU times per stage come from times(step).
func run(t0 int64, n int, times func(step int) map[string]int64) *stage.StepRing {
	w := stage.NewStepRing(stage.Canonical, 4096)
	for i := 0; i < n; i++ {
		r := stage.Record{Step: int64(i), NumStages: len(stage.Canonical), Samples: 8}
		r.ClearGPU()
		var sum int64
		m := times(i)
		for k, name := range stage.Canonical {
			r.CPU[k] = m[name]
			sum += m[name]
		}
		r.StartNs, r.EndNs = t0, t0+sum
		t0 = r.EndNs
		w.Add(&r)
	}
	return w
}

func steadyTimes(wait int64) func(int) map[string]int64 {
	return func(int) map[string]int64 {
		return map[string]int64{stage.DataWait: wait, stage.Forward: 5 * ms1, stage.Backward: 4 * ms1, stage.Optim: ms1}
	}
}

func periodicTimes(every int, spike int64) func(int) map[string]int64 {
	return func(i int) map[string]int64 {
		m := steadyTimes(ms1)(i)
		if i%every == every-1 {
			m[stage.DataWait] = spike
		}
		return m
	}
}

func TestJudgeRules(t *testing.T) {
	const start = int64(1e18)
	slowStartLoader := &stage.LoaderStats{TimeNs: start + 14e9, Workers: 2, ReadAmp: 1100, BytesDecoded: 15.4e9, WorkerBusy: 1}
	periodic := run(start, 200, periodicTimes(20, 250*ms1))
	steady := run(start, 200, steadyTimes(8*ms1))
	healthy := run(start, 200, steadyTimes(ms1/2))
	few := run(start, 2, func(int) map[string]int64 { return map[string]int64{stage.DataWait: 3e9, stage.Forward: 50 * ms1} })
	end := func(w *stage.StepRing) int64 { last, _ := w.Last(); return last.EndNs }
	drifted := run(start, 1000, func(i int) map[string]int64 {
		m := steadyTimes(ms1)(i)
		if i >= 600 {
			m[stage.DataWait] = 6 * ms1
		}
		return m
	})
	waiting := stage.NewStepRing(stage.MultiRank, 64) // a fast rank of a run with a straggler
	for i := range int64(50) {
		r := stage.RecordOf(i, start+i*100*ms1, start+(i+1)*100*ms1, 8, []int64{5 * ms1, 0, 15 * ms1, 10 * ms1, 70 * ms1, 0, 0, 0}, nil)
		waiting.Add(&r)
	}
	resumed := stage.NewStepRing(stage.MultiRank, 256) // 12 s stuck in comm, then steps again
	at := start
	for i := range int64(121) {
		comm := ms1
		if i == 100 {
			comm = 12e9
		}
		r := stage.RecordOf(i, at, at+9*ms1+comm, 8, []int64{ms1, 0, 4 * ms1, 4 * ms1, comm, 0, 0, 0}, nil)
		at = r.EndNs
		resumed.Add(&r)
	}
	baseline := drifted.SummarizeBetween(BaselineSkip, 0, start+int64(500*11*ms1))
	recent := drifted.Summarize(1e9)
	for _, tc := range []struct {
		name     string
		in       Inputs
		want     Kind
		stage    string
		contains []string
	}{
		{"starting in data_wait names the loader", Inputs{NowNs: start + 14e9, Live: true, StartNs: start, Loader: slowStartLoader,
			Progress: &stage.Progress{Step: 0, StepStartNs: start + 1e9, Stage: stage.DataWait, SinceNs: start + 1e9}},
			Starting, stage.DataWait, []string{"no step yet after 14 s", "in data_wait for 13 s", "1.0 GiB/s", "1100x", "rechunk"}},
		{"starting before the first step", Inputs{NowNs: start + 3e9, Live: true, StartNs: start, Progress: &stage.Progress{Step: -1}},
			Starting, "", []string{"has not begun a step"}},
		{"no steps and no progress", Inputs{NowNs: start + 3e9, Live: true, StartNs: start},
			WarmingUp, "", []string{"no step yet after 3.0 s"}},
		{"few slow steps are judged by time", Inputs{Summary: few.Summarize(0), NowNs: end(few) + 2e9, Live: true,
			Progress: &stage.Progress{Step: 2, Done: 2, StepStartNs: end(few), Stage: stage.DataWait, SinceNs: end(few)}},
			InputBound, stage.DataWait, []string{"input-bound", "of each step"}},
		{"a finished measurement of 3 steps is judged", Inputs{Summary: plantedWith(3, map[string]float64{stage.DataWait: 90, stage.Forward: 10}, 0), Complete: true},
			InputBound, stage.DataWait, []string{"90 %"}},
		{"stalled in comm", Inputs{Summary: healthy.Summarize(0), NowNs: end(healthy) + 6e9, Live: true,
			Progress: &stage.Progress{Step: 200, Done: 200, Stage: "comm", SinceNs: end(healthy) + 1e6}},
			Stalled, "comm", []string{"no step for 6.0 s", "stuck in comm", "rank"}},
		{"attached to a hung trainer", Inputs{NowNs: start + 20e9, Live: true, StartNs: start,
			Progress: &stage.Progress{Step: 30, Done: 30, StepStartNs: start + 10e9, Stage: "comm", SinceNs: start + 10e9}},
			Stalled, "comm", []string{"step 30 has run for 10 s", "stuck in comm"}},
		{"attached mid-step", Inputs{NowNs: start + 20e9, Live: true, StartNs: start,
			Progress: &stage.Progress{Step: 30, Done: 30, StepStartNs: start + 19e9, Stage: stage.Forward, SinceNs: start + 19e9}},
			WarmingUp, stage.Forward, []string{"attached after 30 steps"}},
		{"stall without progress", Inputs{Summary: healthy.Summarize(0), NowNs: end(healthy) + 8e9, Live: true},
			Stalled, "", []string{"stacks"}},
		{"a short pause is not a stall", Inputs{Summary: healthy.Summarize(0), NowNs: end(healthy) + 2e9, Live: true},
			ComputeBound, stage.Forward, []string{"the input keeps up"}},
		{"a dead trainer is not stalled", Inputs{Summary: healthy.Summarize(0), NowNs: end(healthy) + 60e9},
			ComputeBound, stage.Forward, []string{"the input keeps up"}},
		{"periodic waits", Inputs{Summary: periodic.Summarize(0)},
			InputStalls, stage.DataWait, []string{"every 20th step waits 250 ms", "the rest 1.0 ms", "prefetch", "every 20 steps"}},
		{"steady waits", Inputs{Summary: steady.Summarize(0)},
			InputBound, stage.DataWait, []string{"44 %"}},
		{"drift names the stage that grew", Inputs{Summary: recent, Baseline: &baseline},
			Drift, stage.DataWait, []string{"slower than in the run's first", "data_wait grew from 9 % to"}},
		{"GPU memory full", Inputs{Summary: healthy.Summarize(0), Live: true, Host: &Host{GPUMemUsed: 79 << 30, GPUMemTotal: 80 << 30}},
			MemoryFull, "", []string{"79.0 GiB of 80.0 GiB"}},
		{"swapping", Inputs{Summary: healthy.Summarize(0), Live: true, Host: &Host{MemUsed: 95, MemTotal: 100, SwapUsed: 1 << 30}},
			Swapping, "", []string{"1.0 GiB in swap"}},
		{"RSS creep", Inputs{Summary: healthy.Summarize(0), Live: true, Host: &Host{RSS: line(start, 20, 1e9, 1<<30, 50<<20)}},
			MemoryCreep, "", []string{"resident memory grew", "steadily"}},
		{"flat RSS is no creep", Inputs{Summary: healthy.Summarize(0), Live: true, Host: &Host{RSS: line(start, 20, 1e9, 1<<30, 0)}},
			ComputeBound, stage.Forward, []string{"the input keeps up"}},
		{"GPU idle by NVML without GPU timings", Inputs{Summary: run(start, 50, func(int) map[string]int64 {
			return map[string]int64{stage.Forward: 60 * ms1, stage.Backward: 30 * ms1, stage.Optim: 5 * ms1}
		}).Summarize(0), Host: &Host{GPUActivity: 0.2, GPUActivitySource: "kernel-active"}},
			LaunchBound, "", []string{"GPU is busy 20 %", "NVML kernel-active"}},
		{"GPU busy by GPM without GPU timings", Inputs{Summary: healthy.Summarize(0), Host: &Host{GPUActivity: 0.95, GPUActivitySource: "GPM"}},
			GPUBound, "", []string{"busy 95 %", "GPM"}},
		{"ranks waiting for each other", Inputs{Summary: waiting.Summarize(0)},
			StageBound, stage.Comm, []string{"comm-bound", "70 %", "slowest rank"}},
		{"a stall clears when steps resume", Inputs{Summary: resumed.Summarize(0), NowNs: end(resumed) + 20*ms1, Live: true,
			Progress: &stage.Progress{Step: 121, Done: 121, StepStartNs: end(resumed), Stage: stage.DataWait, SinceNs: end(resumed)}},
			StageBound, stage.Comm, []string{"comm-bound", "slowest rank"}},
		{"healthy stays calm", Inputs{Summary: healthy.Summarize(0), NowNs: end(healthy) + 1e8, Live: true, Baseline: &baseline},
			ComputeBound, stage.Forward, []string{"the input keeps up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.in)
			if v.Kind != tc.want || v.Stage != tc.stage {
				t.Fatalf("got %s/%q (%s), want %s/%q", v.Kind, v.Stage, v, tc.want, tc.stage)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
			if v.Next == "" {
				t.Error("no next step")
			}
		})
	}
}

// line is a series of n samples every step ns from v0 growing by dv each.
func line(t0 int64, n int, step int64, v0, dv float64) Series {
	var s Series
	for i := 0; i < n; i++ {
		s.Add(t0+int64(i)*step, v0+float64(i)*dv+float64(i%2)*dv/10)
	}
	return s
}
