package testkit

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Marked lists the live processes whose environment sets
// PIPETOP_SOCKET_DIR to dir: a run started with its own socket directory,
// and every process it started, however it was started (a fork, a spawn,
// a DataLoader worker).
func Marked(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(b, []byte("\x00PIPETOP_SOCKET_DIR="+dir+"\x00")) && !Zombie(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// Zombie is whether pid has exited (and may wait to be reaped).
func Zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err != nil || strings.Contains(string(b), ") Z ")
}
