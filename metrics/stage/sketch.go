package stage

import (
	"errors"
	"fmt"
	"math/bits"
)

// Sketch is a mergeable histogram of nanosecond times, the form in which
// an aggregate carries a column (docs/protocol.md, agg frames). Times
// below 128 ns have a bin each; above, every power of two is split into
// 64 bins of equal width, so a bin's midpoint is within 1/128 of any time
// it holds. A time's bin is found with a bit length and a shift, cheap in
// Go and in Python alike, and two sketches merge by adding counts.
type Sketch struct {
	N   int64 `json:"n"`   // times counted
	Sum int64 `json:"sum"` // their sum, exact: means need no bins
	// Bins holds index, count pairs flattened, indexes strictly
	// ascending, counts positive, adding up to N.
	Bins []int64 `json:"bins,omitempty"`
}

// Sketch layout.
const (
	sketchSub = 64 // bins per power of two above 2*sketchSub ns
	// MaxSketchIndex is the bin of the largest int64.
	MaxSketchIndex = (63-7)*sketchSub + 2*sketchSub - 1
)

// SketchIndex is the bin of a time of v ns (v >= 0).
func SketchIndex(v int64) int {
	if v < 2*sketchSub {
		return int(max(v, 0))
	}
	shift := bits.Len64(uint64(v)) - 7
	return shift*sketchSub + int(v>>shift)
}

// SketchValue is what a time in bin i stands for: the bin's midpoint.
func SketchValue(i int) float64 {
	if i < 2*sketchSub {
		return float64(i)
	}
	shift := i/sketchSub - 1
	lo := int64(i-shift*sketchSub) << shift
	return float64(lo) + float64(int64(1)<<shift-1)/2
}

// Mean is the mean time, 0 when N is 0.
func (s *Sketch) Mean() float64 {
	if s.N == 0 {
		return 0
	}
	return float64(s.Sum) / float64(s.N)
}

// Validate checks the rules of Bins and that the counts add up to N; a
// sketch without bins is a count and a sum alone (a brief column,
// Aggregate.Brief).
func (s *Sketch) Validate() error {
	if s.N < 0 || s.Sum < 0 {
		return errors.New("negative count or sum")
	}
	if len(s.Bins)%2 != 0 {
		return errors.New("bins of odd length (want index, count pairs)")
	}
	var n int64
	prev := int64(-1)
	for j := 0; j < len(s.Bins); j += 2 {
		i, c := s.Bins[j], s.Bins[j+1]
		if i <= prev || i > MaxSketchIndex {
			return fmt.Errorf("bin index %d after %d (want ascending, at most %d)", i, prev, MaxSketchIndex)
		}
		if c <= 0 || c > s.N-n {
			return fmt.Errorf("bin %d count %d (want 1..%d)", i, c, s.N-n)
		}
		prev, n = i, n+c
	}
	if len(s.Bins) > 0 && n != s.N {
		return fmt.Errorf("bins count %d times, n says %d", n, s.N)
	}
	return nil
}

// sketchBuilder counts times into dense bins between the lowest and
// highest used, for one column of an Aggregator.
type sketchBuilder struct {
	counts []int64 // counts[i]: bin i; grown on demand
	lo, hi int     // bins used: [lo, hi]; lo > hi when none
	n, sum int64
}

func (b *sketchBuilder) add(v int64) {
	i := SketchIndex(v)
	if i >= len(b.counts) {
		b.counts = append(b.counts, make([]int64, i+1-len(b.counts)+sketchSub)...)
	}
	if b.n == 0 {
		b.lo, b.hi = i, i
	}
	b.lo, b.hi = min(b.lo, i), max(b.hi, i)
	b.counts[i]++
	b.n++
	b.sum += v
}

// take returns the sketch counted so far and starts over.
func (b *sketchBuilder) take() Sketch {
	s := Sketch{N: b.n, Sum: b.sum}
	if b.n > 0 {
		for i := b.lo; i <= b.hi; i++ {
			if c := b.counts[i]; c > 0 {
				s.Bins = append(s.Bins, int64(i), c)
				b.counts[i] = 0
			}
		}
	}
	b.n, b.sum = 0, 0
	return s
}

// sketchMerge adds sketches' bins densely and answers quantiles of all of
// them together; it is reused from one column to the next.
type sketchMerge struct {
	sketchBuilder
}

func (m *sketchMerge) reset() {
	if m.n > 0 {
		clear(m.counts[m.lo : m.hi+1])
	}
	m.n, m.sum = 0, 0
}

func (m *sketchMerge) merge(s *Sketch) {
	for j := 0; j+1 < len(s.Bins); j += 2 {
		i, c := int(s.Bins[j]), s.Bins[j+1]
		if i >= len(m.counts) {
			m.counts = append(m.counts, make([]int64, i+1-len(m.counts)+sketchSub)...)
		}
		if m.n == 0 {
			m.lo, m.hi = i, i
		}
		m.lo, m.hi = min(m.lo, i), max(m.hi, i)
		m.counts[i] += c
		m.n += c
	}
	m.sum += s.Sum
}

// quantile is the nearest-rank q-quantile of the merged times, as the
// midpoint of its bin; 0 when there are none.
func (m *sketchMerge) quantile(q float64) float64 {
	if m.n == 0 {
		return 0
	}
	r := int64(rank(int(m.n), q)) // 0-based
	var seen int64
	for i := m.lo; i <= m.hi; i++ {
		seen += m.counts[i]
		if seen > r {
			return SketchValue(i)
		}
	}
	return SketchValue(m.hi)
}
