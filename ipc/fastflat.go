package ipc

import (
	"strconv"

	"github.com/pipetop/pipetop/metrics/stage"
)

const (
	loaderPrefix   = `{"type":"loader","loader":{`
	progressPrefix = `{"type":"progress","progress":{`
)

// fastDecoders are the decoders of the frames a viewer gets many of, each
// for the form the publishers write; a line none of them takes goes to
// encoding/json.
var fastDecoders = []func(line []byte) (*Frame, error){decodeStepsFast, decodeAggFast, decodeLoaderFast, decodeProgressFast}

// decodeFast decodes line with the first fast decoder that takes it;
// errNotFast when none does.
func decodeFast(line []byte) (*Frame, error) {
	for _, dec := range fastDecoders {
		if f, err := dec(line); err == nil {
			return f, nil
		}
	}
	return nil, errNotFast
}

// Compact reports whether line is a frame in a form that viewers decode
// without encoding/json (a test of publishers).
func Compact(line []byte) bool {
	_, err := decodeFast(line)
	return err == nil
}

// decodeLoaderFast parses a loader frame whose statistics are a flat
// object, keys in any order, without spaces, as both publishers write it
// for pipetrain's loader and a DataLoader that read no Zarr array: a viewer
// of 64 ranks decodes 64 a second, and encoding/json took six times as
// long. Anything else (the zarr list, a string with escapes or non-ASCII
// bytes, null, an unknown or differently cased key) is errNotFast and goes
// to encoding/json, which decides it.
func decodeLoaderFast(line []byte) (*Frame, error) {
	p := fastParser{b: line}
	if !p.lit(loaderPrefix) {
		return nil, errNotFast
	}
	l := &stage.LoaderStats{}
	if !p.members(func(key []byte) bool { return p.loaderMember(l, key) }) || !p.lit("}") {
		return nil, errNotFast
	}
	return &Frame{Type: TypeLoader, Loader: l}, p.end()
}

// loaderMember reads the value of key into l.
func (p *fastParser) loaderMember(l *stage.LoaderStats, key []byte) bool {
	switch string(key) {
	case "t":
		return p.int64To(&l.TimeNs)
	case "dataset":
		return p.str(&l.Dataset)
	case "workers":
		return p.intTo(&l.Workers)
	case "batch":
		return p.intTo(&l.Batch)
	case "samples_per_sec":
		return p.floatTo(&l.SamplesPerSec)
	case "worker_busy":
		return p.floatTo(&l.WorkerBusy)
	case "queue_depth":
		return p.intTo(&l.QueueDepth)
	case "queue_cap":
		return p.intTo(&l.QueueCap)
	case "cache_hit_rate":
		return p.floatTo(&l.CacheHitRate)
	case "read_amp":
		return p.floatTo(&l.ReadAmp)
	case "bytes_read":
		return p.int64To(&l.BytesRead)
	case "bytes_decoded":
		return p.int64To(&l.BytesDecoded)
	case "bytes_used":
		return p.int64To(&l.BytesUsed)
	case "read_ns":
		return p.int64To(&l.ReadNs)
	case "decode_ns":
		return p.int64To(&l.DecodeNs)
	case "collate_ns":
		return p.int64To(&l.CollateNs)
	case "errors":
		return p.int64To(&l.Errors)
	case "source":
		return p.str(&l.Source)
	case "batches_per_sec":
		return p.floatTo(&l.BatchesPerSec)
	case "worker_busy_each":
		return p.floats(&l.WorkerBusyEach)
	case "prefetch_factor":
		return p.intTo(&l.Prefetch)
	case "pin_memory":
		return p.boolTo(&l.PinMemory)
	case "cores":
		return p.intTo(&l.Cores)
	case "length":
		return p.intTo(&l.Length)
	case "persistent_workers":
		return p.boolTo(&l.PersistentWorkers)
	case "worker_starts":
		return p.intTo(&l.WorkerStarts)
	case "worker_start_ns":
		return p.int64To(&l.WorkerStartNs)
	case "site":
		return p.str(&l.Site)
	case "counted_share":
		return p.floatTo(&l.CountedShare)
	}
	return false
}

