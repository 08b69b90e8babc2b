package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/tune"
)

// Bisect runs the bisect c of c.Argv, instrumented (Env, the trainer named
// name), each phase watched by w, in a scratch directory of its own. With
// w.RecordDir set, each phase's recording and the report
// (bisect.ReportFile) are kept there.
func Bisect(ctx context.Context, c bisect.Config, name string, w *Watcher) (bisect.Report, error) {
	var rep bisect.Report
	err := experiment(ctx, "pipetop-bisect-", name, func(ctx context.Context, dir string, env []string) error {
		if w.RecordDir != "" {
			if err := os.MkdirAll(w.RecordDir, 0o755); err != nil {
				return fmt.Errorf("--record: %w", err)
			}
		}
		c.Env, c.Dir = env, dir
		w.configure(&c)
		var err error
		rep, err = bisect.Run(ctx, c)
		w.Out.Release()
		if err == nil && w.RecordDir != "" {
			err = WriteJSON(filepath.Join(w.RecordDir, bisect.ReportFile), rep)
		}
		return err
	})
	return rep, err
}

// Tune runs the tune c (from the bisect or tune report in the file from,
// when set), its phases and trials watched by w, in a scratch directory of
// its own, and writes its report to out, unless the script failed whatever
// was tried (no advice, no report).
func Tune(ctx context.Context, c tune.Config, from string, w *Watcher, out string) (tune.Report, error) {
	var rep tune.Report
	err := experiment(ctx, "pipetop-tune-", "", func(ctx context.Context, dir string, env []string) error {
		if from != "" {
			r, prior, err := tune.ReadFrom(from)
			if err != nil {
				return fmt.Errorf("--from: %w", err)
			}
			if strings.Join(r.Command, " ") != strings.Join(c.Bisect.Argv, " ") {
				fmt.Fprintf(w.Stderr, "pipetop: --from %s bisected %q, not this command\n", from, strings.Join(r.Command, " "))
			}
			c.From, c.Prior = &r, prior
		}
		c.Bisect.Env, c.Bisect.Dir, c.Log = env, dir, w.Out
		w.configure(&c.Bisect)
		var err error
		if rep, err = tune.Run(ctx, c); err == nil && !rep.Failed {
			err = WriteJSON(out, rep)
		}
		return err
	})
	return rep, err
}

// configure sends c's output and progress through w (held while the live
// view is up) and watches each of its phases.
func (w *Watcher) configure(c *bisect.Config) {
	c.Sources, c.Stdout, c.Stderr, c.Log, c.Watch = w.Sources, w.Out, w.Out, w.Out, w.Watch
}

// experiment runs run with the instrumentation's environment (the trainer
// named name) and a scratch directory, removed after; a closed terminal
// (SIGHUP) stops it as Ctrl-C does: the running phase's group is outside
// the terminal's and would not hear it.
func experiment(ctx context.Context, prefix, name string, run func(ctx context.Context, dir string, env []string) error) error {
	env, err := Env(name)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	return run(ctx, dir, env)
}

// WriteJSON writes v to the file path as indented JSON.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = os.WriteFile(path, append(b, '\n'), 0o644)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
