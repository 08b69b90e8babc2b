package stage

import (
	"fmt"
	"time"
)

// Sink receives finished step records. Publish must not block and must not
// keep r: it is reused by the caller.
type Sink interface {
	Publish(r *Record)
}

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
	sink    Sink
}

// NewTimer returns a Timer for the given stage names. The Other stage is
// appended when missing; it receives the part of each step no span covers.
// sink may be nil.
func NewTimer(names []string, sink Sink) (*Timer, error) {
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
	t := &Timer{names: all, base: now, baseNs: now.UnixNano(), sink: sink}
	for i, n := range all {
		if n == Other {
			t.other = i
		}
	}
	t.rec.N = len(all)
	t.rec.ClearGPU()
	return t, nil
}

// Names returns the stage names, in index order. Do not modify it.
func (t *Timer) Names() []string { return t.names }

// Index returns the index of the named stage, or -1.
func (t *Timer) Index(name string) int {
	for i, n := range t.names {
		if n == name {
			return i
		}
	}
	return -1
}

// MustIndex is Index for names the caller passed to NewTimer; it panics on
// an unknown name, which is a programming error.
func (t *Timer) MustIndex(name string) int {
	i := t.Index(name)
	if i < 0 {
		panic("stage: unknown stage " + name)
	}
	return i
}

func (t *Timer) mono() int64 { return int64(time.Since(t.base)) }

// StartStep begins the record of a new step.
func (t *Timer) StartStep(step int64) {
	r := &t.rec
	for i := 0; i < r.N; i++ {
		r.CPU[i] = 0
		r.GPU[i] = -1
	}
	r.Step = step
	r.Samples = 0
	r.HasLoss = false
	r.Loss = 0
	t.stepMon = t.mono()
	r.StartNs = t.baseNs + t.stepMon
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
	return Span{t: t, idx: idx, start: t.mono()}
}

// End closes the span, adds its duration to its stage and returns it.
func (s Span) End() time.Duration {
	d := s.t.mono() - s.start
	s.t.rec.CPU[s.idx] += d
	return time.Duration(d)
}

// Add adds d to the stage with index idx of the current step, for work
// measured elsewhere.
func (t *Timer) Add(idx int, d time.Duration) { t.rec.CPU[idx] += int64(d) }

// EndStep closes the step: the Other stage gets the wall time no span
// covered, the record goes to the sink, and a pointer to the timer's record
// is returned (valid until the next StartStep).
func (t *Timer) EndStep(samples int, loss float32, hasLoss bool) *Record {
	r := &t.rec
	end := t.mono()
	r.EndNs = t.baseNs + end
	r.Samples = int32(samples)
	r.Loss, r.HasLoss = loss, hasLoss
	var covered int64
	for i := 0; i < r.N; i++ {
		if i != t.other {
			covered += r.CPU[i]
		}
	}
	rest := (end - t.stepMon) - covered
	if rest < 0 {
		rest = 0
	}
	r.CPU[t.other] = rest
	if t.sink != nil {
		t.sink.Publish(r)
	}
	return r
}
