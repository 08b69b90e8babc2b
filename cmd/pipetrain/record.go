package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources/host"
)

// recorder records the trainer in process: a viewer of its own socket
// that writes what it receives, like pipetop record.
type recorder struct {
	path   string
	m      *monitor.Monitor
	cancel context.CancelFunc
	done   chan error
}

// start attaches to socket and records until stop; it returns once the
// link is up (at most 2 s), so the first steps are recorded.
func (r *recorder) start(socket string) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	m, err := monitor.Open(ctx, socket, monitor.Options{OneRank: true, Sources: hostSources()})
	if err != nil {
		r.done <- err
		return
	}
	r.m = m
	host, _ := os.Hostname()
	w, err := recording.Create(r.path, recording.Header{StartNs: time.Now().UnixNano(), Host: host, Source: "in-process"})
	if err != nil {
		m.Close()
		r.done <- err
		return
	}
	go func() {
		err := m.Record(ctx, w, time.Second)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		m.Close()
		r.done <- err
	}()
	m.AwaitLink(ctx, 2*time.Second)
}

// stop ends the recording and reports a failure on stderr.
func (r *recorder) stop() {
	if r.done == nil {
		return
	}
	if r.m != nil {
		// The trainer has closed its socket: take the frames still in
		// flight, up to the end of the link.
		r.m.AwaitDown(2 * time.Second)
	}
	if r.cancel != nil {
		r.cancel()
	}
	if err := <-r.done; err != nil {
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
