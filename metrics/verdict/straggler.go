package verdict

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Thresholds of the straggler rule. docs/verdicts.md says why.
const (
	// StragglerGap: the slowest rank's step without comm exceeds the
	// median rank's by at least this share of the median rank's step.
	StragglerGap = 0.15
	// StragglerWait: the median rank spends at least this fraction of that
	// excess waiting in comm (it waits for the straggler, not for itself).
	StragglerWait = 0.5
)

// RankSummary is the window summary of one rank of a run, and what the
// viewer knows of it now (for the stopped-rank rule; zero when unknown).
type RankSummary struct {
	Rank    int
	Summary stage.Summary
	// PID and Host say where the rank runs; 0 and "" when unknown.
	PID  int
	Host string
	// Progress is the rank's latest progress frame; nil when none came.
	Progress *stage.Progress
	// HeardNs is when the viewer last received a frame from the rank
	// (Unix ns); 0 when unknown (a recording).
	HeardNs int64
	// Gone: the rank's connection closed (it exited or died).
	Gone bool
	// Missing: a rank of the run (below its world size) that never
	// answered with a hello.
	Missing bool
}

// rankTime is one rank's step split into comm and the rest.
type rankTime struct {
	*RankSummary         // a pointer: the ranks sort by work, and a summary is large
	comm, work   float64 // mean ns per step in comm-class stages, and outside them
}

// DiagnoseRanks applies the straggler rule to the ranks of one run: when
// one rank's step without comm is clearly slower than the median rank's
// (StragglerGap), in its typical step too (beyondNoise), and the median
// rank waits for about that difference in comm (StragglerWait), it names
// that rank and the stage where its extra
// time goes. ok is false when no rank stands out, when fewer than two ranks
// have MinSteps steps, or when the ranks publish no comm stage (the wait
// cannot be told from work then).
func DiagnoseRanks(ranks []RankSummary) (v Verdict, ok bool) {
	var rs []rankTime
	for i := range ranks {
		r := &ranks[i]
		s := r.Summary
		if s.Steps < MinSteps || s.WallMean <= 0 {
			continue
		}
		// On a GPU the wait is the stream's (NCCL's waits do not block
		// the CPU): the larger of the two is the rank's wait.
		comm := max(classMean(s, stage.ClassComm), classGPUMean(s, stage.ClassComm))
		rs = append(rs, rankTime{RankSummary: r, comm: comm, work: s.WallMean - comm})
	}
	if len(rs) < 2 {
		return Verdict{}, false
	}
	slices.SortStableFunc(rs, func(a, b rankTime) int { return cmp.Compare(a.work, b.work) })
	med, worst := rs[(len(rs)-1)/2], rs[len(rs)-1]
	excess := worst.work - med.work
	if excess < StragglerGap*med.Summary.WallMean || med.comm < StragglerWait*excess || !beyondNoise(worst, med) {
		return Verdict{}, false
	}
	return stragglerVerdict(worst, med), true
}

// beyondNoise reports whether worst's work is slower than med's in the
// typical step too: its stages outside comm, at their medians, by
// StragglerGap of the median rank's median step. A balanced job on a loaded
// box has a few slow steps on one rank or another (a preempted optimizer
// step), which raise a rank's means over a window but not its medians; a
// straggler is slower step after step. GPU times carry no medians, nor do
// the summaries of a brief aggregate: ranks with them are judged on their
// means.
func beyondNoise(worst, med rankTime) bool {
	ws, ms := worst.Summary, med.Summary
	if ws.HasGPU || ms.HasGPU {
		return true
	}
	slow, typ := medianWork(ws), medianWork(ms)
	if slow <= 0 || typ <= 0 || ms.WallP50 <= 0 {
		return true // summaries without the stages' medians (a brief aggregate's): the means decide
	}
	return slow-typ >= StragglerGap*ms.WallP50
}

