// Package snapshot defines what pipetop shows at one refresh: the trainer's
// identity and link state, the window summary and verdict from
// metrics/stage, loader statistics, GPUs, CPU cores and the trainer's
// process tree. The same value feeds the panes and `pipetop --json`, whose
// fields docs/pipetop.md documents; the JSON names are a stable contract.
package snapshot

import (
	"encoding/json"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// SchemaVersion is the version of the JSON snapshot; it changes only when a
// field is removed or changes meaning.
const SchemaVersion = 1

// Link states.
const (
	LinkNone         = "none"         // no trainer to attach to (yet)
	LinkConnected    = "connected"    // frames are arriving
	LinkDisconnected = "disconnected" // the trainer went away; last state kept
	// LinkFailed: the last attempt to attach failed (wrong protocol
	// version, malformed frames, no hello, refused); Detail says why and
	// what to do. It stays until a connection succeeds.
	LinkFailed = "failed"
)

// Snapshot is everything one refresh shows.
type Snapshot struct {
	Version int       `json:"version"`
	Time    time.Time `json:"time"`
	Window  Window    `json:"window"`
	Link    Link      `json:"link"`
	// Trainer is null until a trainer's hello has been received.
	Trainer *Trainer `json:"trainer"`
	// Summary aggregates the steps in Window; null without steps.
	Summary *stage.Summary `json:"summary"`
	// Verdict is verdict.Judge of Summary, Loader, Progress and the host
	// readings; null before a trainer's hello. In a run of several ranks it
	// is the straggler verdict (verdict.DiagnoseRanks) when one rank holds
	// the others back.
	Verdict *verdict.Verdict `json:"verdict"`
	// Progress is the trainer's latest in-flight sample (the stage the
	// loop is in and since when); null when it sends none.
	Progress *stage.Progress `json:"progress"`
	// Ranks are the attached ranks of a multi-process run, by rank; absent
	// for a single-process trainer. Trainer, Summary, Loader and Process
	// are then the lowest attached rank's.
	Ranks []Rank `json:"ranks,omitempty"`
	// Loader is the latest loader statistics frame; null when none came.
	Loader *stage.LoaderStats `json:"loader"`
	GPU    GPU                `json:"gpu"`
	CPU    CPU                `json:"cpu"`
	// Process is the trainer's process tree; null without a trainer or when
	// its pid is not visible from here.
	Process *Process `json:"process"`
	// Threads is every thread of the trainer's tree with the CPU the run
	// may use (affinity, cgroup quota) and the host's CPU pressure; absent
	// without a trainer (and in recordings made before the threads source).
	Threads *Threads `json:"threads,omitempty"`
	// Replay is set when the snapshot comes from a recording (pipetop
	// replay): where in it, and how fast it plays.
	Replay *Replay `json:"replay,omitempty"`
	// GPUProcesses is every process on every GPU, largest GPU memory
	// first; empty without GPUs.
	GPUProcesses []GPUProcess `json:"gpu_processes"`
	// GPUProcessNotes says what the list may be missing (other users'
	// processes hidden by the driver, pids in another PID namespace).
	GPUProcessNotes []string `json:"gpu_process_notes,omitempty"`
	// History feeds the sparklines; it is not part of the JSON.
	History History `json:"-"`
	// Totals are the trainer process's cumulative counts (steps, samples,
	// stage times, step-time histograms) since the viewer first saw it:
	// the exporter's counters. Nil without a trainer; not part of the JSON.
	Totals *stage.Totals `json:"-"`
	// Samplers says how each registered source's sampling went at this
	// refresh, in registry order; the exporter serves it, --json does not.
	Samplers []SamplerStat `json:"-"`

	// Remote is set when the trainer parts come from a Prometheus server
	// (pipetop --prometheus) rather than local sockets.
	Remote *Remote `json:"remote,omitempty"`

	// Code is which code the window's stack samples went to (the Python
	// instrumentation's training thread by stage, and its DataLoader
	// workers); absent when the trainer sends no stack samples.
	Code *stage.CodeProfile `json:"code,omitempty"`
}

// Rank is one rank of a multi-process run.
type Rank struct {
	Rank int    `json:"rank"`
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// Instance is the Prometheus instance (host:port) of the exporter that
	// serves this rank; set only in a remote view.
	Instance string `json:"instance,omitempty"`
	// Link is the state of the connection to this rank.
	Link string `json:"link"`
	// Summary and Verdict are this rank's own, over the window; null
	// without steps.
	Summary *stage.Summary   `json:"summary"`
	Verdict *verdict.Verdict `json:"verdict"`
	// Trainer, Loader and Totals are this rank's, for the exporter.
	Trainer *Trainer           `json:"-"`
	Loader  *stage.LoaderStats `json:"-"`
	Totals  *stage.Totals      `json:"-"`
}

// Remote says where a remote view reads its run from, which rank's
// trainer, summary, flame bar and host it shows, and what it cannot show.
type Remote struct {
	URL string `json:"url"` // the Prometheus server
	Run string `json:"run"`
	// Rank is the chosen rank; Host and Instance are its exporter's host
	// name and Prometheus instance, whose readings the CPU and GPU parts are.
	Rank     int    `json:"rank"`
	Host     string `json:"host"`
	Instance string `json:"instance"`
	// RangeSec is the range the rates are taken over: the window, at
	// least four scrape intervals.
	RangeSec float64 `json:"range_sec"`
	// Unavailable lists what is not available remotely.
	Unavailable []string `json:"unavailable"`
}

// SamplerStat is one source's sampling at one refresh.
type SamplerStat struct {
	Name    string  // the source's name, e.g. "gpu"
	Seconds float64 // how long Sample took
	OK      bool    // Sample returned no error
}

// Replay is the position of a replayed snapshot in its recording.
type Replay struct {
	File      string  `json:"file"`
	AtSec     float64 `json:"at_sec"`     // seconds since the recording began
	LengthSec float64 `json:"length_sec"` // the recording's length in seconds
	Speed     float64 `json:"speed"`      // 1 = as recorded
	Paused    bool    `json:"paused"`
	// View says what a one-off snapshot of the recording shows, e.g. "the
	// whole run"; empty for the interactive replay, whose position moves.
	View string `json:"view,omitempty"`
	// Damage says where a damaged recording stops being readable.
	Damage string `json:"damage,omitempty"`
}

// Window is the span of steps the summary covers.
type Window struct {
	Label   string  `json:"label"`   // "5s", "30s", "2m" or "all"
	Seconds float64 `json:"seconds"` // 0 for all held steps
}

// Link is the state of the connection to the trainer.
type Link struct {
	State string `json:"state"` // LinkNone, LinkConnected, LinkDisconnected or LinkFailed
	// Detail says why: the resolver's or the connection's error; when
	// failed, which socket, what went wrong, what to do and when the next
	// try is.
	Detail string `json:"detail,omitempty"`
	Socket string `json:"socket,omitempty"`
	// Since is when State last changed; absent before any state change.
	Since time.Time `json:"since,omitzero"`
	// RetryAt is when the viewer tries again after a failed or lost link;
	// absent otherwise.
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// Trainer identifies the trainer pipetop is attached to (or was, when the
// link is down).
type Trainer struct {
	Name    string          `json:"name"`
	PID     int             `json:"pid"`
	HostPID int             `json:"host_pid"`
	Socket  string          `json:"socket"`
	Stages  []string        `json:"stages"`
	Config  json.RawMessage `json:"config,omitempty"`
	// Started is the trainer process's start time, when it said.
	Started *time.Time `json:"started,omitempty"`
	// UptimeSec is Time - Started in seconds; 0 when unknown.
	UptimeSec float64 `json:"uptime_sec"`
	// EpochSteps is the config's "epoch_steps", 0 when absent; EpochETASec
	// is the time left in the current epoch at the window's rate, 0 when
	// unknown.
	EpochSteps  int64   `json:"epoch_steps,omitempty"`
	EpochETASec float64 `json:"epoch_eta_sec,omitempty"`
	// Dropped counts frames the trainer dropped for this viewer.
	Dropped int64 `json:"dropped"`
	// LastEvent is the latest event frame (checkpoint, epoch, warning).
	LastEvent *ipc.Event `json:"last_event,omitempty"`
	// Synthetic is set for the synthetic test publisher (config kind
	// "synthetic"): its numbers are made up, not measured training.
	Synthetic bool `json:"synthetic,omitempty"`
	// Phase is the running `pipetrain bisect` phase, from "phase" events.
	Phase string `json:"phase,omitempty"`
	// Rank, WorldSize and Run come from the hello of a multi-process run;
	// Rank is nil for a single-process trainer.
	Rank      *int   `json:"rank,omitempty"`
	WorldSize int    `json:"world_size,omitempty"`
	Run       string `json:"run,omitempty"`
}

// Reading is one measured number with its source. Value is null unless
// State is "ok".
type Reading struct {
	Value  *float64 `json:"value"`
	Source string   `json:"source,omitempty"`
	State  string   `json:"state"` // "ok", "missing", "not supported" or "failed"
}

// Read converts a metrics.Value.
func Read(v metrics.Value) Reading {
	r := Reading{Source: v.Source, State: v.State.String()}
	if v.Valid() {
		x := v.V
		r.Value = &x
	}
	return r
}

// OK reports whether the reading holds a value.
func (r Reading) OK() bool { return r.Value != nil }

// Or returns the value, or def when there is none.
func (r Reading) Or(def float64) float64 {
	if r.Value == nil {
		return def
	}
	return *r.Value
}

// History is the recent past of a few numbers, oldest first, one value per
// refresh; NaN marks a refresh without a reading.
type History struct {
	StepsPerSec []float64
	GPUBusy     []float64 // 0..100: trainer GPU busy, else the busiest device
	CPU         []float64 // 0..100: all cores
}
