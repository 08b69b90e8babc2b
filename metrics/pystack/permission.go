package pystack

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"github.com/pipetop/pipetop/metrics/host"
)

// PermissionError is a process pipetop may not read, with the reason.
type PermissionError struct {
	PID    int
	Reason string
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("pid %d: may not read its memory: %s", e.PID, e.Reason)
}

// Unwrap makes a PermissionError an os.ErrPermission.
func (e *PermissionError) Unwrap() error { return os.ErrPermission }

// capSysPtrace is CAP_SYS_PTRACE's bit in /proc/self/status's CapEff.
const capSysPtrace = 19

// checkOwner refuses another user's process unless pipetop runs as root,
// as pipetop's signals and sockets do.
func checkOwner(pid int) error {
	st, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	if err != nil {
		return fmt.Errorf("pid %d: no such process", pid)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if me := os.Geteuid(); me != 0 && int(sys.Uid) != me {
		return &PermissionError{pid, fmt.Sprintf("it belongs to %s and pipetop runs as %s: reading another user's process needs root",
			userName(int(sys.Uid)), userName(me))}
	}
	return nil
}

// refused is why the kernel refused to let pipetop read pid's memory
// (err: EPERM or EACCES), from what blocks it here.
func refused(pid int, err error) *PermissionError {
	var why []string
	switch scope := ptraceScope(); {
	case scope == 1 && !host.Descends(pid, os.Getpid()) && !hasCap(capSysPtrace):
		why = append(why, "kernel.yama.ptrace_scope is 1, so only its ancestors (pipetop run's own children) or a reader with CAP_SYS_PTRACE may read it: run pipetop as root, or set kernel.yama.ptrace_scope=0")
	case scope == 2 && !hasCap(capSysPtrace):
		why = append(why, "kernel.yama.ptrace_scope is 2, so only a reader with CAP_SYS_PTRACE may read it: run pipetop as root")
	case scope == 3:
		why = append(why, "kernel.yama.ptrace_scope is 3: no process may read another's memory until the machine restarts")
	}
	if os.Geteuid() == 0 && !hasCap(capSysPtrace) {
		why = append(why, "pipetop runs without CAP_SYS_PTRACE, as in a container that drops it (docker run --cap-add=SYS_PTRACE; Kubernetes: securityContext.capabilities.add [SYS_PTRACE])")
	}
	if len(why) == 0 {
		why = append(why, fmt.Sprintf("the kernel refused (%v): the process may have made itself undumpable (setuid, or prctl PR_SET_DUMPABLE 0), or a security module (seccomp, AppArmor, SELinux) forbids process_vm_readv", err))
	}
	return &PermissionError{pid, strings.Join(why, "; ")}
}

// ptraceScope is kernel.yama.ptrace_scope; 0 without Yama.
func ptraceScope() int {
	b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// hasCap reports whether pipetop's effective capabilities hold bit.
func hasCap(bit uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<bit) != 0
		}
	}
	return false
}

// userName is "user NAME (uid N)", or "uid N" when the name is unknown.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("user %s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}
