package stage

import (
	"math"
	"slices"
	"time"
)

// StageStat aggregates one stage over a window of steps. Times are in
// nanoseconds.
type StageStat struct {
	Name    string  `json:"name"`
	Mean    float64 `json:"mean_ns"`
	P50     float64 `json:"p50_ns"`
	P99     float64 `json:"p99_ns"`
	Share   float64 `json:"share"`       // Mean / mean step wall time
	HasGPU  bool    `json:"has_gpu"`     // GPUMean is known
	GPUMean float64 `json:"gpu_mean_ns"` // mean GPU time over steps that carry one
	GPUP99  float64 `json:"gpu_p99_ns"`  // p99 GPU time
}

// Summary aggregates a window of steps.
type Summary struct {
	Steps         int         `json:"steps"`
	SpanNs        int64       `json:"span_ns"`      // first step start to last step end
	WallMean      float64     `json:"wall_mean_ns"` // mean step wall time
	WallP50       float64     `json:"wall_p50_ns"`
	WallP99       float64     `json:"wall_p99_ns"`
	StepsPerSec   float64     `json:"steps_per_sec"`
	SamplesPerSec float64     `json:"samples_per_sec"`
	Stages        []StageStat `json:"stages"`
	HasGPU        bool        `json:"has_gpu"`
	GPUBusyMean   float64     `json:"gpu_busy_mean_ns"` // mean summed GPU stage time per step
	GPUBusy       float64     `json:"gpu_busy"`         // GPUBusyMean / WallMean, 0..1
	LastStep      int64       `json:"last_step"`
	LastEndNs     int64       `json:"last_end_ns"` // when the newest step ended, Unix ns
	// Waits is how data_wait is spread over the steps; nil without a
	// data_wait stage.
	Waits *WaitPattern `json:"waits,omitempty"`
	// Pauses are the patterns of the PauseStages that spiked on some of
	// the steps, in PauseStages order; empty when none did.
	Pauses   []Pause `json:"pauses,omitempty"`
	HasLoss  bool    `json:"has_loss"`
	LastLoss float32 `json:"last_loss"`
}

// PauseOf is the pattern of the named stage's times: Waits for data_wait,
// else its entry of Pauses; nil when none is known.
func (s *Summary) PauseOf(name string) *WaitPattern {
	if name == DataWait {
		return s.Waits
	}
	for i := range s.Pauses {
		if s.Pauses[i].Stage == name {
			return &s.Pauses[i].WaitPattern
		}
	}
	return nil
}

// Stage returns the statistics of the named stage, or nil.
func (s *Summary) Stage(name string) *StageStat {
	for i := range s.Stages {
		if s.Stages[i].Name == name {
			return &s.Stages[i]
		}
	}
	return nil
}

// StepRing keeps the most recent step records of one stage list in a ring and
// aggregates them. It is not safe for concurrent use.
//
// The ring is stored by column: one array per stage for CPU times and one
// for GPU times, next to the steps' own fields. A viewer summarizes
// thousands of steps on every refresh; reading each stage's times from
// one contiguous array costs a fraction of picking them out of whole
// records, and with seven stages the ring takes about half the memory of
// one of records. Times of stages beyond the ring's names are not kept
// (their GPU time still counts toward the step's GPU busy time). The GPU
// time of comm-class stages is the stream waiting for other ranks'
// reductions: it is kept, but it is not GPU busy time.
type StepRing struct {
	names    []string
	rankWait []bool // rankWait[k]: stage k is comm-class, its GPU time not busy
	steps    []stepFields
	cpu      [][]int64 // cpu[k][slot]: stage k's CPU time; absent (-1) when the record has no stage k
	gpu      [][]int64 // gpu[k][slot]: stage k's GPU time; -1 when unknown or absent
	capacity int       // the most records held; the slices grow to it as records come
	next     int
	full     bool
	cols     columns
	waitBuf  []int64 // scratch of waits: step, ns pairs
}

// stepFields is what a ring slot keeps of a record besides its stage times.
type stepFields struct {
	step, startNs, endNs int64
	busy                 int64 // summed known GPU time of its stages but comm; -1 when none is known
	samples              int32
	loss                 float32
	hasLoss              bool
	numStages            uint8
}

// absent marks a stage time a record does not have.
const absent = -1

