// Package metrics holds what pipetop measures on the host: the Sampler
// contract shared by every source (GPU, CPU, processes) and the Value type
// that makes every number carry its source and whether it is supported.
//
// Each source lives in its own sub-package (metrics/gpu, metrics/host), much
// like the collectors of prometheus/node_exporter: one type per source, one
// Sample call per refresh, and typed snapshot getters that a terminal view or
// an exporter read after sampling. History for sparklines lives in
// metrics/ring.
package metrics

import (
	"strconv"
	"time"
)

// Sampler is one source of measurements. Sample reads the source once; the
// implementation keeps whatever it needs between calls (previous counters
// for rates) and exposes the result through its own typed getter, e.g.
// gpu.Sampler.Snapshot or host.CPUSampler.Snapshot.
//
// Sample returns a non-nil error when the reading is missing or partial; the
// error text is one line meant for a status bar. A failed Sample never
// invalidates later ones: callers keep calling at their interval.
// Implementations are safe for one goroutine calling Sample while others
// read snapshots.
type Sampler interface {
	// Name is a short, stable identifier of the source ("gpu", "cpu", "proc").
	Name() string
	// Sample takes one reading; now is the caller's clock for rate math.
	Sample(now time.Time) error
}

// State says whether a Value holds a reading. The zero State is Missing so
// that a Value nobody filled in is never mistaken for a real zero.
type State uint8

const (
	// Missing means no reading yet: the first of two samples a rate needs,
	// or a source that was not asked.
	Missing State = iota
	// OK means V holds a real reading.
	OK
	// NotSupported means the device or kernel does not offer this metric;
	// it is a property of the hardware, not an error.
	NotSupported
	// Failed means the source was asked and returned an error this time.
	Failed
)

// String names the state for logs and tests.
func (s State) String() string {
	switch s {
	case Missing:
		return "missing"
	case OK:
		return "ok"
	case NotSupported:
		return "not supported"
	case Failed:
		return "failed"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Value is one number with its provenance. Source names where it came from
// in words a user can look up ("GPM", "NVML kernel-active", "/proc/stat").
// V is meaningful only when State is OK.
type Value struct {
	V      float64
	Source string
	State  State
}

// Of returns an OK Value.
func Of(v float64, source string) Value { return Value{V: v, Source: source, State: OK} }

// Unsupported returns a Value marking a metric the device does not offer.
func Unsupported(source string) Value { return Value{Source: source, State: NotSupported} }

// Failure returns a Value marking a metric whose read failed this time.
func Failure(source string) Value { return Value{Source: source, State: Failed} }

// Pending returns a Value still waiting for its first complete reading
// (rates and GPM metrics need two samples).
func Pending(source string) Value { return Value{Source: source, State: Missing} }

// Valid reports whether V holds a reading.
func (v Value) Valid() bool { return v.State == OK }

// Or returns V when valid and def otherwise; handy for sparklines.
func (v Value) Or(def float64) float64 {
	if v.State == OK {
		return v.V
	}
	return def
}
