package ipc

import (
	"bytes"
	"errors"
	"strconv"
	"sync"

	"github.com/pipetop/pipetop/metrics/stage"
)

// errNotFast means a steps frame is not in the compact form appendSteps
// writes; DecodeFrame then falls back to encoding/json, which accepts any
// valid form. The fast path exists because a viewer decodes every step of
// a trainer running at thousands of steps a second.
var errNotFast = errors.New("not a compact steps frame")

const (
	stepsPrefix    = `{"type":"steps","steps":[`
	backfillPrefix = `{"type":"backfill","steps":[`
)

// maxPresize is the most steps decodeStepsFast allocates room for before
// parsing them.
const maxPresize = 1024

// stepKey starts every step of a compact steps frame.
var stepKey = []byte(`{"step":`)

// decodeStepsFast parses a steps frame, or a backfill frame (the same
// steps, sent once: a viewer of 64 ranks reads 64 of up to 2,048 steps as
// it attaches), written in exactly the compact form of appendSteps (keys
// in that order, no spaces).
func decodeStepsFast(line []byte) (*Frame, error) {
	p := fastParser{b: line}
	f := &Frame{Type: TypeSteps}
	switch {
	case p.lit(stepsPrefix):
	case p.lit(backfillPrefix):
		f.Type = TypeBackfill
	default:
		return nil, errNotFast
	}
	if p.lit("]}") {
		return f, p.end()
	}
	// Room of the right size up front: growing a slice of 300-byte records
	// by doubling cost a viewer of many ranks more than parsing. Capped,
	// so that a hostile frame cannot make it allocate much.
	f.Steps = stepSlice(min(bytes.Count(line[p.i:], stepKey), maxPresize))
	for {
		f.Steps = append(f.Steps, stage.Record{})
		if err := p.step(&f.Steps[len(f.Steps)-1]); err != nil {
			return nil, err
		}
		if p.lit(",") {
			continue
		}
		if !p.lit("]}") {
			return nil, errNotFast
		}
		return f, p.end()
	}
}

// stepSlices holds the step slices of frames their reader is done with
// (Recycle). A trainer at 1,000 steps/s sends a viewer 300 KB of records a
// second; a fresh slice for each frame came from pages the runtime had
// returned to the system, and faulting them in again cost more than
// parsing the steps.
var stepSlices sync.Pool

// stepSlice returns an empty slice with room for at least n records.
func stepSlice(n int) []stage.Record {
	if s, ok := stepSlices.Get().(*[]stage.Record); ok && cap(*s) >= n {
		return (*s)[:0]
	}
	return make([]stage.Record, 0, n)
}

// Recycle hands f's steps back for the decoding of later frames: the
// caller must hold no reference to f.Steps afterwards. Optional; a frame
// not recycled is simply collected.
func Recycle(f *Frame) {
	if f == nil || cap(f.Steps) == 0 {
		return
	}
	s := f.Steps[:0]
	f.Steps = nil
	stepSlices.Put(&s)
}

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) end() error {
	if p.i != len(p.b) {
		return errNotFast
	}
	return nil
}

// lit consumes s if the input continues with it.
func (p *fastParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// number returns the end of the JSON number at p.i, or -1. JSON numbers
// are stricter than strconv: no leading zeros, '+', or bare '.'.
func (p *fastParser) number() int {
	b, j := p.b, p.i
	digits := func() bool {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case !digits():
		return -1
	}
	if j < len(b) && b[j] == '.' {
		j++
		if !digits() {
			return -1
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			return -1
		}
	}
	return j
}

// int reads a JSON integer in one pass. Up to 19 digits cannot overflow
// a uint64, so only the int64 range is checked, once, at the end.
func (p *fastParser) int() (int64, error) {
	b, k := p.b, p.i
	neg := k < len(b) && b[k] == '-'
	if neg {
		k++
	}
	first := k
	var v uint64
	for k < len(b) && b[k]-'0' <= 9 {
		v = 10*v + uint64(b[k]-'0')
		k++
	}
	switch digits := k - first; {
	case digits == 0, digits > 1 && b[first] == '0': // JSON allows no leading zero
		return 0, errNotFast
	case digits > 19, !neg && v > 1<<63-1, neg && v > 1<<63:
		return 0, errNotFast // out of int64 range (the fallback says so)
	}
	p.i = k
	if neg {
		return -int64(v), nil
	}
	return int64(v), nil
}

func (p *fastParser) float() (float32, error) {
	j := p.number()
	if j < 0 {
		return 0, errNotFast
	}
	v, err := strconv.ParseFloat(string(p.b[p.i:j]), 32)
	if err != nil {
		return 0, errNotFast
	}
	p.i = j
	return float32(v), nil
}

// ints reads a JSON array of at most len(dst) integers into dst and
// returns how many it read.
func (p *fastParser) ints(dst []int64) (int, error) {
	if !p.lit("[") {
		return 0, errNotFast
	}
	if p.lit("]") {
		return 0, nil
	}
	for n := 0; ; {
		if n == len(dst) {
			return 0, errNotFast // too many: the fallback names the error
		}
		v, err := p.int()
		if err != nil {
			return 0, err
		}
		dst[n] = v
		n++
		if p.lit(",") {
			continue
		}
		if p.lit("]") {
			return n, nil
		}
		return 0, errNotFast
	}
}

// step reads one step object into r.
func (p *fastParser) step(r *stage.Record) error {
	var err error
	field := func(key string, dst *int64) {
		if err != nil || !p.lit(key) {
			err = errNotFast
			return
		}
		*dst, err = p.int()
	}
	if !p.lit("{") {
		return errNotFast
	}
	var n int64
	field(`"step":`, &r.Step)
	field(`,"t0":`, &r.StartNs)
	field(`,"t1":`, &r.EndNs)
	field(`,"n":`, &n)
	if err != nil || n < -1<<31 || n > 1<<31-1 {
		return errNotFast
	}
	r.Samples = int32(n)
	if p.lit(`,"loss":`) {
		if r.Loss, err = p.float(); err != nil {
			return err
		}
		r.HasLoss = true
	}
	if !p.lit(`,"cpu":`) {
		return errNotFast
	}
	if r.NumStages, err = p.ints(r.CPU[:]); err != nil {
		return err
	}
	r.ClearGPU()
	if p.lit(`,"gpu":`) {
		if _, err = p.ints(r.GPU[:]); err != nil {
			return err
		}
	}
	if !p.lit("}") {
		return errNotFast
	}
	return nil
}