// NewStepRing returns a StepRing that holds up to capacity records made with
// the stage list names. Its memory grows with the records it holds, up to
// capacity: a viewer taking agg frames keeps few steps, and a heap of
// rings never filled would only raise the garbage collector's goal, so
// that every allocation lands on pages not touched before.
func NewStepRing(names []string, capacity int) *StepRing {
	w := &StepRing{
		names:    append([]string(nil), names...),
		rankWait: make([]bool, len(names)),
		capacity: max(capacity, 1),
		cpu:      make([][]int64, len(names)),
		gpu:      make([][]int64, len(names)),
	}
	for k, n := range names {
		w.rankWait[k] = ClassOf(n) == ClassComm
	}
	return w
}

// minGrow is the fewest slots a ring grows to at first.
const minGrow = 256

// grow makes room for one more record before the ring is full: the slots
// double, up to the capacity. Only an unfilled ring grows, so its records
// stay in slots 0 to next-1.
func (w *StepRing) grow() {
	w.growTo(min(max(2*len(w.steps), minGrow), w.capacity))
}

// growTo makes the ring's slots n long.
func (w *StepRing) growTo(n int) {
	w.steps = slices.Grow(w.steps, n-len(w.steps))[:n]
	for k := range w.names {
		w.cpu[k] = slices.Grow(w.cpu[k], n-len(w.cpu[k]))[:n]
		w.gpu[k] = slices.Grow(w.gpu[k], n-len(w.gpu[k]))[:n]
	}
}

// Reserve makes room for every record the ring can hold, so that
// adding allocates nothing: a trainer's own window fills within seconds, and
// its step path must not allocate while it does.
func (w *StepRing) Reserve() {
	if len(w.steps) < w.capacity {
		w.growTo(w.capacity)
	}
}

// Names returns the stage list of the window.
func (w *StepRing) Names() []string { return w.names }

// Len is the number of records held.
func (w *StepRing) Len() int {
	if w.full {
		return len(w.steps)
	}
	return w.next
}

// Add copies r into the window, evicting the oldest record when full.
func (w *StepRing) Add(r *Record) {
	if !w.full && w.next == len(w.steps) {
		w.grow()
	}
	slot := w.next
	w.steps[slot] = stepFields{step: r.Step, startNs: r.StartNs, endNs: r.EndNs, busy: w.busyOf(r.GPU[:r.NumStages]),
		samples: r.Samples, loss: r.Loss, hasLoss: r.HasLoss, numStages: uint8(r.NumStages)}
	for k := range w.names {
		c, g := int64(absent), int64(absent)
		if k < r.NumStages {
			c, g = r.CPU[k], r.GPU[k]
		}
		w.cpu[k][slot], w.gpu[k][slot] = c, g
	}
	w.next++
	if w.next == w.capacity {
		w.next, w.full = 0, true
	}
}

// busyOf is the summed known GPU time of gpu's stages that are not waits
// for other ranks, -1 when none is known.
func (w *StepRing) busyOf(gpu []int64) int64 {
	busy := int64(absent)
	for k, g := range gpu {
		if g >= 0 && (k >= len(w.rankWait) || !w.rankWait[k]) {
			busy = max(busy, 0) + g
		}
	}
	return busy
}

// Cap is how many records the ring holds at most.
func (w *StepRing) Cap() int { return w.capacity }

// Reset drops every record.
func (w *StepRing) Reset() { w.next, w.full = 0, false }

// UpdateGPU sets the GPU times of a step still held in the window. It
// reports whether the step was found.
func (w *StepRing) UpdateGPU(step int64, gpu []int64) bool {
	for i := w.Len() - 1; i >= 0; i-- {
		slot := w.slot(i)
		f := &w.steps[slot]
		if f.step != step {
			continue
		}
		gpu = gpu[:min(len(gpu), int(f.numStages))]
		for k := range min(len(gpu), len(w.names)) {
			w.gpu[k][slot] = gpu[k]
		}
		f.busy = w.busyOf(gpu)
		return true
	}
	return false
}

