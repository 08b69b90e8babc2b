package verdict

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Thresholds of the stopped-rank rule. docs/verdicts.md says why.
const (
	// RankStopFactor: a step in flight this many p99 step times old (of
	// the median rank) is blocked ...
	RankStopFactor = 5
	// RankStopMinNs: ... and at least this old.
	RankStopMinNs = 1e9
	// RankSilentNs: a connected rank that sent no frame for this long does
	// not run (its progress frames come about once a second).
	RankSilentNs = 2.5e9
)

// rankState is what the viewer knows of one rank at a refresh.
type rankState int

const (
	rankRunning rankState = iota // frames arrive and its step is not blocked
	rankWaiting                  // its step is blocked in a comm-class stage
	rankBlocked                  // its step is blocked outside comm: it hangs
	rankSilent                   // connected, but no frame for RankSilentNs
	rankGone                     // its connection closed: it exited or died
	rankMissing                  // a rank of the run that never answered
)

// stateOf classifies r at nowNs; limit is how old a blocked step is.
func stateOf(r *RankSummary, nowNs int64, limit float64) rankState {
	switch {
	case r.Missing:
		return rankMissing
	case r.Gone:
		return rankGone
	case r.HeardNs > 0 && float64(nowNs-r.HeardNs) >= RankSilentNs:
		return rankSilent
	}
	p := r.Progress
	if flightAge(r) < limit {
		return rankRunning
	}
	if stage.ClassOf(p.Stage) == stage.ClassComm {
		return rankWaiting
	}
	return rankBlocked
}

// blockLimit is how old an in-flight step must be to count as blocked:
// RankStopFactor p99 step times of the median rank with steps, at least
// RankStopMinNs.
func blockLimit(ranks []RankSummary) float64 {
	var p99s []float64
	for _, r := range ranks {
		if r.Summary.Steps > 0 && r.Summary.WallP99 > 0 {
			p99s = append(p99s, r.Summary.WallP99)
		}
	}
	if len(p99s) == 0 {
		return RankStopMinNs
	}
	sort.Float64s(p99s)
	return max(RankStopMinNs, RankStopFactor*p99s[(len(p99s)-1)/2])
}

// DiagnoseStopped names a rank that stopped stepping while the others wait
// for it: one that is gone (its connection closed), silent (connected, but
// no frame for RankSilentNs: stopped or frozen), missing (a rank of the
// run that never answered), or hung (its step in flight is blocked outside
// comm). It needs at least one other rank whose own step in flight is
// blocked (RankStopFactor p99 step times, at least RankStopMinNs): they
// wait for it. Silent, gone and missing ranks are named before hung ones:
// a rank that sends nothing explains the others' waits, and a waiting rank
// is never named. ok is false otherwise, and for a single process.
func DiagnoseStopped(ranks []RankSummary, nowNs int64) (v Verdict, ok bool) {
	if len(ranks) < 2 || nowNs == 0 {
		return Verdict{}, false
	}
	limit := blockLimit(ranks)
	var culprit, hung *RankSummary
	var cstate rankState
	var waiting []*RankSummary
	blocked := 0
	for i := range ranks {
		r := &ranks[i]
		switch s := stateOf(r, nowNs, limit); s {
		case rankWaiting:
			waiting = append(waiting, r)
		case rankBlocked:
			blocked++
			waiting = append(waiting, r) // unless it is the one that hangs, below
			if hung == nil {
				hung = r
			}
		case rankSilent, rankGone, rankMissing:
			if culprit == nil {
				culprit, cstate = r, s
			}
		}
	}
	if culprit == nil {
		if blocked != 1 {
			return Verdict{}, false // several ranks blocked outside comm: which one holds the others is unknown
		}
		culprit, cstate = hung, rankBlocked
		waiting = slices.DeleteFunc(waiting, func(r *RankSummary) bool { return r == hung })
	}
	if len(waiting) == 0 || (cstate == rankMissing && oldest(waiting) < RankSilentNs) {
		// A missing rank may only be starting late: its peers must have
		// waited as long as a silent rank's silence.
		return Verdict{}, false
	}
	return stoppedVerdict(culprit, cstate, waiting, nowNs), true
}

// oldest is the age of the oldest step in flight among ranks.
func oldest(ranks []*RankSummary) float64 {
	var age float64
	for _, r := range ranks {
		age = max(age, flightAge(r))
	}
	return age
}

