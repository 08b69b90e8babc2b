package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/source"
)

// Watcher is what pipetop bisect and tune do with each phase or trial
// while it runs (bisect.Config.Watch): one monitor on its trainer, shared
// by the live view on a terminal (until the user closes it: the later
// phases then run without it) and the phase's recording (RecordDir). The
// command's output and pipetop's progress (Out) wait while the view is up.
type Watcher struct {
	// Show is the live view; nil: none.
	Show Show
	// Refresh is the live view's refresh interval.
	Refresh time.Duration
	// RecordDir, when set, keeps each phase's recording as
	// RecordDir/PHASE.pipetop.
	RecordDir string
	// Sources opens the host sources a phase's monitor samples.
	Sources func() []source.Source
	// Out holds the command's output and the progress while the view is
	// up; Stderr gets what pipetop says about the view.
	Out    *child.Held
	Stderr io.Writer
	live   atomic.Bool // the live view is wanted (q turns it off)
}

// NewWatcher is a Watcher that shows each phase live when show is set and
// pipetop's stdin and stdout are a terminal, writing the command's output
// to stderr.
func NewWatcher(show Show, terminal bool, stderr io.Writer) *Watcher {
	w := &Watcher{Show: show, Out: child.NewHeld(stderr), Stderr: stderr,
		Sources: func() []source.Source { return nil }}
	w.live.Store(terminal && show != nil)
	return w
}

// Watch records and shows one phase, whose trainer listens at socket,
// until ctx ends with it.
func (w *Watcher) Watch(ctx context.Context, phase, socket string) {
	record := w.RecordDir != ""
	if !record && !w.live.Load() {
		return
	}
	m, err := openFor(ctx, socket, w.Sources(), record, w.live.Load(), w.Refresh)
	if err != nil {
		fmt.Fprintf(w.Out, "pipetop: watch phase %s: %v\n", phase, err)
		return
	}
	defer m.Close()
	sh := &shared{m: m}
	if !record {
		w.show(ctx, sh)
		return
	}
	path := filepath.Join(w.RecordDir, phase+".pipetop")
	rec, err := monitor.StartRecorder(ctx, m, monitor.RecordOptions{Path: path, Source: "pipetop bisect, phase " + phase,
		Interval: time.Second, Driven: true})
	if err != nil {
		fmt.Fprintf(w.Out, "pipetop: record %s: %v\n", path, err)
	} else {
		defer w.stopRecorder(rec, path)
	}
	sh.startDriving(ctx, m.Snapshotter.SampleHost) // no screen: the host is read for the recording alone
	defer sh.stopDriving()
	if w.live.Load() {
		w.show(ctx, sh)
	}
	<-ctx.Done() // the recording goes on with the phase
}

// stopRecorder ends a phase's recording and says when it failed.
func (w *Watcher) stopRecorder(rec *monitor.Recorder, path string) {
	if err := rec.Stop(); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(w.Out, "pipetop: record %s: %v\n", path, err)
	}
}

// show runs the live view on the phase's trainer until ctx ends or the
// user closes it (then the later phases run without it; a Ctrl-C stops
// the bisect).
func (w *Watcher) show(ctx context.Context, sh *shared) {
	err := sh.show(ctx, w.Show, w.Out)
	if errors.Is(err, ErrInterrupted) {
		w.live.Store(false)
		// Caught by the bisect's own handler, as a Ctrl-C without the
		// view is: the running phase's group is stopped.
		fmt.Fprintln(w.Stderr, "pipetop: Ctrl-C: stopping the bisect")
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
		return
	}
	if err != nil {
		fmt.Fprintln(w.Stderr, "pipetop: monitor:", err)
	}
	if ctx.Err() == nil {
		w.live.Store(false)
		fmt.Fprintln(w.Stderr, "pipetop: monitor closed; the bisect goes on (Ctrl-C stops it)")
	}
}
