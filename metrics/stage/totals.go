package stage

import (
	"math"
	"time"
)

// MaxTotalStages bounds how many distinct stage names one Totals counts;
// the times of any further name are counted under Other. It keeps the
// exporter's label cardinality bounded against a publisher that renames
// its stages forever.
const MaxTotalStages = 4 * MaxStages

// Totals accumulates the step records of one trainer process into
// monotonic counts: steps, samples, CPU and GPU time per stage, and
// histograms of the step wall time and of data_wait. Stage times are kept
// by name, so a new stage list from the same process keeps counting. Add
// costs a few additions and two bucket searches per step and never
// allocates. It is not safe for concurrent use; copying a Totals copies
// its counts.
type Totals struct {
	Steps   int64
	Samples int64
	// Stages holds one entry per stage name seen, in first-seen order.
	Stages []StageTotal
	// Wall is the histogram of step wall times.
	Wall Histogram
	// DataWait is the histogram of data_wait times; HasDataWait is set
	// once a stage list with data_wait was seen.
	DataWait    Histogram
	HasDataWait bool
	// LastStep and LastEndNs are the newest step's number and when it
	// ended (Unix ns); LastEndNs is 0 before the first step.
	LastStep, LastEndNs int64

	index    [MaxStages]int // record stage index -> Stages index
	nIndex   int            // stages of the current list
	dataWait int            // record index of data_wait, -1 if none
}

// StageTotal is the time one stage took, summed over every step.
type StageTotal struct {
	Name   string
	CPUNs  int64
	GPUNs  int64
	HasGPU bool // some step carried a GPU time for the stage
}

// NewTotals returns empty Totals for records made with the stage list names.
func NewTotals(names []string) *Totals {
	t := &Totals{dataWait: -1}
	t.SetStages(names)
	return t
}

// SetStages makes names the stage list of the records that follow. Stages
// already counted keep their totals.
func (t *Totals) SetStages(names []string) {
	t.dataWait = -1
	t.nIndex = min(len(names), MaxStages)
	for i, name := range names[:t.nIndex] {
		t.index[i] = t.stageIndex(name)
		if name == DataWait {
			t.dataWait, t.HasDataWait = i, true
		}
	}
}

// stageIndex returns the Stages entry of name, adding it while there is
// room; past MaxTotalStages new names share the Other entry.
func (t *Totals) stageIndex(name string) int {
	for i := range t.Stages {
		if t.Stages[i].Name == name {
			return i
		}
	}
	if len(t.Stages) >= MaxTotalStages-1 && name != Other {
		return t.stageIndex(Other)
	}
	t.Stages = append(t.Stages, StageTotal{Name: name})
	return len(t.Stages) - 1
}

// Add counts one step record made with the current stage list.
func (t *Totals) Add(r *Record) {
	t.Steps++
	t.Samples += int64(r.Samples)
	if r.EndNs >= t.LastEndNs {
		t.LastStep, t.LastEndNs = r.Step, r.EndNs
	}
	n := min(r.NumStages, t.nIndex)
	for i := 0; i < n; i++ {
		st := &t.Stages[t.index[i]]
		st.CPUNs += r.CPU[i]
		if r.GPU[i] >= 0 {
			st.GPUNs += r.GPU[i]
			st.HasGPU = true
		}
	}
	t.Wall.Observe(r.WallNs())
	if t.dataWait >= 0 && t.dataWait < r.NumStages {
		t.DataWait.Observe(r.CPU[t.dataWait])
	}
}

// AddAggregate counts the steps of g, made with the current stage list.
// Its sketches fill the histograms: each bin's count at its midpoint, so a
// time within 1/128 of a bucket's bound may count in the next bucket.
func (t *Totals) AddAggregate(g *Aggregate) {
	t.Steps += g.Steps
	t.Samples += g.Samples
	if g.EndNs >= t.LastEndNs {
		t.LastStep, t.LastEndNs = g.LastStep, g.EndNs
	}
	for i := range min(len(g.CPU), t.nIndex) {
		st := &t.Stages[t.index[i]]
		st.CPUNs += g.CPU[i].Sum
		if i < len(g.GPU) && g.GPU[i].N > 0 {
			st.GPUNs += g.GPU[i].Sum
			st.HasGPU = true
		}
	}
	t.Wall.observeSketch(&g.Wall)
	if t.dataWait >= 0 && t.dataWait < len(g.CPU) {
		t.DataWait.observeSketch(&g.CPU[t.dataWait])
	}
}

// Clone returns a deep copy of t.
func (t *Totals) Clone() *Totals {
	c := *t
	c.Stages = append([]StageTotal(nil), t.Stages...)
	return &c
}