// decodeProgressFast parses a progress frame whose sample is a flat
// object, keys in any order (Go and Python write them in different
// orders), without spaces; anything else is errNotFast, as for loader
// frames.
func decodeProgressFast(line []byte) (*Frame, error) {
	p := fastParser{b: line}
	if !p.lit(progressPrefix) {
		return nil, errNotFast
	}
	g := &stage.Progress{}
	if !p.members(func(key []byte) bool { return p.progressMember(g, key) }) || !p.lit("}") {
		return nil, errNotFast
	}
	return &Frame{Type: TypeProgress, Progress: g}, p.end()
}

// progressMember reads the value of key into g.
func (p *fastParser) progressMember(g *stage.Progress, key []byte) bool {
	switch string(key) {
	case "t":
		return p.int64To(&g.TimeNs)
	case "step":
		return p.int64To(&g.Step)
	case "step_t0":
		return p.int64To(&g.StepStartNs)
	case "stage":
		return p.str(&g.Stage)
	case "since":
		return p.int64To(&g.SinceNs)
	case "done":
		return p.int64To(&g.Done)
	}
	return false
}

// members reads the members of an object whose opening brace was read,
// up to and with its closing one, each value by member (false: not in
// the fast form).
func (p *fastParser) members(member func(key []byte) bool) bool {
	if p.lit("}") {
		return true
	}
	for {
		key, ok := p.key()
		if !ok || !member(key) {
			return false
		}
		if p.lit("}") {
			return true
		}
		if !p.lit(",") {
			return false
		}
	}
}

// key reads a member's name and its colon: plain ASCII without escapes.
func (p *fastParser) key() ([]byte, bool) {
	s, ok := p.plain()
	if !ok || !p.lit(":") {
		return nil, false
	}
	return s, true
}

// plain reads a JSON string of printable ASCII without escapes (which
// decodes to itself) and returns its bytes.
func (p *fastParser) plain() ([]byte, bool) {
	if !p.lit(`"`) {
		return nil, false
	}
	for j := p.i; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[p.i:j]
			p.i = j + 1
			return s, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// str reads a plain string into dst.
func (p *fastParser) str(dst *string) bool {
	s, ok := p.plain()
	if ok {
		*dst = string(s)
	}
	return ok
}

// intTo reads a JSON integer into dst.
func (p *fastParser) intTo(dst *int) bool {
	v, err := p.int()
	*dst = int(v)
	return err == nil
}

// int64To reads a JSON integer into dst.
func (p *fastParser) int64To(dst *int64) bool {
	v, err := p.int()
	*dst = v
	return err == nil
}

// floatTo reads a JSON number into dst as encoding/json does (one
// out of float64's range is not fast: the fallback names the error).
func (p *fastParser) floatTo(dst *float64) bool {
	j := p.number()
	if j < 0 {
		return false
	}
	v, err := strconv.ParseFloat(string(p.b[p.i:j]), 64)
	if err != nil {
		return false
	}
	*dst, p.i = v, j
	return true
}

// floats reads a JSON array of numbers into *dst.
func (p *fastParser) floats(dst *[]float64) bool {
	if !p.lit("[") {
		return false
	}
	out := []float64{}
	for !p.lit("]") {
		if len(out) > 0 && !p.lit(",") {
			return false
		}
		var v float64
		if !p.floatTo(&v) {
			return false
		}
		out = append(out, v)
	}
	*dst = out
	return true
}

// boolTo reads true or false into dst.
func (p *fastParser) boolTo(dst *bool) bool {
	switch {
	case p.lit("true"):
		*dst = true
	case p.lit("false"):
		*dst = false
	default:
		return false
	}
	return true
}
