package monitor

import (
	"context"
	"fmt"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Once is the snapshot of pipetop --once and --json over window w: it
// waits for the first answer of the trainer's link, takes a first reading
// (rates need two), refreshes once a second for collect (so that the
// histories the memory rules judge hold more than two points; with agg
// frames one aggregate longer: the steps since the trainer began its
// aggregate come with the next), stops watching (the viewer exits: no
// next try to announce) and returns the last snapshot.
func (m *Monitor) Once(ctx context.Context, collect time.Duration, w snapshot.Window) (snapshot.Snapshot, error) {
	m.AwaitLink(ctx, collect)
	if m.aggregates {
		collect += ipc.AggregateEvery
	}
	m.Snapshot(time.Now(), w)
	end := time.Now().Add(collect)
	for left := collect; left > 0; left = time.Until(end) {
		select {
		case <-ctx.Done():
			return snapshot.Snapshot{}, ctx.Err()
		case <-time.After(min(left, time.Second)):
		}
		if time.Until(end) > 0 {
			m.Snapshot(time.Now(), w)
		}
	}
	m.StopWatching()
	return m.Snapshot(time.Now(), w), nil
}

// Failed is why the snapshot s of this monitor shows no run, nil when it
// shows one: a remote view that could not read its run, or a monitor that
// watched for a trainer and never got a hello from it.
func (m *Monitor) Failed(s snapshot.Snapshot) error {
	l := s.Link
	if s.Remote != nil {
		if l.State == snapshot.LinkFailed || l.State == snapshot.LinkNone {
			return fmt.Errorf("could not read run %s from %s: %s", s.Remote.Run, s.Remote.URL, l.Detail)
		}
		return nil
	}
	if !m.Attached() || l.State == snapshot.LinkConnected || l.State == snapshot.LinkDisconnected {
		return nil
	}
	if l.Detail == "" {
		l.Detail = "no hello from " + l.Socket
	}
	return fmt.Errorf("could not attach the trainer: %s", l.Detail)
}
