package monitor

import (
	"context"
	"errors"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor/recording"
)

// Record writes everything the monitor's feed receives to w (every rank's
// feed when it follows a run), each entry marked with the rank it came
// from when the trainer is a rank of a run, and the host readings every
// interval, until ctx ends. The caller closes w.
func (m *Monitor) Record(ctx context.Context, w *recording.Writer, interval time.Duration) error {
	if m.Group != nil {
		m.Group.SetTap(func(rank int, msg ipc.Message, now time.Time) { tapEntry(w, &rank, msg, now) })
		defer m.Group.SetTap(nil)
	} else {
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
		defer m.Feed.SetTap(nil)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s := m.Snapshot(time.Now(), Windows[0])
		h, err := SaveReadings(&s, m.Snapshotter.parts())
		w.Host(s.Time, h)
		if err == nil {
			err = w.Err()
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
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
