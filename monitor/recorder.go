package monitor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/source"
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
	// Driven says the caller refreshes the monitor at least every
	// Interval (a screen, pipetop run's keeper) and keeps it: the
	// recorder saves those refreshes' host readings, samples nothing
	// itself and leaves the monitor open. Without it the recorder owns
	// the monitor: it takes a host reading every Interval and closes it.
	Driven bool
}

// Recorder writes everything a monitor receives to a recording, and the
// host readings of its refreshes, without judging: the one set-up of
// pipetop record, pipetop run --record, pipetop bisect --record and
// pipetrain --record. What it records of the host are the sources the
// caller opened the monitor with.
type Recorder struct {
	cancel context.CancelFunc
	done   chan error
}

// StartRecorder creates the recording o.Path (its header: now, this host
// and o.Source) and records m into it in the background until Stop, ctx
// ends or o.Duration passes. Unless o.Driven the recorder owns m: it
// closes m, also when the recording cannot be created.
func StartRecorder(ctx context.Context, m *Monitor, o RecordOptions) (*Recorder, error) {
	host, _ := os.Hostname()
	w, err := recording.Create(o.Path, recording.Header{StartNs: time.Now().UnixNano(), Host: host, Source: o.Source})
	if err != nil {
		if !o.Driven {
			m.Close()
		}
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
		err := m.record(ctx, w, o.Interval, o.Driven)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if !o.Driven {
			m.Close()
		}
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

// Record records the trainer spec names (every rank of its run; the only
// live one for "") into o.Path (RecordingName when empty) until ctx ends
// or o.Duration passes, sampling sources: pipetop record. started is told
// the path once the recording is created. Several live trainers and no
// spec is an error (PickOne).
func Record(ctx context.Context, spec string, sources []source.Source, o RecordOptions, started func(path string)) error {
	m, err := Open(ctx, spec, Options{Sources: sources})
	if err != nil {
		return err
	}
	if m.Pick {
		m.Close()
		return PickOne("record")
	}
	if o.Path == "" {
		o.Path = RecordingName(spec, time.Now())
	}
	o.Driven = false
	rec, err := StartRecorder(ctx, m, o)
	if err != nil {
		return err
	}
	started(o.Path)
	return rec.Wait()
}

// RecordingName is a recording's default name: after the trainer spec
// names and the time.
func RecordingName(spec string, now time.Time) string {
	name := "trainer"
	if spec != "" && !strings.Contains(spec, "/") {
		name = spec
	}
	return fmt.Sprintf("pipetop-%s-%s.pipetop", name, now.Format("20060102-150405"))
}
