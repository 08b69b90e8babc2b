package stage

import "sort"

// WaitPattern describes how the data_wait time of a window is spread over
// its steps: a loader that is slow on every step (steady) asks for a
// faster loader, one that falls behind now and then (bursty, often
// periodic) asks for deeper prefetch. The PauseStages have the same
// pattern (Pause): a checkpoint or an evaluation every N steps is bursty
// and periodic. docs/verdicts.md explains the rules.
type WaitPattern struct {
	// Waiting is the share of steps (0..1) that really waited: data_wait
	// at or above ThresholdNs.
	Waiting float64 `json:"waiting"`
	// ThresholdNs is what counted as a wait: the larger of WaitFloor and
	// WaitOfStep of the median step wall time.
	ThresholdNs float64 `json:"threshold_ns"`
	// TypicalNs is the data_wait of a step that did not spike: its
	// TypicalRank quantile over all steps.
	TypicalNs float64 `json:"typical_ns"`
	// Spikes is the share of steps (0..1) whose wait stands out: at or
	// above ThresholdNs, BurstySpike times TypicalNs and the TypicalRank
	// quantile of the step wall time.
	Spikes float64 `json:"spikes"`
	// SpikeNs is the mean data_wait of those steps.
	SpikeNs float64 `json:"spike_ns"`
	// SpikeShare is the part (0..1) of all data_wait time spent in them.
	SpikeShare float64 `json:"spike_share"`
	// Period is the number of steps between the large spikes (at least
	// half of SpikeNs) when they recur regularly (0: not periodic, or too
	// few to tell).
	Period int64 `json:"period,omitempty"`
	// Recurring is the share of steps (0..1) that wait in the period, and
	// RecurringNs their mean data_wait: the pause itself, without the
	// smaller spikes of a loaded box (0 when not periodic).
	Recurring   float64 `json:"recurring,omitempty"`
	RecurringNs float64 `json:"recurring_ns,omitempty"`
}

// Thresholds of the wait pattern.
const (
	WaitFloor      = 2e6  // ns: a data_wait below this is never a wait
	WaitOfStep     = 0.2  // a data_wait of this share of the median step is a wait
	BurstySpike    = 4.0  // a wait this many times the typical wait is a spike
	BurstyWaiting  = 0.55 // spikes on at most this share of steps (every 2nd, and one more in an odd window) ...
	BurstyShare    = 0.5  // ... holding at least this part of the wait time: bursty
	MinPeriodWaits = 3    // waits needed to call them periodic
	PeriodAgree    = 0.7  // share of gaps within one step of the median gap
	// TypicalRank is the quantile that stands for a step that did not
	// spike. It is below half, so that when every 2nd step spikes (two
	// saturated workers in turn) the typical step is not one of them
	// whichever way a window's odd step falls.
	TypicalRank = 0.4
)

// PauseStages are the stages besides data_wait whose long times the
// summaries look at for a pattern (Summary.Pauses): the step's untimed
// rest (a checkpoint written between steps), evaluation and explicit
// synchronization.
var PauseStages = []string{Other, Eval, Sync}

// Pause is the pattern of one stage's times over a window's steps, as the
// WaitPattern of data_wait: a stage that takes long on a few steps, often
// every N steps (a checkpoint, an evaluation pass), rather than on each.
type Pause struct {
	// Stage names the stage.
	Stage string `json:"stage"`
	WaitPattern
}

// RunShare is the part (0..1) of the window's step time the pattern's
// spikes take (its recurring waits when periodic), given the mean step
// wall time: "188 ms every 25 steps, 29 % of the run's time".
func (p *WaitPattern) RunShare(wallMean float64) float64 {
	if p == nil || wallMean <= 0 {
		return 0
	}
	if p.Period > 0 {
		return p.Recurring * p.RecurringNs / wallMean
	}
	return p.Spikes * p.SpikeNs / wallMean
}

// EachNs is the time of one wait of the pattern: the recurring waits'
// mean when periodic, else the spikes'.
func (p *WaitPattern) EachNs() float64 {
	if p.Period > 0 {
		return p.RecurringNs
	}
	return p.SpikeNs
}

// Bursty reports whether the waits come in bursts: a minority of steps
// wait much longer than the typical one, and those hold most of the wait.
func (p *WaitPattern) Bursty() bool {
	return p != nil && p.Spikes > 0 && p.Spikes <= BurstyWaiting && p.SpikeShare >= BurstyShare
}

// waits computes the wait pattern of stage k over records first..end-1,
// given the median step wall time and the TypicalRank quantiles of the
// wall time and of stage k.
func (w *StepRing) waits(first, end, k int, wallP50, wallTypical, typical float64) *WaitPattern {
	n := end - first
	if n == 0 {
		return nil
	}
	var total float64
	big := w.waitBuf[:0]
	for _, run := range w.runs(first, end) {
		for j, x := range w.cpu[k][run[0]:run[1]] {
			if x < 0 {
				continue // the step has no such stage
			}
			total += float64(x)
			if x >= WaitFloor {
				big = append(big, w.steps[run[0]+j].step, x)
			}
		}
	}
	w.waitBuf = big
	return waitPattern(n, total, big, wallP50, wallTypical, typical)
}

// waitPattern is the wait pattern of n steps whose data_wait adds up to
// total, given as step, ns pairs (in step order) the waits that reached
// WaitFloor: every wait the pattern counts is one of them, since its
// threshold is never below the floor.
func waitPattern(n int, total float64, waits []int64, wallP50, wallTypical, typical float64) *WaitPattern {
	p := &WaitPattern{ThresholdNs: max(WaitFloor, WaitOfStep*wallP50), TypicalNs: typical}
	cut := max(p.ThresholdNs, BurstySpike*p.TypicalNs, wallTypical) // a spike costs at least a whole step
	var waiting, spikes int
	var spike float64
	for j := 1; j < len(waits); j += 2 {
		v := float64(waits[j])
		if v >= p.ThresholdNs {
			waiting++
		}
		if v >= cut {
			spikes++
			spike += v
		}
	}
	p.Waiting, p.Spikes = float64(waiting)/float64(n), float64(spikes)/float64(n)
	if spikes > 0 {
		p.SpikeNs, p.SpikeShare = spike/float64(spikes), spike/total
	}
	var big []int64
	var bigNs float64
	for j := 0; j < len(waits); j += 2 {
		if v := float64(waits[j+1]); v >= max(cut, p.SpikeNs/2) {
			big = append(big, waits[j])
			bigNs += v
		}
	}
	if p.Period = period(big); p.Period > 0 {
		p.Recurring, p.RecurringNs = float64(len(big))/float64(n), bigNs/float64(len(big))
	}
	return p
}

// period returns the regular gap between the given step numbers, or 0.
func period(steps []int64) int64 {
	if len(steps) < MinPeriodWaits {
		return 0
	}
	gaps := make([]int64, 0, len(steps)-1)
	for i := 1; i < len(steps); i++ {
		gaps = append(gaps, steps[i]-steps[i-1])
	}
	sorted := append([]int64(nil), gaps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	med := sorted[len(sorted)/2]
	if med < 2 {
		return 0 // consecutive waits are not a period
	}
	tol := int64(0) // short periods must repeat exactly; long ones may slip a step
	if med >= 10 {
		tol = 1
	}
	agree := 0
	for _, g := range gaps {
		if g >= med-tol && g <= med+tol {
			agree++
		}
	}
	if float64(agree) < PeriodAgree*float64(len(gaps)) {
		return 0
	}
	return med
}
