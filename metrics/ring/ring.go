// Package ring keeps a fixed-size history of float64 samples for sparklines.
// A Ring allocates once, at New; Push, Last, Max and Values (with a large
// enough dst) never allocate.
package ring

import "math"

// Ring is a fixed-capacity FIFO of float64 samples; when full, Push drops the
// oldest. NaN is a valid sample meaning "no reading" (a gap); Max skips it.
// A Ring is not safe for concurrent use.
type Ring struct {
	buf  []float64
	next int // index the next Push writes
	n    int // number of held samples, <= len(buf)
}

// New returns an empty Ring holding at most capacity samples. It panics if
// capacity < 1, a programming error.
func New(capacity int) *Ring {
	if capacity < 1 {
		panic("ring: capacity must be at least 1")
	}
	return &Ring{buf: make([]float64, capacity)}
}

// Push appends v, dropping the oldest sample when the ring is full.
func (r *Ring) Push(v float64) {
	r.buf[r.next] = v
	r.next++
	if r.next == len(r.buf) {
		r.next = 0
	}
	if r.n < len(r.buf) {
		r.n++
	}
}

// Last returns the newest sample; ok is false when the ring is empty.
func (r *Ring) Last() (v float64, ok bool) {
	if r.n == 0 {
		return 0, false
	}
	i := r.next - 1
	if i < 0 {
		i = len(r.buf) - 1
	}
	return r.buf[i], true
}

// Len returns the number of samples held.
func (r *Ring) Len() int { return r.n }

// Cap returns the capacity given to New.
func (r *Ring) Cap() int { return len(r.buf) }

// Max returns the largest non-NaN sample held; ok is false when there is none.
func (r *Ring) Max() (m float64, ok bool) {
	m = math.Inf(-1)
	for i := 0; i < r.n; i++ {
		v := r.buf[i]
		if v > m { // false for NaN
			m, ok = v, true
		}
	}
	if !ok {
		return 0, false
	}
	return m, true
}

// Values writes the held samples, oldest first, into dst[:0] and returns it;
// it allocates only when cap(dst) < Len.
func (r *Ring) Values(dst []float64) []float64 {
	dst = dst[:0]
	start := r.next - r.n
	if start < 0 {
		start += len(r.buf)
		dst = append(dst, r.buf[start:]...)
		return append(dst, r.buf[:r.next]...)
	}
	return append(dst, r.buf[start:r.next]...)
}

// Reset empties the ring without releasing its storage.
func (r *Ring) Reset() { r.next, r.n = 0, 0 }