// Prepend puts recs, records older than those held (oldest first), before
// them: a viewer's backfill of the steps a trainer finished before it
// attached. Those of recs not older than the oldest record held (by step
// number) are left out, as the steps that came already; when the ring
// cannot hold them all, the oldest go.
func (w *StepRing) Prepend(recs []Record) {
	if n := w.Len(); n > 0 {
		oldest := w.fields(0).step
		k := 0
		for k < len(recs) && recs[k].Step < oldest {
			k++
		}
		recs = recs[:k]
	}
	if len(recs) == 0 {
		return
	}
	held := NewStepRing(w.names, w.capacity)
	for i := range w.Len() {
		held.copySlot(w, w.slot(i))
	}
	w.Reset()
	for i := range recs {
		w.Add(&recs[i])
	}
	for i := range held.Len() {
		w.copySlot(held, held.slot(i))
	}
}

// copySlot adds the record in slot of src, a ring of the same stage list,
// as it is held there.
func (w *StepRing) copySlot(src *StepRing, slot int) {
	if !w.full && w.next == len(w.steps) {
		w.grow()
	}
	w.steps[w.next] = src.steps[slot]
	for k := range w.names {
		w.cpu[k][w.next], w.gpu[k][w.next] = src.cpu[k][slot], src.gpu[k][slot]
	}
	w.next++
	if w.next == w.capacity {
		w.next, w.full = 0, true
	}
}

// slot is where the i-th record, oldest first, is held.
func (w *StepRing) slot(i int) int {
	if !w.full {
		return i
	}
	return (w.next + i) % len(w.steps)
}

// fields returns the step fields of the i-th record, oldest first.
func (w *StepRing) fields(i int) *stepFields { return &w.steps[w.slot(i)] }

// at returns the i-th record held, oldest first (0 <= i < Len), with the
// times of the ring's stages.
func (w *StepRing) at(i int) Record {
	slot := w.slot(i)
	f := &w.steps[slot]
	r := Record{Step: f.step, StartNs: f.startNs, EndNs: f.endNs, Samples: f.samples,
		HasLoss: f.hasLoss, Loss: f.loss, NumStages: int(f.numStages)}
	r.ClearGPU()
	for k := range min(len(w.names), r.NumStages) {
		r.CPU[k], r.GPU[k] = w.cpu[k][slot], w.gpu[k][slot]
	}
	return r
}

// First returns the oldest record; ok is false when the ring is empty.
func (w *StepRing) First() (r Record, ok bool) {
	if w.Len() == 0 {
		return Record{}, false
	}
	return w.at(0), true
}

// Last returns the newest record; ok is false when the ring is empty.
func (w *StepRing) Last() (r Record, ok bool) {
	if w.Len() == 0 {
		return Record{}, false
	}
	return w.at(w.Len() - 1), true
}

// Summarize aggregates the records that ended within d of the newest one
// (all records when d <= 0).
func (w *StepRing) Summarize(d time.Duration) Summary {
	return w.summarize(w.firstWithin(d), w.Len())
}

// SummarizeBetween aggregates the records that ended in [fromNs, toNs]
// (Unix nanoseconds), skipping the first skip records the window holds.
func (w *StepRing) SummarizeBetween(skip int, fromNs, toNs int64) Summary {
	first, end := w.between(skip, fromNs, toNs)
	return w.summarize(first, end)
}

// SummarizeSince aggregates the records that started at or after fromNs
// (Unix nanoseconds): a window that holds no step begun earlier.
func (w *StepRing) SummarizeSince(fromNs int64) Summary {
	first := 0
	for first < w.Len() && w.fields(first).startNs < fromNs {
		first++
	}
	return w.summarize(first, w.Len())
}

// head is the part of a summary of records first..end-1 (first < end)
// that needs no column: counts, last step, span and rates.
func (w *StepRing) head(first, end int, samples int64) Summary {
	n := end - first
	last := w.fields(end - 1)
	s := Summary{Steps: n, LastStep: last.step, LastEndNs: last.endNs, SpanNs: last.endNs - w.fields(first).startNs}
	if s.SpanNs > 0 {
		sec := float64(s.SpanNs) / 1e9
		s.StepsPerSec = float64(n) / sec
		s.SamplesPerSec = float64(samples) / sec
	}
	return s
}

// between is the index range of the records that ended in [fromNs, toNs],
// past the first skip.
func (w *StepRing) between(skip int, fromNs, toNs int64) (first, end int) {
	first, end = skip, w.Len()
	for first < end && w.fields(first).endNs < fromNs {
		first++
	}
	for end > first && w.fields(end-1).endNs > toNs {
		end--
	}
	return first, end
}

