// Package bisecttest makes bisect reports for tests. The figures are made
// up (CONSTRUCTED, not measured: the host is named so); the code that
// judges, writes, reads, compares and reports them is real.
package bisecttest

import (
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
)

// Hostile is a string a page must show as text, never as markup.
const Hostile = `<script>alert("pwned")</script>`

// Host is the constructed reports' host.
const Host = "constructed-in-a-test"

// Constructed is a constructed bisect report of all four phases: loader
// ok (4 workers 90 % busy, read amplification 3.2x from one Zarr array,
// a hostile note),
// cached skipped, forward failed (exit status 1, a hostile stderr), full
// ok at fullRate samples/s over two ranks (rank 1 a straggler); the
// command holds Hostile too. Its verdict is verdict.DiagnoseBisect's.
func Constructed(fullRate float64) bisect.Report {
	exit, waiting := 1, 2.5
	phases := []verdict.PhaseResult{
		{Name: verdict.PhaseLoader, Batch: 64, Steps: 400, Seconds: 20, StepsPerSec: 20, SamplesPerSec: 1280, Status: verdict.PhaseOK,
			Summary: summary(400, map[string]float64{stage.DataWait: 0.95, stage.Other: 0.05}, false),
			Loader: &stage.LoaderStats{Workers: 4, Batch: 64, SamplesPerSec: 1280, WorkerBusy: 0.9, ReadAmp: 3.2,
				Zarr: []stage.ZarrArray{{Store: "/data/run.zarr", Path: "data/camera0", Shape: []int{4000, 32, 32, 3}, Chunks: []int{4, 32, 32, 3},
					DType: "uint8", ItemSize: 1, ZarrFormat: 2, Calls: 1000, BytesReturned: 1000 * 3072, BytesDecoded: 3200 * 3072, ReadAmp: 3.2}}},
			Notes: []string{"a loader note " + Hostile}, Waiting: &waiting},
		{Name: verdict.PhaseCached, Status: verdict.PhaseSkipped, Notes: []string{"no DataLoader was seen " + Hostile}},
		{Name: verdict.PhaseForward, Status: verdict.PhaseFailed, ExitStatus: &exit,
			StderrTail: "Traceback (most recent call last):\n  RuntimeError: CUDA out of memory " + Hostile},
		fullPhase(fullRate),
	}
	return bisect.Report{Schema: bisect.Schema, Command: []string{"python3", "train.py", "--tag=" + Hostile}, Host: Host,
		Started: time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC), SecondsPerPhase: 20, Phases: phases,
		Verdict: verdict.DiagnoseBisect(phases)}
}

// fullPhase is the full phase at rate samples/s (batch 64), two ranks of
// half of it each.
func fullPhase(rate float64) verdict.PhaseResult {
	shares := map[string]float64{stage.DataWait: 0.4, stage.H2D: 0.05, stage.Forward: 0.2, stage.Backward: 0.25, stage.Optim: 0.05, stage.Other: 0.05}
	steps := rate / 64
	straggler := verdict.Verdict{Kind: verdict.Straggler, Headline: "rank 1 holds the others back " + Hostile, Next: "look at rank 1"}
	p := verdict.PhaseResult{Name: verdict.PhaseFull, Batch: 64, Steps: int64(20 * steps), Seconds: 20, StepsPerSec: steps,
		SamplesPerSec: rate, Status: verdict.PhaseOK, Summary: summary(int(20*steps), shares, true)}
	for rank := range 2 {
		p.Ranks = append(p.Ranks, verdict.RankPhase{Rank: rank, PID: 100 + rank, Steps: p.Steps, StepsPerSec: steps,
			SamplesPerSec: rate / 2, Summary: p.Summary})
	}
	p.Ranks[1].Verdict = &straggler
	return p
}

// summary is a summary of steps with the stages' shares of a 50 ms step,
// in stage.Canonical's order, and 60 % GPU busy when gpu.
func summary(steps int, shares map[string]float64, gpu bool) stage.Summary {
	const wall = 50e6
	s := stage.Summary{Steps: steps, WallMean: wall, WallP50: wall, WallP99: 1.5 * wall, StepsPerSec: 1e9 / wall, SamplesPerSec: 64e9 / wall}
	for _, name := range stage.Canonical {
		if sh, ok := shares[name]; ok {
			s.Stages = append(s.Stages, stage.StageStat{Name: name, Mean: sh * wall, P50: sh * wall, P99: 1.5 * sh * wall, Share: sh})
		}
	}
	if gpu {
		s.HasGPU, s.GPUBusy, s.GPUBusyMean = true, 0.6, 0.6*wall
	}
	return s
}