// medianWork is the sum of the medians of s's stages outside comm: the
// typical step's work (0: s has no stage medians).
func medianWork(s stage.Summary) float64 {
	var sum float64
	for _, st := range s.Stages {
		if stage.ClassOf(st.Name) != stage.ClassComm {
			sum += st.P50
		}
	}
	return sum
}

// stragglerVerdict explains why worst is slower than med: the non-comm
// stage whose mean grew the most, on the CPU or, where both ranks have GPU
// times for it, on the GPU (a slower kernel shows there, not in the CPU's
// launch time).
func stragglerVerdict(worst, med rankTime) Verdict {
	ws, ms := worst.Summary, med.Summary
	var name string
	var grew float64
	var onGPU bool
	for _, st := range ws.Stages {
		if stage.ClassOf(st.Name) == stage.ClassComm {
			continue
		}
		d, g := stageGrowth(st, ms.Stage(st.Name))
		if name == "" || d > grew {
			name, grew, onGPU = st.Name, d, g
		}
	}
	share, medShare := ws.Stage(name).Share, 0.0
	if m := ms.Stage(name); m != nil {
		medShare = m.Share
	}
	if onGPU {
		share, medShare = ws.Stage(name).GPUMean/ws.WallMean, ms.Stage(name).GPUMean/ms.WallMean
	}
	rank := worst.Rank
	v := Verdict{Kind: Straggler, Stage: name, Rank: &rank}
	label := name
	if name == stage.Backward {
		label = "backward compute" // the comm inside backward is apart: this is the rank's own work
	}
	if onGPU {
		label += "'s GPU time"
	}
	who := fmt.Sprintf("rank %d", rank)
	if worst.PID > 0 || worst.Host != "" {
		who += fmt.Sprintf(" (pid %d on %s)", worst.PID, orUnknown(worst.Host))
	}
	v.Headline = fmt.Sprintf("straggler: %s — its %s is %s vs %s on the median rank (+%s a step); the other ranks wait for it in comm %s a step (%s)",
		who, label, units.Pct(share), units.Pct(medShare), units.Dur(grew), waitPerStep(med), units.Pct(med.comm/ms.WallMean))
	switch stage.ClassOf(name) {
	case stage.ClassInput:
		v.Next = fmt.Sprintf("rank %d's input is slower: check its loader workers, its data shard and disk, and whether it shares CPU cores with another rank", rank)
	case stage.ClassNetwork:
		v.Next = fmt.Sprintf("rank %d computes slower: check its device (clocks, temperature, other processes) or its CPU share", rank)
	default:
		v.Next = fmt.Sprintf("look at what rank %d does that the others do not (logging, checkpoints, evaluation) in %s", rank, name)
	}
	return v
}

// stageGrowth is how much longer a stage is on the slower rank than on
// the median one (m nil: the median rank has no such stage), on the CPU or
// on the GPU, whichever grew more; gpu says it was the GPU's.
func stageGrowth(st stage.StageStat, m *stage.StageStat) (grew float64, gpu bool) {
	if m == nil {
		return st.Mean, false
	}
	grew = st.Mean - m.Mean
	if st.HasGPU && m.HasGPU && st.GPUMean-m.GPUMean > grew {
		return st.GPUMean - m.GPUMean, true
	}
	return grew, false
}

// classGPUMean is the summed mean GPU time of the stages of class c that
// have one.
func classGPUMean(s stage.Summary, c stage.Class) float64 {
	var sum float64
	for _, st := range s.Stages {
		if st.HasGPU && stage.ClassOf(st.Name) == c {
			sum += st.GPUMean
		}
	}
	return sum
}

// classMean is the summed mean time of the stages of class c.
func classMean(s stage.Summary, c stage.Class) float64 {
	var sum float64
	for _, st := range s.Stages {
		if stage.ClassOf(st.Name) == c {
			sum += st.Mean
		}
	}
	return sum
}
