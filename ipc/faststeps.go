package ipc

import (
	"errors"
	"strconv"
)

// errNotFast means a steps frame is not in the compact form appendSteps
// writes; DecodeFrame then falls back to encoding/json, which accepts any
// valid form. The fast path exists because a viewer decodes every step of
// a trainer running at thousands of steps a second.
var errNotFast = errors.New("not a compact steps frame")

const stepsPrefix = `{"type":"steps","steps":[`

// decodeStepsFast parses a steps frame written in exactly the compact form
// of appendSteps (keys in that order, no spaces).
func decodeStepsFast(line []byte) (*Frame, error) {
	p := fastParser{b: line}
	if !p.lit(stepsPrefix) {
		return nil, errNotFast
	}
	f := &Frame{Type: TypeSteps}
	if p.lit("]}") {
		return f, p.end()
	}
	for {
		s, err := p.step()
		if err != nil {
			return nil, err
		}
		f.Steps = append(f.Steps, s)
		if p.lit(",") {
			continue
		}
		if !p.lit("]}") {
			return nil, errNotFast
		}
		return f, p.end()
	}
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
func (p *fastParser) number(frac bool) int {
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
	if !frac {
		return j
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

func (p *fastParser) int() (int64, error) {
	j := p.number(false)
	if j < 0 {
		return 0, errNotFast
	}
	k, neg := p.i, false
	if p.b[k] == '-' {
		k, neg = k+1, true
	}
	var v uint64
	for ; k < j; k++ {
		d := uint64(p.b[k] - '0')
		if v > (1<<63-d)/10 {
			return 0, errNotFast // out of int64 range (the fallback says so)
		}
		v = 10*v + d
	}
	if !neg && v > 1<<63-1 {
		return 0, errNotFast
	}
	p.i = j
	if neg {
		return -int64(v), nil
	}
	return int64(v), nil
}

func (p *fastParser) float() (float32, error) {
	j := p.number(true)
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

func (p *fastParser) ints(dst []int64) ([]int64, error) {
	if !p.lit("[") {
		return nil, errNotFast
	}
	if p.lit("]") {
		return dst, nil
	}
	for {
		v, err := p.int()
		if err != nil {
			return nil, err
		}
		dst = append(dst, v)
		if p.lit(",") {
			continue
		}
		if p.lit("]") {
			return dst, nil
		}
		return nil, errNotFast
	}
}

func (p *fastParser) step() (Step, error) {
	var s Step
	var err error
	field := func(key string, dst *int64) bool {
		if err != nil || !p.lit(key) {
			err = errNotFast
			return false
		}
		*dst, err = p.int()
		return err == nil
	}
	if !p.lit("{") {
		return s, errNotFast
	}
	var n int64
	field(`"step":`, &s.Step)
	field(`,"t0":`, &s.T0)
	field(`,"t1":`, &s.T1)
	field(`,"n":`, &n)
	if err != nil || n < -1<<31 || n > 1<<31-1 {
		return s, errNotFast
	}
	s.N = int32(n)
	if p.lit(`,"loss":`) {
		loss, err := p.float()
		if err != nil {
			return s, err
		}
		s.Loss = &loss
	}
	if !p.lit(`,"cpu":`) {
		return s, errNotFast
	}
	if s.CPU, err = p.ints(make([]int64, 0, 8)); err != nil {
		return s, err
	}
	if p.lit(`,"gpu":`) {
		if s.GPU, err = p.ints(make([]int64, 0, 8)); err != nil {
			return s, err
		}
	}
	if !p.lit("}") {
		return s, errNotFast
	}
	return s, nil
}
