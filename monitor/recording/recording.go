// Package recording writes and reads pipetop recordings: everything a
// viewer received from a trainer (hello, every frame, lost links) and the
// host readings at each refresh, so that a run can be replayed, summarized,
// compared and turned into a trace afterwards.
//
// A recording is newline-delimited JSON, one entry a line, compressed with
// zstd (gzip and plain text are read too). The writer flushes a complete
// zstd block at least once a second, so a crash loses at most the last
// second, and a truncated file reads up to the damage. docs/recording.md is
// the format.
package recording

import (
	"encoding/json"
	"time"

	"github.com/pipetop/pipetop/ipc"
)

// Version is the recording format version, in the first line.
const Version = 1

// Header is the first line of a recording.
type Header struct {
	Recording int    `json:"pipetop_recording"` // Version
	StartNs   int64  `json:"start_ns"`          // when recording began, Unix ns
	Host      string `json:"host,omitempty"`    // the machine's hostname
	Source    string `json:"source,omitempty"`  // what was recorded: a spec, or "in-process"
}

// Entry is one line after the header. T is when the viewer received it;
// exactly one of Hello, Frame, Lost and Host is set.
type Entry struct {
	T time.Time
	// Rank is the rank of a run the hello, frame or lost link came from;
	// nil for a single-process trainer. A run's ranks share one recording.
	Rank *int
	// Hello is a (re)connection to the trainer at Socket.
	Hello  *ipc.Hello
	Socket string
	// Frame is a frame from the trainer (steps, loader, event, ...).
	Frame *ipc.Frame
	// Lost is why the link to the trainer ended.
	Lost *string
	// Host holds the machine's readings at one refresh.
	Host Host
}

// Host is the machine's readings at one refresh: each monitor source's
// part of the snapshot, in the --json form, by the source's name ("cpu",
// "gpu", "process", "gpu_processes", ...). The recording neither knows nor
// checks what a part holds: the source that wrote it reads it back.
type Host map[string]json.RawMessage

// line is an entry as it is stored.
type line struct {
	T      int64           `json:"t"`
	Rank   *int            `json:"rank,omitempty"`
	Hello  *ipc.Hello      `json:"hello,omitempty"`
	Socket string          `json:"socket,omitempty"`
	Frame  json.RawMessage `json:"frame,omitempty"`
	Lost   *string         `json:"lost,omitempty"`
	Host   Host            `json:"host,omitempty"`
}
