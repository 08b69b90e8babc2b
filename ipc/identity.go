package ipc

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fillIdentity sets the process fields of a trainer's hello.
func fillIdentity(h *Hello) {
	h.PID = os.Getpid()
	if h.HostPID == 0 {
		h.HostPID = HostPID()
	}
	if h.StartNs == 0 {
		h.StartNs = processStart.UnixNano()
	}
}

var processStart = time.Now()

// HostPID returns this process's pid in the outermost pid namespace that
// /proc shows (the first NSpid field), or os.Getpid() when unknown.
func HostPID() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return os.Getpid()
	}
	defer f.Close()
	return parseNSpid(f, os.Getpid())
}

func parseNSpid(r io.Reader, fallback int) int {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "NSpid:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return fallback
		}
		if pid, err := strconv.Atoi(fields[0]); err == nil && pid > 0 {
			return pid
		}
	}
	return fallback
}

// isClosed reports whether err means the peer or we closed the connection.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
