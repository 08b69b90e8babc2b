package host

import (
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
