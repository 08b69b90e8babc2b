package ipc

import (
	"bytes"

	"github.com/pipetop/pipetop/metrics/stage"
)

const aggPrefix = `{"type":"agg","agg":{`

// decodeAggFast parses an agg frame written in the compact form both
// publishers write (encoding/json of stage.Aggregate: its keys in that
// order, no spaces); anything else is errNotFast and goes to
// encoding/json. A viewer of 64 ranks decodes 64 of these a second, and
// encoding/json spent most of that growing the bins slices by reflection.
// Every integer of the frame lands in one array, allocated once.
func decodeAggFast(line []byte) (*Frame, error) {
	p := fastParser{b: line}
	if !p.lit(aggPrefix) {
		return nil, errNotFast
	}
	a := &stage.Aggregate{}
	arena := make([]int64, 0, bytes.Count(line, []byte(","))+1)
	var err error
	field := func(key string, dst *int64) {
		if err == nil && !p.lit(key) {
			err = errNotFast
		}
		if err == nil {
			*dst, err = p.int()
		}
	}
	field(`"steps":`, &a.Steps)
	field(`,"first":`, &a.FirstStep)
	field(`,"last":`, &a.LastStep)
	field(`,"t0":`, &a.StartNs)
	field(`,"t1":`, &a.EndNs)
	field(`,"n":`, &a.Samples)
	if err != nil {
		return nil, err
	}
	if p.lit(`,"loss":`) {
		if a.Loss, err = p.loss(); err != nil {
			return nil, err
		}
	}
	if !p.lit(`,"wall":`) || !p.sketch(&a.Wall, &arena) || !p.lit(`,"busy":`) || !p.sketch(&a.Busy, &arena) ||
		!p.lit(`,"cpu":`) || !p.sketches(&a.CPU, &arena) {
		return nil, errNotFast
	}
	if p.lit(`,"gpu":`) && !p.sketches(&a.GPU, &arena) {
		return nil, errNotFast
	}
	if p.lit(`,"waits":`) {
		if a.Waits, err = p.intList(&arena); err != nil {
			return nil, err
		}
	}
	if p.lit(`,"pauses":`) {
		if a.Pauses, err = p.intList(&arena); err != nil {
			return nil, err
		}
	}
	if !p.lit("}}") {
		return nil, errNotFast
	}
	return &Frame{Type: TypeAgg, Agg: a}, p.end()
}

// loss reads {"step":S,"value":V}.
func (p *fastParser) loss() (*stage.Loss, error) {
	l := &stage.Loss{}
	var err error
	if !p.lit(`{"step":`) {
		return nil, errNotFast
	}
	if l.Step, err = p.int(); err != nil {
		return nil, err
	}
	if !p.lit(`,"value":`) {
		return nil, errNotFast
	}
	if l.Value, err = p.float(); err != nil {
		return nil, err
	}
	if !p.lit("}") {
		return nil, errNotFast
	}
	return l, nil
}

// sketch reads {"n":N,"sum":S[,"bins":[...]]} into s, its bins in arena.
func (p *fastParser) sketch(s *stage.Sketch, arena *[]int64) bool {
	var err error
	if !p.lit(`{"n":`) {
		return false
	}
	if s.N, err = p.int(); err != nil || !p.lit(`,"sum":`) {
		return false
	}
	if s.Sum, err = p.int(); err != nil {
		return false
	}
	if p.lit(`,"bins":`) {
		if s.Bins, err = p.intList(arena); err != nil {
			return false
		}
	}
	return p.lit("}")
}

// sketches reads a JSON array of sketches into *dst.
func (p *fastParser) sketches(dst *[]stage.Sketch, arena *[]int64) bool {
	if !p.lit("[") {
		return false
	}
	if p.lit("]") {
		*dst = []stage.Sketch{}
		return true
	}
	out := make([]stage.Sketch, 0, stage.MaxStages)
	for {
		if len(out) == stage.MaxStages+1 {
			return false // too many: the fallback names the error
		}
		out = append(out, stage.Sketch{})
		if !p.sketch(&out[len(out)-1], arena) {
			return false
		}
		if p.lit("]") {
			*dst = out
			return true
		}
		if !p.lit(",") {
			return false
		}
	}
}

// intList reads a JSON array of integers onto the end of arena and
// returns them (nil when empty), capped so that later appends to arena
// cannot write into them.
func (p *fastParser) intList(arena *[]int64) ([]int64, error) {
	if !p.lit("[") {
		return nil, errNotFast
	}
	if p.lit("]") {
		return nil, nil
	}
	from := len(*arena)
	for {
		v, err := p.int()
		if err != nil {
			return nil, err
		}
		*arena = append(*arena, v)
		if p.lit("]") {
			a := *arena
			return a[from:len(a):len(a)], nil
		}
		if !p.lit(",") {
			return nil, errNotFast
		}
	}
}
