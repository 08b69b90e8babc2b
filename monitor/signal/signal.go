// Package signal sends signals to processes the monitor shows, with the
// project's safety rules: nothing under --readonly, never a process of
// another user unless pipetop runs as root, never pid 1 or below, and the
// owner checked right before the signal, not from a refresh ago.
package signal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// ErrReadOnly is returned for every signal under --readonly.
var ErrReadOnly = errors.New("signals are disabled (--readonly)")

// Sender sends signals. The zero value is usable: signals allowed, the
// caller's effective uid read from the OS, /proc at /proc.
type Sender struct {
	// ReadOnly refuses every signal.
	ReadOnly bool
	// UID is the uid whose processes may be signalled (0: any); nil means
	// os.Geteuid().
	UID *int
	// ProcRoot is where procfs is mounted; "" means /proc.
	ProcRoot string
}

// Signal sends sig to pid (a pid of the namespace ProcRoot shows) after
// Check; the error says plainly why nothing was sent.
func (s Sender) Signal(pid int, sig syscall.Signal) error {
	if err := s.Check(pid); err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("send %s to process %d: %w", Name(sig), pid, err)
	}
	return nil
}

// Check says why pid may not be signalled, or nil when it may.
func (s Sender) Check(pid int) error {
	if s.ReadOnly {
		return ErrReadOnly
	}
	if pid <= 1 {
		return fmt.Errorf("refusing to signal pid %d", pid)
	}
	owner, err := s.owner(pid)
	if err != nil {
		return err
	}
	me := os.Geteuid()
	if s.UID != nil {
		me = *s.UID
	}
	if me != 0 && owner != me {
		return fmt.Errorf("process %d belongs to %s: pipetop signals only your own processes unless it runs as root", pid, userName(owner))
	}
	return nil
}

// owner is the effective uid owning the process (the owner of /proc/PID).
func (s Sender) owner(pid int) (int, error) {
	root := s.ProcRoot
	if root == "" {
		root = "/proc"
	}
	fi, err := os.Stat(root + "/" + strconv.Itoa(pid))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("process %d is gone (or not visible here)", pid)
	}
	if err != nil {
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("process %d: owner unknown", pid)
	}
	return int(st.Uid), nil
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(uid)
}

// Name is the signal's conventional name: "SIGTERM", "SIGKILL".
func Name(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return "signal " + strconv.Itoa(int(sig))
}
