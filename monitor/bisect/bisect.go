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
	"slices"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/source"
)

// Schema tags a bisect report (pipetop bisect --json, docs/bisect.md).
const Schema = "pipetop-bisect/1"

// Phases are pipetop bisect's phases run by default, in the order they
// run.
var Phases = []string{verdict.PhaseLoader, verdict.PhaseCached, verdict.PhaseForward, verdict.PhaseFull}

// Known are every phase pipetop bisect can run: the cold phase when asked.
var Known = []string{verdict.PhaseLoader, verdict.PhaseCold, verdict.PhaseCached, verdict.PhaseForward, verdict.PhaseFull}

// ExitFailed is pipetop bisect's exit status when a phase failed and the
// script's own status does not say more.
const ExitFailed = 3

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
	// DropCaches drops the whole page cache before the cold phase (root
	// only), instead of the files the warm loader phase read.
	DropCaches bool
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
// FailureStatus.
func (r *Report) Failed() bool {
	for _, p := range r.Phases {
		if p.Status == verdict.PhaseFailed {
			return true
		}
	}
	return false
}

// FailureStatus is pipetop bisect's exit status for a report with a
// failed phase: the script's own when it failed the same way in every
// phase with a status of its own, else ExitFailed; 0 when none failed.
func (r *Report) FailureStatus() int {
	if !r.Failed() {
		return 0
	}
	if n := len(r.Phases); n > 0 {
		if p := r.Phases[n-1]; p.EveryPhase && p.ExitStatus != nil && *p.ExitStatus > 0 {
			return *p.ExitStatus
		}
	}
	return ExitFailed
}

// Run runs every phase of c in turn and judges them; when ctx ends (Ctrl-C)
// the running phase is stopped and the report holds what ran.
func Run(ctx context.Context, c Config) (Report, error) {
	if err := c.Prepare(); err != nil {
		return Report{}, err
	}
	host, _ := os.Hostname()
	r := Report{Schema: Schema, Command: c.Argv, Host: host, Started: time.Now().UTC(), SecondsPerPhase: c.PhaseTime.Seconds()}
	var prev *early
	for _, name := range c.Phases {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(c.Log, "pipetop bisect: phase %s: %s\n", name, about[name])
		p, e := runTrial(ctx, c, Trial{Phase: name})
		p.EveryPhase = p.EveryPhase || (e != nil && e.same(prev))
		fmt.Fprintf(c.Log, "pipetop bisect: %s\n", p.Row())
		r.Phases = append(r.Phases, p)
		if p.EveryPhase {
			fmt.Fprintf(c.Log, "pipetop bisect: every phase would fail the same way (%s): no other phase is run\n", p.Cause)
			break
		}
		prev = e
	}
	r.Interrupted = ctx.Err() != nil
	r.Verdict = verdict.DiagnoseBisect(r.Phases)
	return r, nil
}

// about says what each phase runs.
var about = map[string]string{
	verdict.PhaseLoader:  "the training DataLoader alone, no network",
	verdict.PhaseCold:    "the training DataLoader alone, the files the loader phase read evicted from the page cache first",
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
			return fmt.Errorf("bisect: unknown phase %q (want loader, cold, cached, forward or full)", p)
		}
	}
	c.Phases = coldAfterLoader(c.Phases)
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

// coldAfterLoader is phases with the cold phase right after the loader
// phase (added before it when not asked): the cold phase evicts the files
// the warm loader phase read, and is compared with it.
func coldAfterLoader(phases []string) []string {
	at := slices.Index(phases, verdict.PhaseCold)
	if at < 0 {
		return phases
	}
	out := slices.DeleteFunc(slices.Clone(phases), func(p string) bool { return p == verdict.PhaseCold })
	ld := slices.Index(out, verdict.PhaseLoader)
	if ld < 0 {
		out = slices.Insert(out, min(at, len(out)), verdict.PhaseLoader)
		ld = slices.Index(out, verdict.PhaseLoader)
	}
	return slices.Insert(out, ld+1, verdict.PhaseCold)
}
