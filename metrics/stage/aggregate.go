package stage

import (
	"time"

	"errors"
	"fmt"
	"math"
	"slices"
)

// Aggregate stands for the steps a trainer finished in one interval (about
// a second) without listing them: counts, the first and last step, a
// Sketch per column and the few raw times the wait pattern needs. A viewer
// summarizes a window of aggregates as it would the steps (AggRing), so a
// trainer at any step rate costs it about one small frame a second.
type Aggregate struct {
	Steps     int64    `json:"steps"`
	FirstStep int64    `json:"first"`
	LastStep  int64    `json:"last"`
	StartNs   int64    `json:"t0"` // when the first step started, Unix ns
	EndNs     int64    `json:"t1"` // when the last step ended, Unix ns
	Samples   int64    `json:"n"`
	Loss      *Loss    `json:"loss,omitempty"` // the newest loss read back, if any
	Wall      Sketch   `json:"wall"`           // step wall times
	Busy      Sketch   `json:"busy"`           // summed GPU time of the steps that have one, comm stages left out
	CPU       []Sketch `json:"cpu"`            // per stage of the stage list
	GPU       []Sketch `json:"gpu,omitempty"`  // per stage: known GPU times
	// Waits lists the steps whose data_wait reached WaitFloor, as step,
	// nanoseconds pairs flattened in step order; at most MaxAggWaits.
	// Every wait the wait pattern can count is one of them.
	Waits []int64 `json:"waits,omitempty"`
	// Pauses lists the steps on which one of the PauseStages took at
	// least WaitFloor, as stage index, step, nanoseconds triples flattened
	// in step order; at most MaxAggWaits. Every long time the stage's
	// pattern can count is one of them.
	Pauses []int64 `json:"pauses,omitempty"`
}

// Brief is a copy of a with what a brief summary reads (AggRing.Brief):
// its counts, times, loss and wall sketch, every other column's count and
// sum without bins, and no waits. It shares no slice with a, so a ring of
// brief copies keeps a small part of what the aggregates held (a run's
// view keeps minutes of them for every rank it shows in brief).
func (a *Aggregate) Brief() Aggregate {
	b := *a
	b.Wall.Bins = slices.Clone(a.Wall.Bins)
	b.Busy = Sketch{N: a.Busy.N, Sum: a.Busy.Sum}
	b.CPU, b.GPU, b.Waits, b.Pauses = counts(a.CPU), counts(a.GPU), nil, nil
	if a.Loss != nil {
		l := *a.Loss
		b.Loss = &l
	}
	return b
}

// IsBrief reports whether a holds no more than its Brief copy does: no
// bins but the wall's, no waits and no pauses (an agg frame sent brief).
func (a *Aggregate) IsBrief() bool {
	binless := func(v []Sketch) bool { return !slices.ContainsFunc(v, func(s Sketch) bool { return len(s.Bins) > 0 }) }
	return len(a.Busy.Bins) == 0 && binless(a.CPU) && binless(a.GPU) && len(a.Waits) == 0 && len(a.Pauses) == 0
}

// counts is v's sketches without their bins (nil for nil).
func counts(v []Sketch) []Sketch {
	if v == nil {
		return nil
	}
	out := make([]Sketch, len(v))
	for k := range v {
		out[k] = Sketch{N: v[k].N, Sum: v[k].Sum}
	}
	return out
}

// Loss is a loss value and the step that read it back.
type Loss struct {
	Step  int64   `json:"step"`
	Value float32 `json:"value"`
}

// MaxAggWaits bounds the waits of one aggregate; an Aggregator whose
// waits reach it is full and is taken early.
const MaxAggWaits = 4096

// Validate checks an aggregate read from the wire.
func (a *Aggregate) Validate() error {
	switch {
	case a.Steps <= 0:
		return fmt.Errorf("aggregate of %d steps (want at least 1)", a.Steps)
	case a.EndNs < a.StartNs:
		return fmt.Errorf("aggregate t1 %d before t0 %d", a.EndNs, a.StartNs)
	case a.LastStep < a.FirstStep:
		return fmt.Errorf("aggregate last step %d before first %d", a.LastStep, a.FirstStep)
	case a.Samples < 0:
		return errors.New("aggregate with negative samples")
	case len(a.CPU) > MaxStages || len(a.GPU) > MaxStages:
		return fmt.Errorf("aggregate with more than %d stages", MaxStages)
	case len(a.Waits)%2 != 0 || len(a.Waits) > 2*MaxAggWaits:
		return fmt.Errorf("aggregate with %d wait numbers (want step, ns pairs, at most %d)", len(a.Waits), MaxAggWaits)
	case len(a.Pauses)%3 != 0 || len(a.Pauses) > 3*MaxAggWaits:
		return fmt.Errorf("aggregate with %d pause numbers (want stage, step, ns triples, at most %d)", len(a.Pauses), MaxAggWaits)
	}
	if a.Wall.N != a.Steps {
		return fmt.Errorf("aggregate wall sketch counts %d steps of %d", a.Wall.N, a.Steps)
	}
	cols := []*Sketch{&a.Wall, &a.Busy}
	for k := range a.CPU {
		cols = append(cols, &a.CPU[k])
	}
	for k := range a.GPU {
		cols = append(cols, &a.GPU[k])
	}
	for i, s := range cols {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("aggregate column %d: %w", i, err)
		}
		if s.N > a.Steps {
			return fmt.Errorf("aggregate column %d counts %d of %d steps", i, s.N, a.Steps)
		}
	}
	for j := 0; j < len(a.Waits); j += 2 {
		if a.Waits[j+1] < WaitFloor {
			return fmt.Errorf("aggregate wait %d ns below the %d ns floor", a.Waits[j+1], int64(WaitFloor))
		}
	}
	for j := 0; j < len(a.Pauses); j += 3 {
		if k := a.Pauses[j]; k < 0 || k >= int64(len(a.CPU)) {
			return fmt.Errorf("aggregate pause of stage %d of %d", k, len(a.CPU))
		}
		if a.Pauses[j+2] < WaitFloor {
			return fmt.Errorf("aggregate pause %d ns below the %d ns floor", a.Pauses[j+2], int64(WaitFloor))
		}
	}
	return nil
}

