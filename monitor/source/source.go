// Package source is the interface every host sampler of the monitor
// implements: CPU, GPUs, the trainer's processes, and whatever comes next.
// A source samples at each refresh and owns its part of the snapshot: it
// writes it (Fill), and saves and loads it by its name (Part), so that
// recordings keep it and replay restores it without knowing what it is.
// A source is added to the table it belongs to: monitor/sources/host for
// one that needs no NVML (pipetrain records those too), monitor/sources
// for one that does; its metrics, if any, are an entry of package export
// under its name (docs/architecture.md, "Add a source").
package source

import (
	"encoding/json"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Target is what the sources watch besides the machine: the attached
// trainer's process (its pid in this namespace as seen from the host), 0
// when there is none.
type Target struct {
	PID int
	// TrainingTID is the training thread's id from the hello, 0 when the
	// trainer did not say or lives in another pid namespace.
	TrainingTID int
}

// Part is a source's own part of the snapshot, kept in recordings under
// the source's name.
type Part interface {
	// Name names the source: the key of its part in a recording and its
	// label in the pipetop_sampler_* metrics ("cpu", "gpu").
	Name() string
	// Save returns the source's part of s as JSON; nil when the source
	// keeps nothing.
	Save(s *snapshot.Snapshot) (json.RawMessage, error)
	// Load sets the source's part of s from what Save returned.
	Load(s *snapshot.Snapshot, raw json.RawMessage) error
}

// Source is one registered sampler.
type Source interface {
	Part
	// Sample reads the source at now for the target. An error means the
	// reading failed as a whole; partial failures show in the snapshot.
	Sample(now time.Time, t Target) error
	// Fill writes the last reading into the source's part of s.
	Fill(s *snapshot.Snapshot)
	// Close releases what the source holds (a library handle).
	Close() error
}

// HostFiller is a Part that gives the verdict rules their host readings:
// FillHost sets its fields of h from the part of s it owns. The
// snapshotter calls it once every source has filled s, so that a replay,
// whose parts come from a recording, gives the same readings through the
// same code. A reading over time (h.RSS, h.GPUMem, for the memory-creep
// rule) gets this refresh's sample at most; the snapshotter keeps their
// history across refreshes.
type HostFiller interface {
	FillHost(s *snapshot.Snapshot, h *verdict.Host)
}

// Field is the Part of a source whose readings are one field of the
// snapshot: Of returns a pointer to that field.
type Field struct {
	Key string
	Of  func(s *snapshot.Snapshot) any
}

// Name implements Part.
func (f Field) Name() string { return f.Key }

// Save implements Part: the field as JSON; nil for a nil pointer field.
func (f Field) Save(s *snapshot.Snapshot) (json.RawMessage, error) {
	b, err := json.Marshal(f.Of(s))
	if err != nil || string(b) == "null" {
		return nil, err
	}
	return b, nil
}

// Load implements Part.
func (f Field) Load(s *snapshot.Snapshot, raw json.RawMessage) error {
	return json.Unmarshal(raw, f.Of(s))
}
