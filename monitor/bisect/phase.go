package bisect

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// drainMargin is how much longer than warm-up and measurement the loader
// phase's drain may run before the script exits by itself: the bisect
// normally stops it first.
const drainMargin = 30 * time.Second

// Trial is one run of the command as a phase: pipetop bisect runs one a
// phase, pipetop tune one for each setting it tries.
type Trial struct {
	// Phase is loader, cached, forward or full; Label names the trial's
	// files (the phase when empty).
	Phase, Label string
	// Env is added to the phase's environment (a plan of settings).
	Env []string
	// Guard, when set, is asked about each snapshot while the trial runs;
	// an answer stops the trial, marked refused with that reason.
	Guard func(snapshot.Snapshot) string
}

// RunTrial runs the command once as trial t and measures it; c must have
// been prepared (Prepare).
func RunTrial(ctx context.Context, c Config, t Trial) verdict.PhaseResult {
	name := t.Phase
	res := verdict.PhaseResult{Name: name}
	label := t.Label
	if label == "" {
		label = name
	}
	dir := filepath.Join(c.Dir, label)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return failed(res, fmt.Sprintf("phase directory: %v", err))
	}
	tail := &tailWriter{max: 4096}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env = append(append(phaseEnv(c.Env), c.phaseVars(name, dir)...), t.Env...)
	// A stdin that never delivers: a script that waits for input waits
	// until the phase's time is up, as it would at a terminal.
	stdin, hold, err := os.Pipe()
	if err != nil {
		return failed(res, fmt.Sprintf("stdin pipe: %v", err))
	}
	defer hold.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, c.Stdout, multi(c.Stderr, tail)
	p, err := child.Start(cmd, child.Options{Group: true})
	stdin.Close()
	if err != nil {
		return failed(res, fmt.Sprintf("start %s: %v", c.Argv[0], err))
	}
	defer p.Close()
	phaseCtx, cancel := context.WithCancel(ctx)
	m := &meter{c: c, name: name, guard: t.Guard}
	m.run(phaseCtx, p)
	cancel()
	m.watching.Wait()
	sent := p.Stop(c.Grace)
	status, _ := p.Wait()
	m.result(&res)
	res.Notes = append(res.Notes, phaseNotes(dir)...)
	res.DataLoader = dataLoaderOf(dir)
	o := outcome{sent: sent, status: status, timedOut: m.timedOut, stderr: tail.String(), skip: skipNote(dir, name), refused: m.refused}
	return settle(ctx, c, res, o)
}

// outcome is how a phase's command ended.
type outcome struct {
	sent     os.Signal // the last signal Stop sent; nil: it exited by itself
	status   int       // its exit status
	timedOut bool      // no first step within StartTimeout
	stderr   string    // the end of its stderr
	skip     string    // why the instrumentation could not run the phase, "" when it could
	refused  string    // why the trial's guard stopped it, "" when it did not
}

// settle gives the phase its status from how its command ended.
func settle(ctx context.Context, c Config, res verdict.PhaseResult, o outcome) verdict.PhaseResult {
	switch {
	case ctx.Err() != nil:
		res.Status = verdict.PhaseStopped
	case o.refused != "":
		res.Status = verdict.PhaseRefused
		res.Notes = append([]string{o.refused}, res.Notes...)
	case o.skip != "":
		res.Status = verdict.PhaseSkipped
		res.Notes = append([]string{o.skip}, res.Notes...)
	case o.timedOut:
		res = failed(res, fmt.Sprintf("no training step within %s", c.StartTimeout))
		res.StderrTail = o.stderr
	case o.sent != nil:
		res.Status = verdict.PhaseOK
	case o.status != 0:
		res = failed(res, "")
		res.ExitStatus, res.StderrTail = &o.status, o.stderr
	case res.Steps == 0:
		res.Status = verdict.PhaseSkipped
		res.Notes = append([]string{"the command exited (status 0) before a training step was measured"}, res.Notes...)
	case res.Seconds < 0.95*c.PhaseTime.Seconds():
		res.Status = verdict.PhaseShort
		res.Notes = append(res.Notes, fmt.Sprintf("the command ended after %.1f s of the %g s asked: measured on what ran", res.Seconds, c.PhaseTime.Seconds()))
	default:
		res.Status = verdict.PhaseOK
	}
	return res
}

// failed marks res failed, with note when there is one.
func failed(res verdict.PhaseResult, note string) verdict.PhaseResult {
	res.Status = verdict.PhaseFailed
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	return res
}

// phaseEnv is env with no end-of-run summary (a phase is no run of its
// own: its files would pile up in the working directory) and no other
// phase's selection.
func phaseEnv(env []string) []string {
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "PIPETOP_SUMMARY=") || strings.HasPrefix(kv, "PIPETOP_BISECT_")
	})
	return append(env, "PIPETOP_SUMMARY=0")
}

// phaseVars select phase name for the instrumentation (docs/python.md).
func (c Config) phaseVars(name, dir string) []string {
	drain := c.WarmupTime + c.PhaseTime + drainMargin
	return []string{
		"PIPETOP_BISECT_PHASE=" + name,
		"PIPETOP_BISECT_SECONDS=" + strconv.FormatFloat(drain.Seconds(), 'f', 1, 64),
		"PIPETOP_BISECT_CACHE_MB=" + strconv.FormatFloat(c.CacheMB, 'f', -1, 64),
		"PIPETOP_BISECT_CACHE_BATCHES=" + strconv.Itoa(c.CacheBatches),
		"PIPETOP_BISECT_OUT=" + dir,
	}
}
