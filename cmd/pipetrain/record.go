package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources/host"
)

// recorder records the trainer in process: a viewer of its own socket
// that writes what it receives, like pipetop record.
type recorder struct {
	path   string
	m      *monitor.Monitor
	rec    *monitor.Recorder
	cancel context.CancelFunc
	err    error // of the start
}

// start attaches to socket and records until stop; it returns once the
// link is up (at most 2 s), so the first steps are recorded.
func (r *recorder) start(socket string) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	m, err := monitor.Open(ctx, socket, monitor.Options{OneRank: true, Sources: hostSources()})
	if err != nil {
		r.err = err
		return
	}
	r.rec, r.err = monitor.StartRecorder(ctx, m, monitor.RecordOptions{Path: r.path, Source: "in-process", Interval: time.Second})
	if r.err != nil {
		return
	}
	r.m = m
	m.AwaitLink(ctx, 2*time.Second)
}

// stop ends the recording and reports a failure on stderr.
func (r *recorder) stop() {
	if r.cancel == nil {
		return
	}
	err := r.err
	if r.rec != nil {
		// The trainer has closed its socket: take the frames still in
		// flight, up to the end of the link.
		r.m.AwaitDown(2 * time.Second)
		err = r.rec.Stop()
	}
	r.cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pipetrain: --record: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stderr, "pipetrain: recorded to %s\n", r.path)
}

// hostSources are what an in-process recording reads of the machine:
// every source that needs no NVML (monitor/sources/host: its CPU, the
// trainer's process tree and its threads, with the quota and the CPU
// pressure). GPU device readings need NVML, which pipetrain does not
// link: record with pipetop record for those (the trainer's own
// CUDA-event stage times are in the steps either way).
func hostSources() []source.Source {
	return host.Open()
}
