package child

import (
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/host"
)

// pollEvery is how often AwaitSocket looks for the socket.
const pollEvery = 50 * time.Millisecond

// AwaitSocket polls for the trainer socket of pid or one of its
// descendants until one appears (ok), or until stop is closed (a Process's
// Exited, a context's Done).
func AwaitSocket(pid int, stop <-chan struct{}) (path string, ok bool) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if path, ok := socketOf(pid); ok {
			return path, true
		}
		select {
		case <-stop:
			return "", false
		case <-tick.C:
		}
	}
}

// socketOf is the socket of pid or one of its descendants, if one is
// there. It does not connect to it (the caller does): the trainer counts
// the caller's viewers alone.
func socketOf(pid int) (string, bool) {
	eps, err := ipc.Sockets()
	if err != nil {
		return "", false
	}
	for _, ep := range eps {
		if host.Descends(ep.PID, pid) {
			return ep.Path, true
		}
	}
	return "", false
}