// summarize aggregates the records first..end-1 (oldest first).
func (w *StepRing) summarize(first, end int) Summary {
	s := w.aggregate(first, end)
	if s.Steps > 0 {
		s.HasLoss, s.LastLoss = w.lastLoss(first, end)
		c := &w.cols
		if k := slices.Index(w.names, DataWait); k >= 0 {
			s.Waits = w.waits(first, end, k, s.WallP50, typical(c.wall), typical(c.cpu[k]))
		}
		for _, name := range PauseStages {
			if k := slices.Index(w.names, name); k >= 0 {
				s.addPause(name, w.waits(first, end, k, s.WallP50, typical(c.wall), typical(c.cpu[k])))
			}
		}
	}
	return s
}

// addPause keeps stage name's pattern p when some of its steps spiked.
func (s *Summary) addPause(name string, p *WaitPattern) {
	if p != nil && p.Spikes > 0 {
		s.Pauses = append(s.Pauses, Pause{Stage: name, WaitPattern: *p})
	}
}

// mean is the mean of v, 0 when v is empty.
func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// aggregate is the summary of records first..end-1 with the mean, p50 and
// p99 of every column, without the loss and the wait pattern.
func (w *StepRing) aggregate(first, end int) Summary {
	if end <= first {
		return Summary{}
	}
	c := w.gather(first, end)
	s := w.head(first, end, c.samples)
	s.WallMean, s.WallP50, s.WallP99 = quantiles(c.wall)
	s.Stages = make([]StageStat, len(w.names))
	for k, name := range w.names {
		st := StageStat{Name: name, HasGPU: len(c.gpu[k]) > 0}
		st.Mean, st.P50, st.P99 = quantiles(c.cpu[k])
		st.GPUMean, _, st.GPUP99 = quantiles(c.gpu[k])
		s.Stages[k] = st
	}
	s.Finish(mean(c.busy))
	return s
}

// Finish sets what follows from the wall and stage means: each stage's
// share of the step and, when a stage has GPU times, how busy the GPU was
// (busyMean: the mean summed GPU time of the records that have one). A
// summary built from means alone (a baseline) calls it last.
func (s *Summary) Finish(busyMean float64) {
	for k := range s.Stages {
		st := &s.Stages[k]
		if s.WallMean > 0 {
			st.Share = st.Mean / s.WallMean
		}
		s.HasGPU = s.HasGPU || st.HasGPU
	}
	if s.HasGPU {
		s.GPUBusyMean = busyMean
		if s.WallMean > 0 {
			s.GPUBusy = min(1, s.GPUBusyMean/s.WallMean)
		}
	}
}

// columns is the values of a span of records that a summary selects
// from, one slice per quantity (valid until the next gather).
type columns struct {
	wall    []float64            // step wall times
	cpu     [MaxStages][]float64 // stage k's CPU times, of the records that have stage k
	gpu     [MaxStages][]float64 // stage k's known GPU times
	busy    []float64            // summed GPU stage time, of the records that have one
	samples int64                // samples of all the records
}

// gather fills w.cols from records first..end-1, a column at a time over
// the ring's (at most two) contiguous runs of slots.
func (w *StepRing) gather(first, end int) *columns {
	c := &w.cols
	n := end - first
	// Room up front for the columns every record fills: one allocation
	// when the span outgrows them, not a doubling per append. GPU columns,
	// often empty, grow as they fill.
	c.wall, c.busy, c.samples = slices.Grow(c.wall[:0], n), c.busy[:0], 0
	for k := range w.names {
		c.cpu[k], c.gpu[k] = slices.Grow(c.cpu[k][:0], n), c.gpu[k][:0]
	}
	for _, run := range w.runs(first, end) {
		for _, f := range w.steps[run[0]:run[1]] {
			c.wall = append(c.wall, float64(f.endNs-f.startNs))
			c.samples += int64(f.samples)
			if f.busy >= 0 {
				c.busy = append(c.busy, float64(f.busy))
			}
		}
		for k := range w.names {
			c.cpu[k] = appendKnown(c.cpu[k], w.cpu[k][run[0]:run[1]])
			c.gpu[k] = appendKnown(c.gpu[k], w.gpu[k][run[0]:run[1]])
		}
	}
	return c
}

// appendKnown appends the times of v that are not absent or unknown.
func appendKnown(dst []float64, v []int64) []float64 {
	for _, x := range v {
		if x >= 0 {
			dst = append(dst, float64(x))
		}
	}
	return dst
}