// flightAge is how long r's step in flight had run when its latest
// progress sample was taken, by the rank's own clock; 0 when none is in
// flight or the window already holds that step. The viewer's clock would
// add the sample's travel: progress is sampled about once a second and
// waits for the viewer's next refresh, so a healthy rank of 50 ms steps
// could look a second or two into one step.
func flightAge(r *RankSummary) float64 {
	p := r.Progress
	switch {
	case p == nil || p.StepStartNs == 0 || p.TimeNs < p.StepStartNs:
		return 0
	case r.Summary.Steps > 0 && r.Summary.LastStep >= p.Step:
		return 0 // it ended after the sample
	}
	return float64(p.TimeNs - p.StepStartNs)
}

// stoppedVerdict says which rank stopped, where, and who waits for it.
func stoppedVerdict(c *RankSummary, s rankState, waiting []*RankSummary, nowNs int64) Verdict {
	rank := c.Rank
	v := Verdict{Kind: RankStopped, Rank: &rank}
	where := ""
	if p := c.Progress; p != nil && p.Stage != "" {
		v.Stage = p.Stage
		where = fmt.Sprintf("; it was last in %s of step %d", p.Stage, p.Step)
		if s == rankBlocked {
			where = fmt.Sprintf("; step %d has run for %s, in %s for %s", p.Step, secs(float64(nowNs-p.StepStartNs)), p.Stage, secs(float64(p.InStageNs(nowNs))))
		}
	}
	who := fmt.Sprintf("rank %d", rank)
	if c.PID > 0 || c.Host != "" {
		who += fmt.Sprintf(" (pid %d on %s)", c.PID, orUnknown(c.Host))
	}
	switch s {
	case rankGone:
		v.Headline = fmt.Sprintf("rank stopped: %s is gone — its connection closed%s", who, where)
		v.Next = fmt.Sprintf("rank %d exited or was killed: check its log and exit status (out of memory, a signal); the others will time out in their collective", rank)
	case rankMissing:
		v.Headline = fmt.Sprintf("rank stopped: %s does not answer — no hello from it", who)
		v.Next = fmt.Sprintf("rank %d is stopped, frozen or not started: check its process state (ps -o stat: T is stopped), its host and its log", rank)
	case rankSilent:
		v.Headline = fmt.Sprintf("rank stopped: %s sent nothing for %s%s", who, secs(float64(nowNs-c.HeardNs)), where)
		v.Next = fmt.Sprintf("rank %d is stopped (SIGSTOP, a debugger), frozen, swapping or cut off: check its process state (ps -o stat: T is stopped) and its host", rank)
	default:
		v.Headline = fmt.Sprintf("rank stopped: %s hangs%s", who, where)
		v.Next = stuckAdvice(v.Stage, nil)
	}
	v.Headline += "; " + waitLine(waiting, nowNs)
	return v
}

// waitLine says which ranks wait, where and for how long.
func waitLine(waiting []*RankSummary, nowNs int64) string {
	sort.Slice(waiting, func(i, j int) bool { return waiting[i].Rank < waiting[j].Rank })
	var parts []string
	for _, w := range waiting {
		p := w.Progress
		stageName := p.Stage
		if stageName == "" {
			stageName = stage.Other
		}
		parts = append(parts, fmt.Sprintf("rank %d in %s for %s", w.Rank, stageName, secs(float64(p.InStageNs(nowNs)))))
	}
	return "waiting for it: " + strings.Join(parts, ", ")
}

// someBlocked reports whether a rank's step in flight is blocked or a rank
// stopped answering: window summaries of the ranks then say nothing about
// a straggler (their last steps are old).
func someBlocked(ranks []RankSummary, nowNs int64) bool {
	if nowNs == 0 {
		return false
	}
	limit := blockLimit(ranks)
	for i := range ranks {
		if stateOf(&ranks[i], nowNs, limit) != rankRunning {
			return true
		}
	}
	return false
}

// orUnknown is s, or "an unknown host" when empty.
func orUnknown(s string) string {
	if s == "" {
		return "an unknown host"
	}
	return s
}

// waitPerStep is the mean comm time per step of r, for the straggler
// headline.
func waitPerStep(r rankTime) string { return units.Dur(r.comm) }
