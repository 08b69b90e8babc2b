package stage

import "sync/atomic"

// Progress is where the training loop is right now: the step in flight,
// the stage it is in and since when. Publishers sample it about once a
// second so a viewer can reason about a step that has not ended yet (a slow
// start, a hang). Times are Unix nanoseconds.
type Progress struct {
	// TimeNs is when the sample was taken.
	TimeNs int64 `json:"t"`
	// Step is the step in flight, or the last one started; -1 before the
	// first step.
	Step int64 `json:"step"`
	// StepStartNs is when Step started; 0 before the first step.
	StepStartNs int64 `json:"step_t0,omitempty"`
	// Stage is the stage the loop is in; Other between spans, empty before
	// the first step.
	Stage string `json:"stage,omitempty"`
	// SinceNs is when the loop entered Stage.
	SinceNs int64 `json:"since,omitempty"`
	// Done counts the steps finished so far.
	Done int64 `json:"done"`
}

// InStageNs is how long the loop has been in its stage at now (Unix ns).
func (p *Progress) InStageNs(now int64) int64 {
	if p == nil || p.SinceNs == 0 || now < p.SinceNs {
		return 0
	}
	return now - p.SinceNs
}

// tracker is the part of a Timer that another goroutine may read: the
// current stage packed with the monotonic time it began, and the step.
// Each hot-path update is one uncontended atomic store.
type tracker struct {
	cur     atomic.Int64 // mono ns << stageBits | (stage index + 1); 0 before any step
	step    atomic.Int64 // step in flight, -1 before the first
	stepMon atomic.Int64 // monotonic ns the step started
	done    atomic.Int64 // steps ended
}

const stageBits = 5 // MaxStages = 16 fits in 5 bits with the +1

func pack(mono int64, idx int) int64 { return mono<<stageBits | int64(idx+1) }

// Progress samples where the loop is. Unlike the rest of Timer it is safe
// to call from any goroutine (the publisher's) while the loop runs.
func (t *Timer) Progress() Progress {
	p := Progress{TimeNs: t.baseNs + t.mono(), Step: t.track.step.Load(), Done: t.track.done.Load()}
	if p.Step >= 0 {
		p.StepStartNs = t.baseNs + t.track.stepMon.Load()
	}
	if c := t.track.cur.Load(); c != 0 {
		idx := int(c&(1<<stageBits-1)) - 1
		p.Stage = t.names[idx]
		p.SinceNs = t.baseNs + c>>stageBits
	}
	return p
}
