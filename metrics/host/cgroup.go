package host

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// CPUQuota is the CPU limit of a process's cgroup and how often it bites.
type CPUQuota struct {
	// Version is the cgroup version read (1 or 2); 0 when no cgroup CPU
	// files could be read.
	Version int `json:"version"`
	// Dir is the cgroup directory whose limit binds (the smallest quota
	// of the process's cgroup and its ancestors), or its own without one.
	Dir string `json:"dir,omitempty"`
	// CPUs is the quota in CPUs (quota / period); 0 means no limit.
	CPUs float64 `json:"cpus"`
	// Periods is the number of enforcement periods so far and Throttled
	// those in which the quota ran out; ThrottledSeconds is the time the
	// cgroup's tasks were held back. All are cumulative.
	Periods          uint64  `json:"periods"`
	Throttled        uint64  `json:"throttled"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
}

// cgroupReader reads the CPU quota of one process's cgroup. The cgroup is
// located (and the ancestors' limits compared) by locate; read then costs
// one file.
type cgroupReader struct {
	fs      *procFS
	version int
	dir     string // the binding cgroup
	cpus    float64
}

// locate finds pid's cpu cgroup through root/PID/cgroup and the mount
// table, and the ancestor whose quota is smallest. A process without a
// readable cgroup leaves version 0.
func (c *cgroupReader) locate(pid int) {
	c.version, c.dir, c.cpus = 0, "", 0
	b, err := c.fs.readPID(pid, "cgroup")
	if err != nil {
		return
	}
	l1, l2, err := parseProcCgroup(b)
	if err != nil {
		return
	}
	// The paths alias the buffer the mount table is read into next.
	l1.path, l2.path = []byte(string(l1.path)), []byte(string(l2.path))
	mb, err := c.fs.read("self/mountinfo")
	if err != nil {
		return
	}
	m1, m2 := parseMountinfo(mb)
	line, mount := l1, m1
	if len(l1.path) == 0 || len(m1.point) == 0 {
		line, mount = l2, m2
	}
	if len(line.path) == 0 || len(mount.point) == 0 {
		return
	}
	// The mount aliases the buffer the limits are read into.
	leaf := cgroupDir(mount, line.path)
	c.version = 1
	if mount.v2 {
		c.version = 2
	}
	c.dir = leaf
	point := filepath.Clean(string(mount.point))
	for d := leaf; ; d = filepath.Dir(d) {
		if cpus, ok := c.limit(d); ok && (c.cpus == 0 || cpus < c.cpus) {
			c.dir, c.cpus = d, cpus
		}
		if d == point || len(d) <= len(point) {
			break
		}
	}
}

// cgroupDir is where path's files are under mount: the part of path below
// the mount's root, under the mount point. A path outside the mount's
// root (a cgroup namespace) or a directory that does not exist reads the
// mount point itself.
func cgroupDir(m cgroupMount, path []byte) string {
	rel := path
	if string(m.root) != "/" {
		var ok bool
		if rel, ok = bytes.CutPrefix(path, m.root); !ok {
			rel = nil
		}
	}
	dir := filepath.Join(string(m.point), string(rel))
	if _, err := os.Stat(dir); err != nil {
		return filepath.Clean(string(m.point))
	}
	return dir
}

// limit reads one cgroup directory's quota in CPUs.
func (c *cgroupReader) limit(dir string) (float64, bool) {
	if c.version == 2 {
		b, err := c.fs.readAbs(dir + "/cpu.max")
		if err != nil {
			return 0, false
		}
		m, err := parseCPUMax(b)
		if err != nil || m.quota < 0 {
			return 0, false
		}
		return float64(m.quota) / float64(m.period), true
	}
	b, err := c.fs.readAbs(dir + "/cpu.cfs_quota_us")
	if err != nil {
		return 0, false
	}
	quota, ok := parseInt(b)
	if !ok || quota <= 0 {
		return 0, false
	}
	b, err = c.fs.readAbs(dir + "/cpu.cfs_period_us")
	if err != nil {
		return 0, false
	}
	period, ok := parseInt(b)
	if !ok || period <= 0 {
		return 0, false
	}
	return float64(quota) / float64(period), true
}

// read returns the quota found by locate with the binding cgroup's
// throttling counters.
func (c *cgroupReader) read() (CPUQuota, error) {
	q := CPUQuota{Version: c.version, Dir: c.dir, CPUs: c.cpus}
	if c.version == 0 {
		return q, nil
	}
	b, err := c.fs.readAbs(c.dir + "/cpu.stat")
	if err != nil {
		return q, err
	}
	t, err := parseCPUStat(b)
	if err != nil {
		return q, fmt.Errorf("%s: %w", c.dir, err)
	}
	q.Periods, q.Throttled = t.periods, t.throttled
	q.ThrottledSeconds = float64(t.throttledNs) / 1e9
	return q, nil
}

// readAbs reads a file by its absolute path (cgroup files live outside
// procfs).
func (p *procFS) readAbs(path string) ([]byte, error) {
	p.path = append(p.path[:0], path...)
	return p.readPath()
}

// readTask returns root/PID/task/TID/file without building a string per
// part.
func (p *procFS) readTask(pid, tid int, file string) ([]byte, error) {
	p.path = append(append(p.path[:0], p.root...), '/')
	p.path = strconv.AppendInt(p.path, int64(pid), 10)
	p.path = append(p.path, "/task/"...)
	p.path = strconv.AppendInt(p.path, int64(tid), 10)
	p.path = append(append(p.path, '/'), file...)
	return p.readPath()
}
