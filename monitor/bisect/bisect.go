// Package bisect is pipetop bisect: a command (an unmodified PyTorch
// script) run once per phase, each phase selected for the automatic
// instrumentation through its environment — the loader alone, the loop on
// cached batches, the forward alone on them, the script as it is —, each
// measured through the monitor after a warm-up for a fixed time and then
// stopped as a whole process group, and the phases compared by the one
// judge (verdict.DiagnoseBisect).
package bisect

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/source"
)

// Schema tags a bisect report (pipetop bisect --json, docs/bisect.md).
const Schema = "pipetop-bisect/1"

// Phases are pipetop bisect's phases, in the order they run.
var Phases = []string{verdict.PhaseLoader, verdict.PhaseCached, verdict.PhaseForward, verdict.PhaseFull}

// Config is what Run measures and how.
type Config struct {
	// Argv is the command, run once per phase; Env the environment each
	// phase starts from (the instrumentation on PYTHONPATH).
	Argv []string
	Env  []string
	// Phases are the phases to run, in order (Phases when empty).
	Phases []string
	// PhaseTime is the measured time of each phase, after its warm-up.
	PhaseTime time.Duration
	// WarmupSteps are the steps after the first that are not measured;
	// a slow loop stops warming up after WarmupTime (and two steps).
	WarmupSteps int64
	WarmupTime  time.Duration
	// StartTimeout is how long a phase may take to its first step.
	StartTimeout time.Duration
	// Grace is how long a stopped phase has after SIGINT (and again
	// after SIGTERM) before the next signal.
	Grace time.Duration
	// CacheMB and CacheBatches cap the batches the cached and forward
	// phases keep in memory.
	CacheMB      float64
	CacheBatches int
	// Dir holds each phase's files from the instrumentation.
	Dir string
	// Sources opens the host sources a phase's monitor samples.
	Sources func() []source.Source
	// Stdout and Stderr get the command's output; Log pipetop's progress.
	Stdout, Stderr, Log io.Writer
	// Watch, when set, is started once a phase publishes, with its socket,
	// and runs until ctx ends with the phase: the live view, a recording.
	Watch func(ctx context.Context, phase, socket string)
}

// Report is the outcome of a bisect: each phase and the verdict. Its JSON
// is pipetop bisect --json (docs/bisect.md).
type Report struct {
	Schema          string                `json:"schema"`
	Command         []string              `json:"command"`
	Host            string                `json:"host"`
	Started         time.Time             `json:"started"`
	SecondsPerPhase float64               `json:"seconds_per_phase"`
	Phases          []verdict.PhaseResult `json:"phases"`
	Verdict         verdict.Verdict       `json:"verdict"`
	// Interrupted is set when Ctrl-C stopped the bisect: the phases are
	// those that ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Failed is whether a phase failed: pipetop bisect then exits with
// status 3.
func (r *Report) Failed() bool {
	for _, p := range r.Phases {
		if p.Status == verdict.PhaseFailed {
			return true
		}
	}
	return false
}

// Run runs every phase of c in turn and judges them; when ctx ends (Ctrl-C)
// the running phase is stopped and the report holds what ran.
func Run(ctx context.Context, c Config) (Report, error) {
	if err := c.Prepare(); err != nil {
		return Report{}, err
	}
	host, _ := os.Hostname()
	r := Report{Schema: Schema, Command: c.Argv, Host: host, Started: time.Now().UTC(), SecondsPerPhase: c.PhaseTime.Seconds()}
	for _, name := range c.Phases {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(c.Log, "pipetop bisect: phase %s: %s\n", name, about[name])
		p := RunTrial(ctx, c, Trial{Phase: name})
		fmt.Fprintf(c.Log, "pipetop bisect: %s\n", p.Row())
		r.Phases = append(r.Phases, p)
	}
	r.Interrupted = ctx.Err() != nil
	r.Verdict = verdict.DiagnoseBisect(r.Phases)
	return r, nil
}

// about says what each phase runs.
var about = map[string]string{
	verdict.PhaseLoader:  "the training DataLoader alone, no network",
	verdict.PhaseCached:  "the loop on its first batches replayed from memory (upload included)",
	verdict.PhaseForward: "cached batches, backward and optimizer step skipped",
	verdict.PhaseFull:    "the script as it is",
}

// Prepare fills c's defaults and rejects what cannot run.
func (c *Config) Prepare() error {
	if len(c.Argv) == 0 {
		return fmt.Errorf("bisect: no command")
	}
	if len(c.Phases) == 0 {
		c.Phases = Phases
	}
	for _, p := range c.Phases {
		if _, ok := about[p]; !ok {
			return fmt.Errorf("bisect: unknown phase %q (want loader, cached, forward or full)", p)
		}
	}
	if c.PhaseTime <= 0 {
		return fmt.Errorf("bisect: phase time %v: want a positive duration", c.PhaseTime)
	}
	if c.Dir == "" {
		return fmt.Errorf("bisect: no directory for the phases' files")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.WarmupTime, 10*time.Second)
	def(&c.StartTimeout, 2*time.Minute)
	def(&c.Grace, 5*time.Second)
	if c.WarmupSteps <= 0 {
		c.WarmupSteps = 5
	}
	if c.CacheMB <= 0 {
		c.CacheMB = 1024
	}
	if c.CacheBatches <= 0 {
		c.CacheBatches = 64
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Sources == nil {
		c.Sources = func() []source.Source { return nil }
	}
	return nil
}
