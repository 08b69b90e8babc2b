package bisect

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pipetop/pipetop/metrics/host"
)

// maxFiles bounds the files a loader phase's open descriptors add to its
// record.
const maxFiles = 100000

// fdFile is the record pipetop keeps of the files the loader phase's
// processes held open, beside the instrumentation's files-PID.txt of the
// files they opened.
const fdFile = "files-fd.txt"

// openFiles adds to seen the regular files the processes pids hold open
// for reading only that may be data (not libraries, Python's own files or
// devices; not a log the script writes).
func openFiles(pids []int, seen map[string]bool) map[string]bool {
	if seen == nil {
		seen = map[string]bool{}
		// What pipetop holds open the command inherited (a lock it was
		// started under): not the script's data.
		for _, fd := range mustGlob("/proc/self/fd/*") {
			if path, err := os.Readlink(fd); err == nil {
				seen[path] = false
			}
		}
	}
	for _, pid := range pids {
		dir := filepath.Join("/proc", strconv.Itoa(pid))
		fds, _ := filepath.Glob(filepath.Join(dir, "fd", "*"))
		for _, fd := range fds {
			path, err := os.Readlink(fd)
			if _, known := seen[path]; err != nil || known || len(seen) >= maxFiles || !dataPath(path) || !readOnly(filepath.Join(dir, "fdinfo", filepath.Base(fd))) {
				continue
			}
			if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
				seen[path] = true
			}
		}
	}
	return seen
}

// mustGlob is filepath.Glob without its error (a bad pattern only).
func mustGlob(pattern string) []string {
	out, _ := filepath.Glob(pattern)
	return out
}

// readOnly is whether the descriptor the fdinfo file at path describes
// was opened for reading only (its flags' access mode is O_RDONLY).
func readOnly(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&0o3 == 0
		}
	}
	return false
}

// systemDirs hold no training data.
var systemDirs = []string{"/proc/", "/sys/", "/dev/", "/usr/", "/lib/", "/lib64/", "/bin/", "/sbin/", "/etc/", "/run/", "/var/lib/", "/var/cache/"}

// dataPath is whether path may be training data: an absolute path outside
// the system's directories and Python's packages, not code.
func dataPath(path string) bool {
	if !filepath.IsAbs(path) || strings.HasSuffix(path, " (deleted)") {
		return false
	}
	for _, d := range systemDirs {
		if strings.HasPrefix(path, d) {
			return false
		}
	}
	for _, s := range []string{"/site-packages/", "/dist-packages/", "/lib/python3", "/.cache/pipetop/"} {
		if strings.Contains(path, s) {
			return false
		}
	}
	switch filepath.Ext(path) {
	case ".py", ".pyc", ".so", ".pth":
		return false
	}
	return true
}

// keepFiles writes the files the loader phase's processes held open to
// its directory, for a cold phase to evict.
func (m *meter) keepFiles() {
	if len(m.files) == 0 {
		return
	}
	paths := make([]string, 0, len(m.files))
	for p, data := range m.files {
		if data {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	os.WriteFile(filepath.Join(m.dir, fdFile), []byte(strings.Join(paths, "\n")+"\n"), 0o600)
}

// recorded are the data files the phase in dir read: the instrumentation's
// record of every file its processes opened for reading (files-PID.txt)
// and pipetop's of those they held open (fdFile), each once, those that
// are regular files still.
func recorded(dir, own string) []string {
	lists, _ := filepath.Glob(filepath.Join(dir, "files-*.txt"))
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		f, err := os.Open(l)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			p := sc.Text()
			if p == "" || seen[p] || !dataPath(p) || strings.HasPrefix(p, own+string(os.PathSeparator)) {
				continue
			}
			seen[p] = true
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				out = append(out, p)
			}
		}
		f.Close()
	}
	sort.Strings(out)
	return out
}

// diskReads sums the bytes the run's processes read from storage over the
// measured window: each process's read_bytes from its first reading.
type diskReads struct {
	first, last map[int]uint64
}

// read takes a reading of each of pids: the first call's start the
// window; a process first seen later started inside it, and all it read
// counts.
func (d *diskReads) read(pids []int) {
	started := d.first != nil
	if !started {
		d.first, d.last = map[int]uint64{}, map[int]uint64{}
	}
	for _, pid := range pids {
		n, err := host.DiskReadBytes(pid)
		if err != nil {
			continue
		}
		if _, ok := d.first[pid]; !ok {
			d.first[pid] = 0
			if !started {
				d.first[pid] = n
			}
		}
		d.last[pid] = n
	}
}

// total is the bytes read since the first reading.
func (d *diskReads) total() uint64 {
	var sum uint64
	for pid, n := range d.last {
		sum += n - min(n, d.first[pid])
	}
	return sum
}

// pageSize is the size of a memory page, for statm's counts.
var pageSize = float64(os.Getpagesize())

// treeRSSNow is the resident memory of the processes pids now (bytes,
// from /proc/PID/statm), 0 when none could be read.
func treeRSSNow(pids []int) float64 {
	var sum float64
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		if pages, err := strconv.ParseFloat(f[1], 64); err == nil {
			sum += pages * pageSize
		}
	}
	return sum
}
