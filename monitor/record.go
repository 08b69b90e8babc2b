package monitor

import (
	"context"
	"errors"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor/recording"
)

// record writes everything the monitor's feed receives to w (every rank's
// feed when it follows a run), each entry marked with the rank it came
// from when the trainer is a rank of a run, and the host readings of its
// refreshes (Snapshotter.Subscribe), at most one an interval, until ctx
// ends. It judges nothing: unless driven (another subscriber refreshes
// the monitor, as the screen or pipetop run's keeper do), it takes a host
// reading itself every interval (Snapshotter.SampleHost). The caller
// closes w.
func (m *Monitor) record(ctx context.Context, w *recording.Writer, interval time.Duration, driven bool) error {
	m.tap(w)
	defer m.untap()
	saved := make(chan error, 1)
	var last time.Time
	cancel := m.Snapshotter.Subscribe(func(r *Refresh) {
		if !last.IsZero() && r.Snapshot.Time.Sub(last) < interval*9/10 {
			return // a screen refreshing faster than the recording
		}
		last = r.Snapshot.Time
		h, err := SaveReadings(r.Snapshot, m.Snapshotter.parts())
		w.Host(r.Snapshot.Time, h)
		if err == nil {
			err = w.Err()
		}
		if err != nil {
			select {
			case saved <- err:
			default:
			}
		}
	})
	defer cancel()
	var tick <-chan time.Time
	if !driven {
		m.Snapshotter.SampleHost(time.Now())
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-saved:
			return err
		case now := <-tick:
			m.Snapshotter.SampleHost(now)
		}
	}
}

// tap makes every message of the monitor's feeds a recording entry of w.
func (m *Monitor) tap(w *recording.Writer) {
	if m.Group != nil {
		m.Group.SetTap(func(rank int, msg ipc.Message, now time.Time) { tapEntry(w, &rank, msg, now) })
		return
	}
	var rank *int // the rank of a run of several the trainer's hello names
	m.Feed.SetTap(func(msg ipc.Message, now time.Time) {
		if h := msg.Connected; h != nil {
			rank = nil
			if h.Rank != nil && h.WorldSize > 1 {
				rank = h.Rank
			}
		}
		tapEntry(w, rank, msg, now)
	})
}

// untap ends tap.
func (m *Monitor) untap() {
	if m.Group != nil {
		m.Group.SetTap(nil)
		return
	}
	m.Feed.SetTap(nil)
}

// tapEntry writes one feed message, from rank of a run (nil: a single
// trainer), as a recording entry.
func tapEntry(w *recording.Writer, rank *int, msg ipc.Message, now time.Time) {
	switch {
	case msg.Connected != nil:
		w.Hello(now, rank, msg.Connected, msg.Endpoint.Path)
	case msg.Frame != nil:
		w.Frame(now, rank, msg.Frame)
	default:
		detail := "connection lost"
		switch {
		case msg.Disconnected != nil:
			detail = msg.Disconnected.Error()
		case msg.Failed != nil:
			detail = msg.Failed.Error()
		}
		w.Lost(now, rank, detail)
	}
}

// Messages turns a recording entry back into the feed message it was
// recorded from; ok is false for host readings.
func Messages(e recording.Entry) (msg ipc.Message, ok bool) {
	switch {
	case e.Hello != nil:
		return ipc.Message{Connected: e.Hello, Endpoint: ipc.Endpoint{Path: e.Socket, Name: e.Hello.Name, PID: e.Hello.PID}}, true
	case e.Frame != nil:
		return ipc.Message{Frame: e.Frame}, true
	case e.Lost != nil:
		return ipc.Message{Disconnected: errors.New(*e.Lost)}, true
	}
	return ipc.Message{}, false
}
