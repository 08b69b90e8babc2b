package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/sources"
)

// runRecordGrace is how long pipetop run --record goes on recording after
// the command exits, for the frames still on their way.
const runRecordGrace = 300 * time.Millisecond

// runRecorder records the run pipetop run started (every rank of it) to a
// file, the way pipetop record does, until stopped.
type runRecorder struct {
	cancel context.CancelFunc
	done   chan error
}

// startRecorder starts recording the first trainer that pid or one of its
// descendants publishes, and the run it is a rank of, to path.
func startRecorder(ctx context.Context, path string, pid int, argv []string, noGPU bool, stderr io.Writer) *runRecorder {
	ctx, cancel := context.WithCancel(ctx)
	r := &runRecorder{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- recordChild(ctx, path, pid, strings.Join(argv, " "), noGPU, stderr) }()
	return r
}

// stop ends the recording after runRecordGrace and returns its error.
func (r *runRecorder) stop() error {
	time.Sleep(runRecordGrace)
	r.cancel()
	return <-r.done
}

// recordChild records the child's run, once it publishes, until ctx ends.
func recordChild(ctx context.Context, path string, pid int, what string, noGPU bool, stderr io.Writer) error {
	sock, ok := child.AwaitSocket(pid, ctx.Done())
	if !ok {
		return fmt.Errorf("record %s: the command published no training steps; nothing recorded", path)
	}
	m, err := monitor.Open(ctx, sock, monitor.Options{Sources: sources.Registered(noGPU)})
	if err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	rec, err := monitor.StartRecorder(ctx, m, monitor.RecordOptions{Path: path, Source: "pipetop run -- " + what, Interval: time.Second})
	if err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	fmt.Fprintf(stderr, "pipetop: recording the run to %s\n", path)
	if err := rec.Wait(); err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	return nil
}
