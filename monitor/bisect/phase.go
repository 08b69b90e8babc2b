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
	// Warm is the label of the warm loader phase whose files a cold trial
	// evicts first (the loader phase's when empty).
	Warm string
}

// RunTrial runs the command once as trial t and measures it; c must have
// been prepared (Prepare).
func RunTrial(ctx context.Context, c Config, t Trial) verdict.PhaseResult {
	res, _ := runTrial(ctx, c, t)
	return res
}

// early is how a phase failed before a step was measured: its exit
// status and its error.
type early struct {
	status int
	cause  string
}

// same is whether prev failed early the same way.
func (e *early) same(prev *early) bool {
	return prev != nil && e.status == prev.status && e.cause == prev.cause
}

// runTrial is RunTrial, and how the phase failed before a step was
// measured (nil when it did not).
func runTrial(ctx context.Context, c Config, t Trial) (verdict.PhaseResult, *early) {
	start := time.Now()
	name := t.Phase
	res := verdict.PhaseResult{Name: name}
	label := t.Label
	if label == "" {
		label = name
	}
	dir := filepath.Join(c.Dir, label)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return failed(res, fmt.Sprintf("phase directory: %v", err)), nil
	}
	if name == verdict.PhaseCold {
		warm := t.Warm
		if warm == "" {
			warm = verdict.PhaseLoader
		}
		ev := evictFor(c, filepath.Join(c.Dir, warm))
		res.Eviction = &ev
		fmt.Fprintf(c.Log, "pipetop bisect: %s\n", evictionText(ev))
	}
	tail := &tailWriter{max: 4096}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env = append(append(phaseEnv(c.Env), c.phaseVars(name, dir)...), t.Env...)
	// A stdin that never delivers: a script that waits for input waits
	// until the phase's time is up, as it would at a terminal.
	stdin, hold, err := os.Pipe()
	if err != nil {
		return failed(res, fmt.Sprintf("stdin pipe: %v", err)), nil
	}
	defer hold.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, c.Stdout, multi(c.Stderr, tail)
	p, err := child.Start(cmd, child.Options{Group: true})
	stdin.Close()
	if err != nil {
		res = failed(res, fmt.Sprintf("start %s: %v", c.Argv[0], err))
		res.Cause, res.EveryPhase = res.Notes[len(res.Notes)-1], true
		return res, nil
	}
	defer p.Close()
	phaseCtx, cancel := context.WithCancel(ctx)
	m := &meter{c: c, name: name, guard: t.Guard, dir: dir}
	m.run(phaseCtx, p)
	cancel()
	m.watching.Wait()
	sent := p.Stop(c.Grace)
	status, _ := p.Wait()
	m.result(&res)
	m.keepFiles()
	res.Notes = append(res.Notes, phaseNotes(dir)...)
	res.DataLoader = dataLoaderOf(dir)
	res.CacheBytes, res.CacheBatches = cacheOf(dir)
	o := outcome{sent: sent, status: status, timedOut: m.timedOut, stderr: tail.String(), skip: skipNote(dir, name), refused: m.refused,
		connected: m.connected || published(dir), why: m.why}
	res = settle(ctx, c, res, o)
	res.WallSeconds = time.Since(start).Seconds()
	if res.Status != verdict.PhaseFailed || m.begun {
		return res, nil
	}
	return res, &early{status: status, cause: res.Cause}
}

// outcome is how a phase's command ended.
type outcome struct {
	sent     os.Signal // the last signal Stop sent; nil: it exited by itself
	status   int       // its exit status
	timedOut bool      // no first step within StartTimeout
	stderr   string    // the end of its stderr
	skip     string    // why the instrumentation could not run the phase, "" when it could
	refused  string    // why the trial's guard stopped it, "" when it did not
	// connected: something instrumented published (the phase could act);
	// why says why nothing did.
	connected bool
	why       string
}

// errorLine is the script's error in the end of its stderr: its last
// line that is not pipetop's own, "" when none.
func errorLine(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "pipetop:") {
			return l
		}
	}
	return ""
}

// withoutOurStop is stderr less the KeyboardInterrupt traceback at its
// end that pipetop's own SIGINT left (a phase stopped for want of a first
// step): what the script printed before it.
func withoutOurStop(stderr string) string {
	s := strings.TrimRight(stderr, " \n")
	if !strings.HasSuffix(s, "KeyboardInterrupt") {
		return stderr
	}
	if i := strings.LastIndex(s, "Traceback (most recent call last):"); i >= 0 {
		return strings.TrimRight(s[:i], " \n")
	}
	return stderr
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
		res.StderrTail, res.Cause = withoutOurStop(o.stderr), res.Notes[len(res.Notes)-1]
		if !o.connected {
			res.Cause, res.EveryPhase = fmt.Sprintf("%s within %s: %s", verdict.NotConnected, c.StartTimeout, o.why), true
		}
	case o.sent != nil:
		res.Status = verdict.PhaseOK
	case o.status != 0:
		res = failed(res, "")
		res.ExitStatus, res.StderrTail = &o.status, o.stderr
		res.Cause, res.EveryPhase = errorLine(o.stderr), !o.connected
		if res.Cause == "" {
			res.Cause = fmt.Sprintf("%s exited with status %d", c.Argv[0], o.status)
		}
	case !o.connected:
		res = failed(res, "")
		res.StderrTail, res.EveryPhase = o.stderr, true
		res.Cause = fmt.Sprintf("%s before the command exited (status 0): %s", verdict.NotConnected, o.why)
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
