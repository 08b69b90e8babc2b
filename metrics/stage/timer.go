package stage

import (
	"fmt"
	"time"
)

// Timer measures the stages of one step at a time on the training thread.
// Its hot path (Begin, End, EndStep) allocates nothing. A Timer is not safe
// for concurrent use: it belongs to the one goroutine that runs the loop.
type Timer struct {
	names   []string
	other   int
	base    time.Time // monotonic reference
	baseNs  int64     // base as Unix nanoseconds
	rec     Record
	stepMon int64 // monotonic ns at StartStep
	track   tracker
}

// NewTimer returns a Timer for the given stage names. The Other stage is
// appended when missing; it receives the part of each step no span covers.
func NewTimer(names []string) (*Timer, error) {
	all := append([]string(nil), names...)
	seen := map[string]bool{}
	for _, n := range all {
		if n == "" {
			return nil, fmt.Errorf("stage timer: empty stage name")
		}
		if seen[n] {
			return nil, fmt.Errorf("stage timer: duplicate stage %q", n)
		}
		seen[n] = true
	}
	if !seen[Other] {
		all = append(all, Other)
	}
	if len(all) > MaxStages {
		return nil, fmt.Errorf("stage timer: %d stages, at most %d", len(all), MaxStages)
	}
	now := time.Now()
	t := &Timer{names: all, base: now, baseNs: now.UnixNano()}
	for i, n := range all {
		if n == Other {
			t.other = i
		}
	}
	t.rec.NumStages = len(all)
	t.rec.ClearGPU()
	t.track.step.Store(-1)
	return t, nil
}

// Names returns the stage names, in index order. Do not modify it.
func (t *Timer) Names() []string { return t.names }

func (t *Timer) mono() int64 { return int64(time.Since(t.base)) }

// StartStep begins the record of a new step.
func (t *Timer) StartStep(step int64) {
	r := &t.rec
	for i := 0; i < r.NumStages; i++ {
		r.CPU[i] = 0
		r.GPU[i] = -1
	}
	r.Step = step
	r.Samples = 0
	r.HasLoss = false
	r.Loss = 0
	t.stepMon = t.mono()
	r.StartNs = t.baseNs + t.stepMon
	t.track.step.Store(step)
	t.track.stepMon.Store(t.stepMon)
	t.track.cur.Store(pack(t.stepMon, t.other))
}

// Span is an open stage measurement. It is a value: starting and ending one
// allocates nothing.
type Span struct {
	t     *Timer
	idx   int
	start int64
}

// Begin opens a span of the stage with index idx.
func (t *Timer) Begin(idx int) Span {
	now := t.mono()
	t.track.cur.Store(pack(now, idx))
	return Span{t: t, idx: idx, start: now}
}

// End closes the span, adds its duration to its stage and returns it.
func (s Span) End() time.Duration {
	now := s.t.mono()
	d := now - s.start
	s.t.rec.CPU[s.idx] += d
	s.t.track.cur.Store(pack(now, s.t.other))
	return time.Duration(d)
}

// EndStep closes the step: the Other stage gets the wall time no span
// covered, and a pointer to the timer's record
// is returned (valid until the next StartStep).
func (t *Timer) EndStep(samples int, loss float32, hasLoss bool) *Record {
	r := &t.rec
	end := t.mono()
	r.EndNs = t.baseNs + end
	r.Samples = int32(samples)
	r.Loss, r.HasLoss = loss, hasLoss
	var covered int64
	for i := 0; i < r.NumStages; i++ {
		if i != t.other {
			covered += r.CPU[i]
		}
	}
	rest := (end - t.stepMon) - covered
	if rest < 0 {
		rest = 0
	}
	r.CPU[t.other] = rest
	t.track.done.Add(1)
	t.track.cur.Store(pack(end, t.other))
	return r
}