// StepBounds are the upper bounds of the classic histogram buckets, chosen
// for training steps: 100 µs to 60 s, 1-2-3-5-7 per decade. A +Inf bucket
// follows the last.
var StepBounds = [...]time.Duration{
	100 * time.Microsecond, 200 * time.Microsecond, 300 * time.Microsecond, 500 * time.Microsecond, 700 * time.Microsecond,
	time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 5 * time.Millisecond, 7 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 50 * time.Millisecond, 70 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond, 700 * time.Millisecond,
	time.Second, 2 * time.Second, 3 * time.Second, 5 * time.Second, 7 * time.Second,
	10 * time.Second, 20 * time.Second, 30 * time.Second, 60 * time.Second,
}

// Native histogram layout: Prometheus's exponential buckets of schema
// NativeSchema, where bucket i holds values in (2^((i-1)/8), 2^(i/8)]
// seconds. Values up to NativeZeroThreshold count in the zero bucket;
// buckets NativeMinIndex..NativeMaxIndex (about 1 µs to 68 min) are kept,
// and longer values are counted in the last one.
const (
	NativeSchema   = 3
	NativeMinIndex = -20<<NativeSchema + 1
	NativeMaxIndex = 12 << NativeSchema
	nativeLen      = NativeMaxIndex - NativeMinIndex + 1
)

// NativeZeroThreshold is the width of the native histogram's zero bucket,
// in seconds: 2^-20, about 0.95 µs.
var NativeZeroThreshold = math.Ldexp(1, -20)

// nativeBase and nativeBound find a value's place within its power of
// two without a search: for a mantissa m in [1, 2) whose top four bits are
// q, nativeBase[q] bounds 2^(k/8) (k = 0..7) lie below the slice
// [1+q/16, 1+(q+1)/16), and at most one more, nativeBound[q] (+Inf if
// none), lies within it, since the bounds are more than 1/16 apart.
var nativeBase, nativeBound = func() (base [16]int, bound [16]float64) {
	for q := range 16 {
		lo, hi := 1+float64(q)/16, 1+float64(q+1)/16
		bound[q] = math.Inf(1)
		for k := range 1 << NativeSchema {
			b := math.Exp2(float64(k) / (1 << NativeSchema))
			switch {
			case b < lo:
				base[q]++
			case b < hi:
				bound[q] = b
			}
		}
	}
	return base, bound
}()

// Histogram counts durations both in the classic buckets of StepBounds
// and in native exponential buckets.
type Histogram struct {
	Count uint64
	SumNs int64
	// Classic[i] counts values in (StepBounds[i-1], StepBounds[i]]; the
	// last entry counts values above every bound. Not cumulative.
	Classic [len(StepBounds) + 1]uint64
	// Zero counts values of at most NativeZeroThreshold seconds.
	Zero uint64
	// Native[i] counts values in native bucket NativeMinIndex+i.
	Native [nativeLen]uint64
}

// Observe counts one duration in nanoseconds; negative ones count as 0.
func (h *Histogram) Observe(ns int64) {
	ns = max(ns, 0)
	h.Count++
	h.SumNs += ns
	h.Classic[classicBucket(ns)]++
	s := float64(ns) / 1e9
	if s <= NativeZeroThreshold {
		h.Zero++
		return
	}
	h.Native[NativeIndex(s)-NativeMinIndex]++
}

// observeSketch counts the times of s: the sum exactly, each bin's count
// at the bin's midpoint.
func (h *Histogram) observeSketch(s *Sketch) {
	h.Count += uint64(s.N)
	h.SumNs += s.Sum
	for j := 0; j+1 < len(s.Bins); j += 2 {
		ns, c := int64(SketchValue(int(s.Bins[j]))), uint64(s.Bins[j+1])
		h.Classic[classicBucket(ns)] += c
		if sec := float64(ns) / 1e9; sec <= NativeZeroThreshold {
			h.Zero += c
		} else {
			h.Native[NativeIndex(sec)-NativeMinIndex] += c
		}
	}
}

// classicBucket returns the index of the classic bucket of ns.
func classicBucket(ns int64) int {
	lo, hi := 0, len(StepBounds)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int64(StepBounds[m]) < ns {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// NativeIndex returns the native bucket of s seconds (s above
// NativeZeroThreshold), clamped to NativeMinIndex..NativeMaxIndex: the
// smallest i with s <= 2^(i/8).
func NativeIndex(s float64) int {
	bits := math.Float64bits(s)
	exp := int(bits>>52&0x7ff) - 1023 // s = m * 2^exp, m in [1, 2)
	q := bits >> 48 & 0xf
	m := math.Float64frombits(bits&(1<<52-1) | 1023<<52)
	sub := nativeBase[q] // bounds 2^(k/8) below m
	if m > nativeBound[q] {
		sub++
	}
	i := exp<<NativeSchema + sub
	return min(max(i, NativeMinIndex), NativeMaxIndex)
}

// ClassicBucket returns the index of the classic bucket that counts d:
// the first bound at or above d, len(StepBounds) for the +Inf bucket.
func ClassicBucket(d time.Duration) int { return classicBucket(int64(d)) }
