package stacks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/host"
)

// Plain is the hello pipetop makes up for a Python process that runs no
// instrumentation (pipetop attach PID): its pid, its name (the script's,
// else the executable's) and its start, so that the feed can show it and
// Start read its stacks. The process must exist.
func Plain(pid int) (ipc.Hello, error) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ipc.Hello{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	start, err := startNs(pid)
	if err != nil {
		return ipc.Hello{}, fmt.Errorf("pid %d: its start: %w", pid, err)
	}
	return ipc.Hello{Role: "trainer", Name: plainName(cmdline), PID: pid, HostPID: pid, StartNs: start}, nil
}

// startNs is when pid started (Unix ns): its stat's starttime after the
// boot time of /proc/stat.
func startNs(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	ticks, ok := statField(b, 22)
	if !ok {
		return 0, fmt.Errorf("/proc/%d/stat: no starttime in %q", pid, b)
	}
	st, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, err
			}
			return boot*1e9 + int64(float64(ticks)/host.ClockTicks()*1e9), nil
		}
	}
	return 0, errors.New("/proc/stat has no btime")
}

// plainName is the name of a process by its command line: the first
// argument that is a .py file, without it; else the executable's name;
// else python.
func plainName(cmdline []byte) string {
	args := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
	for _, a := range args[1:] {
		if name := strings.TrimSuffix(filepath.Base(a), ".py"); strings.HasSuffix(a, ".py") && name != "" {
			return name
		}
	}
	if name := filepath.Base(args[0]); args[0] != "" && name != "/" {
		return name
	}
	return "python"
}
