package monitor

import (
	"context"
	"os"
	"time"

	"github.com/pipetop/pipetop/monitor/recording"
)

// RecordOptions say where a Recorder writes and what its header says.
type RecordOptions struct {
	Path string
	// Source is the header's account of what was recorded (the trainer
	// named, "pipetop run -- CMD", "in-process").
	Source string
	// Interval is how often the host readings are recorded.
	Interval time.Duration
	// Duration stops the recording after this long; 0: when stopped.
	Duration time.Duration
}

// Recorder writes everything a monitor receives to a recording: the one
// set-up of pipetop record, pipetop run --record and pipetrain --record.
// What it records of the host are the sources the caller opened the
// monitor with.
type Recorder struct {
	cancel context.CancelFunc
	done   chan error
}

// StartRecorder creates the recording o.Path (its header: now, this host
// and o.Source) and records m into it in the background until Stop, ctx
// ends or o.Duration passes. The recorder owns m: it closes m, also when
// the recording cannot be created.
func StartRecorder(ctx context.Context, m *Monitor, o RecordOptions) (*Recorder, error) {
	host, _ := os.Hostname()
	w, err := recording.Create(o.Path, recording.Header{StartNs: time.Now().UnixNano(), Host: host, Source: o.Source})
	if err != nil {
		m.Close()
		return nil, err
	}
	var cancel context.CancelFunc
	if o.Duration > 0 {
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	r := &Recorder{cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := m.Record(ctx, w, o.Interval)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		m.Close()
		r.done <- err
	}()
	return r, nil
}

// Wait waits for the recording to end (ctx or the duration) and returns
// its error. Call Wait or Stop, once.
func (r *Recorder) Wait() error {
	err := <-r.done
	r.cancel()
	return err
}

// Stop ends the recording and returns its error. Call Wait or Stop, once.
func (r *Recorder) Stop() error {
	r.cancel()
	return <-r.done
}
