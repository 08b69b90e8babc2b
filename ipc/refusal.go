package ipc

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// versionRefusal is what a trainer answers a viewer that speaks protocol
// peer instead of ours, with what to do about it.
func versionRefusal(peer, ours int) error {
	advice := "upgrade pipetop"
	if peer > ours {
		advice = fmt.Sprintf("upgrade the trainer's publisher (pipetrain, pipetop_publish.py), or attach with a pipetop that speaks protocol %d", ours)
	}
	return fmt.Errorf("%w: this viewer speaks protocol %d, the trainer speaks %d — %s", ErrVersion, peer, ours, advice)
}

// helloVersion reads the "v" of a hello line, which every protocol version
// keeps in the same place.
func helloVersion(line []byte) int {
	var h struct {
		V int `json:"v"`
	}
	json.Unmarshal(line, &h)
	return h.V
}

// maxLoggedReasons bounds the reasons a server remembers having logged.
const maxLoggedReasons = 32

// refusalLog logs each kind of refused viewer once, so a viewer that keeps
// retrying (or a hostile one) cannot flood the trainer's log. Every refusal
// is still counted in ServerStats.Refused.
type refusalLog struct {
	mu     sync.Mutex
	logged map[string]bool
	full   bool
}

// log logs "refused a viewer on path: err" the first time err's kind is
// seen, and says once when it stops remembering kinds.
func (l *refusalLog) log(logf func(string, ...any), path string, err error) {
	key := refusalKey(err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.logged[key] || l.full {
		return
	}
	if l.logged == nil {
		l.logged = map[string]bool{}
	}
	if len(l.logged) == maxLoggedReasons {
		l.full = true
		logf("ipc: refused viewer on %s: %d kinds of refusal logged; further ones are only counted", path, maxLoggedReasons)
		return
	}
	l.logged[key] = true
	logf("ipc: refused viewer on %s: %v (logged once; later refusals for this reason are only counted)", path, err)
}

// refusalKey groups refusals that differ only in the bytes a viewer sent.
func refusalKey(err error) string {
	var ue *uidError
	switch {
	case errors.As(err, &ue):
		return fmt.Sprintf("uid %d", ue.uid)
	case errors.Is(err, ErrFrameTooLarge):
		return "too large"
	case errors.Is(err, ErrMalformed):
		return "malformed"
	}
	return err.Error()
}