// runs is the slots of records first..end-1 (oldest first) as two
// half-open ranges [from, to) of the ring, the second often empty.
func (w *StepRing) runs(first, end int) [2][2]int {
	if first >= end {
		return [2][2]int{}
	}
	if !w.full {
		return [2][2]int{{first, end}}
	}
	a, b := (w.next+first)%len(w.steps), (w.next+end)%len(w.steps)
	if a < b {
		return [2][2]int{{a, b}}
	}
	return [2][2]int{{a, len(w.steps)}, {0, b}}
}

// quantiles returns the mean, p50 and p99 of v, reordering v.
func quantiles(v []float64) (avg, p50, p99 float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	avg = mean(v) // before the selections reorder v
	k99, k50 := rank(len(v), 0.99), rank(len(v), 0.50)
	p99 = selectKth(v, k99)
	p50 = selectKth(v[:k99+1], k50) // selection left v[:k99] <= v[k99]
	return avg, p50, p99
}

// typical returns the TypicalRank quantile of v, which quantiles has
// reordered: the values up to its median lie before it, so the selection
// looks at those alone.
func typical(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	k50 := rank(len(v), 0.50)
	return selectKth(v[:k50+1], rank(len(v), TypicalRank))
}

// rank is the 0-based nearest-rank index of the q-quantile of n values.
func rank(n int, q float64) int {
	r := int(q*float64(n)+0.999999) - 1
	return max(0, min(r, n-1))
}

// selectKth reorders v so that v[k] holds the value a sort would put there,
// with nothing larger before it and nothing smaller after it, and returns
// v[k]. A viewer summarizes thousands of steps for up to 16 stages every
// refresh; a full sort of each was once its largest cost. This is Floyd
// and Rivest's selection: on a large range it first selects within a
// small sample around where v[k] must fall, so the partition around that
// pivot leaves few values on k's side, about n + min(k, n-k) comparisons
// where a median-of-three quickselect makes about 3n.
func selectKth(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for hi > lo {
		if hi-lo > sampleAbove {
			lo2, hi2 := sampleRange(lo, hi, k)
			selectKth(v[lo2:hi2+1], k-lo2)
		}
		j := partitionAt(v, lo, hi, k)
		if j <= k {
			lo = j + 1
		}
		if k <= j {
			hi = j - 1
		}
	}
	return v[k]
}

// sampleAbove is the range length above which selectKth samples first.
const sampleAbove = 600

// sampleRange is the part of [lo, hi] to select v[k] within first: large
// enough that the true k-th value almost surely falls in it.
func sampleRange(lo, hi, k int) (int, int) {
	n := float64(hi - lo + 1)
	i := float64(k - lo + 1)
	z := math.Log(n)
	s := 0.5 * math.Exp(2*z/3)
	sd := 0.5 * math.Sqrt(z*s*(n-s)/n)
	if i < n/2 {
		sd = -sd
	}
	return max(lo, int(float64(k)-i*s/n+sd)), min(hi, int(float64(k)+(n-i)*s/n+sd))
}

// partitionAt partitions v[lo..hi] around the value at k, which it
// leaves at the returned index j: nothing larger before j, nothing
// smaller after it.
func partitionAt(v []float64, lo, hi, k int) int {
	t := v[k]
	v[lo], v[k] = v[k], v[lo]
	if v[hi] > t {
		v[hi], v[lo] = v[lo], v[hi]
	}
	i, j := lo, hi
	for i < j {
		v[i], v[j] = v[j], v[i]
		i++
		j--
		for v[i] < t {
			i++
		}
		for v[j] > t {
			j--
		}
	}
	if v[lo] == t {
		v[lo], v[j] = v[j], v[lo]
	} else {
		j++
		v[j], v[hi] = v[hi], v[j]
	}
	return j
}

func (w *StepRing) firstWithin(d time.Duration) int {
	n := w.Len()
	if n == 0 || d <= 0 {
		return 0
	}
	cut := w.fields(n-1).endNs - int64(d)
	i := n
	for i > 0 && w.fields(i-1).endNs > cut {
		i--
	}
	if i == n {
		i = n - 1
	}
	return i
}

func (w *StepRing) lastLoss(first, end int) (bool, float32) {
	for i := end - 1; i >= first; i-- {
		if f := w.fields(i); f.hasLoss {
			return true, f.loss
		}
	}
	return false, 0
}