// Aggregator folds step records into an Aggregate. It is not safe for
// concurrent use.
type Aggregator struct {
	names    []string
	rankWait []bool
	dataWait int   // stage index of data_wait, -1 if none
	pauses   []int // stage indexes of the PauseStages in names
	agg      Aggregate
	wall     sketchBuilder
	busy     sketchBuilder
	cpu, gpu []sketchBuilder
}

// NewAggregator returns an empty Aggregator for records of the stage list
// names.
func NewAggregator(names []string) *Aggregator {
	a := &Aggregator{names: slices.Clone(names), rankWait: make([]bool, len(names)), dataWait: slices.Index(names, DataWait),
		cpu: make([]sketchBuilder, len(names)), gpu: make([]sketchBuilder, len(names))}
	for k, n := range names {
		a.rankWait[k] = ClassOf(n) == ClassComm
		if slices.Contains(PauseStages, n) {
			a.pauses = append(a.pauses, k)
		}
	}
	return a
}

// Names is the stage list the Aggregator counts.
func (a *Aggregator) Names() []string { return a.names }

// Steps is how many steps were added since the last Take.
func (a *Aggregator) Steps() int64 { return a.agg.Steps }

// Full reports whether the aggregate holds MaxAggWaits waits: take it
// before adding more.
func (a *Aggregator) Full() bool {
	return len(a.agg.Waits) >= 2*MaxAggWaits || len(a.agg.Pauses) >= 3*MaxAggWaits
}

// Add counts r. Times of stages beyond the Aggregator's names count only
// toward the step's GPU busy time, as in a StepRing.
func (a *Aggregator) Add(r *Record) {
	g := &a.agg
	if g.Steps == 0 || r.StartNs < g.StartNs {
		g.StartNs = r.StartNs
	}
	if g.Steps == 0 {
		g.FirstStep, g.LastStep = r.Step, r.Step
	}
	g.FirstStep, g.LastStep = min(g.FirstStep, r.Step), max(g.LastStep, r.Step)
	g.EndNs = max(g.EndNs, r.EndNs)
	g.Steps++
	g.Samples += int64(r.Samples)
	if r.HasLoss && !math.IsNaN(float64(r.Loss)) && !math.IsInf(float64(r.Loss), 0) { // JSON has neither
		g.Loss = &Loss{Step: r.Step, Value: r.Loss}
	}
	a.wall.add(r.EndNs - r.StartNs)
	busy := int64(absent)
	for k := range r.NumStages {
		if gk := r.GPU[k]; gk >= 0 && (k >= len(a.rankWait) || !a.rankWait[k]) {
			busy = max(busy, 0) + gk
		}
		if k >= len(a.names) {
			continue
		}
		a.cpu[k].add(r.CPU[k])
		if r.GPU[k] >= 0 {
			a.gpu[k].add(r.GPU[k])
		}
	}
	if busy >= 0 {
		a.busy.add(busy)
	}
	if k := a.dataWait; k >= 0 && k < r.NumStages && r.CPU[k] >= WaitFloor && !a.Full() {
		g.Waits = append(g.Waits, r.Step, r.CPU[k])
	}
	for _, k := range a.pauses {
		if k < r.NumStages && r.CPU[k] >= WaitFloor && !a.Full() {
			g.Pauses = append(g.Pauses, int64(k), r.Step, r.CPU[k])
		}
	}
}

// Take returns the aggregate of the steps added since the last Take
// (Steps 0 when none) and starts over.
func (a *Aggregator) Take() Aggregate {
	g := a.agg
	a.agg = Aggregate{}
	g.Wall, g.Busy = a.wall.take(), a.busy.take()
	g.CPU = make([]Sketch, len(a.names))
	g.GPU = make([]Sketch, len(a.names))
	known := false
	for k := range a.names {
		g.CPU[k], g.GPU[k] = a.cpu[k].take(), a.gpu[k].take()
		known = known || g.GPU[k].N > 0
	}
	if !known {
		g.GPU = nil
	}
	return g
}

// Aggregate folds every record the ring holds into one aggregate.
func (w *StepRing) Aggregate() Aggregate {
	a := NewAggregator(w.names)
	for i := range w.Len() {
		r := w.at(i)
		a.Add(&r)
	}
	return a.Take()
}

// Aggregates folds the records the ring holds, oldest first, into
// aggregates of about every each (one ends with the first record that
// ends every or more after the first one of it began, or when it is
// full), as a trainer's agg frames cut them: a window of older steps then
// joins a window of aggregates that ended in it.
func (w *StepRing) Aggregates(every time.Duration) []Aggregate {
	var out []Aggregate
	a := NewAggregator(w.names)
	var startNs int64
	for i := range w.Len() {
		r := w.at(i)
		if a.Steps() == 0 {
			startNs = r.StartNs
		}
		a.Add(&r)
		if a.Full() || r.EndNs-startNs >= int64(every) {
			out = append(out, a.Take())
		}
	}
	if a.Steps() > 0 {
		out = append(out, a.Take())
	}
	return out
}
