package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Descends reports whether pid is root or one of its descendants, from the
// parent links in /proc (at most 64 generations up).
func Descends(pid, root int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == root {
			return true
		}
		pid = parentOf(pid)
	}
	return false
}

// parentOf reads the parent pid of pid from /proc; 0 when unknown.
func parentOf(pid int) int {
	b, err := os.ReadFile(filepath.Join(DefaultProcFS, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	st, err := parseProcStat(b)
	if err != nil {
		return 0
	}
	return int(st.ppid)
}

// DiskReadBytes is the bytes pid has read from storage so far: those that
// reached the block layer (read_bytes of /proc/PID/io), page-cache hits
// excluded.
func DiskReadBytes(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(DefaultProcFS, strconv.Itoa(pid), "io"))
	if err != nil {
		return 0, err
	}
	io, err := parseProcIO(b)
	if err != nil {
		return 0, fmt.Errorf("pid %d: %w", pid, err)
	}
	return io.readBytes, nil
}
