package host

import (
	"bytes"
	"errors"
	"fmt"
)

// This file holds the allocation-free parsers of the scheduler's files the
// thread sampler reads: a thread's schedstat and status, the CPU pressure,
// the cgroup files that set and account a CPU quota, and the mount table
// that says where those files are.

// schedStat is /proc/PID/task/TID/schedstat: time on a CPU and time
// runnable but waiting for one, in ns, and the number of timeslices run.
type schedStat struct {
	runNs, waitNs, slices uint64
}

// parseSchedstat reads the three numbers of a schedstat file.
func parseSchedstat(b []byte) (schedStat, error) {
	var s schedStat
	dst := [3]*uint64{&s.runNs, &s.waitNs, &s.slices}
	for i, d := range dst {
		var f []byte
		f, b = nextField(b)
		v, ok := parseUint(f)
		if !ok {
			return s, fmt.Errorf("schedstat: field %d %q is not a number", i+1, f)
		}
		*d = v
	}
	return s, nil
}

// threadStatus holds the fields of /proc/PID/task/TID/status the thread
// sampler uses. name aliases the input.
type threadStatus struct {
	name []byte
	// threads is the process's thread count ("Threads:").
	threads uint64
	// nvcsw is the involuntary context switches: preempted while runnable.
	nvcsw uint64
	// cpus is the number of CPUs in Cpus_allowed_list (the affinity mask);
	// 0 when the line is absent.
	cpus int
}

// parseThreadStatus reads a thread's status file; Name and
// nonvoluntary_ctxt_switches are required, the rest optional.
func parseThreadStatus(b []byte) (threadStatus, error) {
	var s threadStatus
	var haveName, haveSwitches bool
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		key, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch string(key) {
		case "Name":
			s.name, haveName = bytes.TrimSpace(rest), true
		case "Threads", "nonvoluntary_ctxt_switches":
			f, _ := nextField(rest)
			v, good := parseUint(f)
			if !good {
				return s, fmt.Errorf("status %s: bad value %q", key, f)
			}
			if key[0] == 'T' {
				s.threads = v
			} else {
				s.nvcsw, haveSwitches = v, true
			}
		case "Cpus_allowed_list":
			n, err := countCPUList(bytes.TrimSpace(rest))
			if err != nil {
				return s, fmt.Errorf("status Cpus_allowed_list: %w", err)
			}
			s.cpus = n
		}
	}
	if !haveName || !haveSwitches {
		return s, errors.New("status: no Name or nonvoluntary_ctxt_switches line")
	}
	return s, nil
}

// maxCPU bounds the CPU numbers a CPU list may name.
const maxCPU = 1 << 16

// countCPUList counts the CPUs of a list such as "0-3,8,10-11".
func countCPUList(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		var part []byte
		part, b, _ = bytes.Cut(b, []byte(","))
		lo, hi, isRange := bytes.Cut(part, []byte("-"))
		a, ok := parseUint(lo)
		z := a
		if isRange {
			z, ok = parseUintAnd(hi, ok)
		}
		if !ok || a > z || z >= maxCPU {
			return 0, fmt.Errorf("bad CPU range %q", part)
		}
		n += int(z-a) + 1
	}
	return n, nil
}

// parseUintAnd parses b when ok is still set.
func parseUintAnd(b []byte, ok bool) (uint64, bool) {
	if !ok {
		return 0, false
	}
	return parseUint(b)
}

// Pressure is one line of /proc/pressure/cpu: the share of time in the
// last 10 s in which some (or all) runnable tasks waited for a CPU, in %,
// and the total such time since boot in µs.
type Pressure struct {
	Avg10 float64
	Total uint64
}

// parsePressure reads /proc/pressure/cpu ("some" and, since 5.13,
// "full" lines).
func parsePressure(b []byte) (some, full Pressure, err error) {
	found := false
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		kind, rest := nextField(line)
		var dst *Pressure
		switch string(kind) {
		case "some":
			dst, found = &some, true
		case "full":
			dst = &full
		default:
			continue
		}
		if err := parsePressureLine(rest, dst); err != nil {
			return some, full, fmt.Errorf("pressure %s: %w", kind, err)
		}
	}
	if !found {
		return some, full, errors.New("pressure: no some line")
	}
	return some, full, nil
}

// parsePressureLine reads "avg10=1.00 avg60=… avg300=… total=N".
func parsePressureLine(b []byte, p *Pressure) error {
	var haveAvg, haveTotal bool
	for {
		var f []byte
		f, b = nextField(b)
		if len(f) == 0 {
			break
		}
		key, val, _ := bytes.Cut(f, []byte("="))
		var ok bool
		switch string(key) {
		case "avg10":
			p.Avg10, ok = parseDecimal(val)
			haveAvg = ok
		case "total":
			p.Total, ok = parseUint(val)
			haveTotal = ok
		default:
			continue
		}
		if !ok {
			return fmt.Errorf("bad %s %q", key, val)
		}
	}
	if !haveAvg || !haveTotal {
		return errors.New("no avg10 or total")
	}
	return nil
}

// cgroupLine is one line of /proc/PID/cgroup: the controllers of a v1
// hierarchy (empty for v2) and the process's path in it.
type cgroupLine struct {
	v2   bool
	path []byte
}

// parseProcCgroup returns the process's cpu cgroup: the v1 hierarchy with
// the cpu controller when there is one, else the v2 path.
func parseProcCgroup(b []byte) (v1, v2 cgroupLine, err error) {
	var haveV1, haveV2 bool
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		if len(line) == 0 {
			continue
		}
		_, rest, ok := bytes.Cut(line, []byte(":"))
		ctrls, path, ok2 := bytes.Cut(rest, []byte(":"))
		if !ok || !ok2 || len(path) == 0 || path[0] != '/' {
			return v1, v2, fmt.Errorf("cgroup: bad line %q", line)
		}
		if len(ctrls) == 0 {
			v2, haveV2 = cgroupLine{v2: true, path: path}, true
			continue
		}
		if hasListItem(ctrls, "cpu") {
			v1, haveV1 = cgroupLine{path: path}, true
		}
	}
	if !haveV1 && !haveV2 {
		return v1, v2, errors.New("cgroup: no cpu or unified hierarchy")
	}
	return v1, v2, nil
}

// hasListItem reports whether the comma-separated list holds item.
func hasListItem(list []byte, item string) bool {
	for len(list) > 0 {
		var f []byte
		f, list, _ = bytes.Cut(list, []byte(","))
		if string(f) == item {
			return true
		}
	}
	return false
}

// cgroupMount is a cgroup file system in /proc/self/mountinfo: the path
// of the hierarchy it shows at its mount point.
type cgroupMount struct {
	v2          bool
	root, point []byte
}

// parseMountinfo returns the mounts of the v1 cpu controller and of
// cgroup v2 (each zero when absent). Octal escapes in paths (\040 for a
// space) are left as they are: cgroup mounts do not have them.
func parseMountinfo(b []byte) (v1, v2 cgroupMount) {
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		pre, post, ok := bytes.Cut(line, []byte(" - "))
		if !ok {
			continue
		}
		fstype, rest := nextField(post)
		_, rest = nextField(rest) // source
		opts, _ := nextField(rest)
		var root, point []byte
		for i := 0; i < 5; i++ {
			var f []byte
			f, pre = nextField(pre)
			switch i {
			case 3:
				root = f
			case 4:
				point = f
			}
		}
		if len(point) == 0 || len(root) == 0 {
			continue
		}
		switch {
		case string(fstype) == "cgroup2" && len(v2.point) == 0:
			v2 = cgroupMount{v2: true, root: root, point: point}
		case string(fstype) == "cgroup" && hasListItem(opts, "cpu") && len(v1.point) == 0:
			v1 = cgroupMount{root: root, point: point}
		}
	}
	return v1, v2
}

// cpuMax is a CPU quota: quota µs of CPU time per period µs; quota < 0
// means no limit.
type cpuMax struct {
	quota, period int64
}

// parseCPUMax reads cgroup v2 cpu.max ("max 100000" or "200000 100000").
func parseCPUMax(b []byte) (cpuMax, error) {
	q, rest := nextField(b)
	p, _ := nextField(rest)
	period, ok := parseUint(p)
	if !ok || period == 0 || period > 1<<40 {
		return cpuMax{}, fmt.Errorf("cpu.max: bad period %q", p)
	}
	if string(q) == "max" {
		return cpuMax{quota: -1, period: int64(period)}, nil
	}
	quota, ok := parseUint(q)
	if !ok || quota > 1<<40 {
		return cpuMax{}, fmt.Errorf("cpu.max: bad quota %q", q)
	}
	return cpuMax{quota: int64(quota), period: int64(period)}, nil
}

// parseInt reads a decimal that may be negative (cpu.cfs_quota_us: -1).
func parseInt(b []byte) (int64, bool) {
	b = bytes.TrimSpace(b)
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	v, ok := parseUint(b)
	if !ok || v > 1<<62 {
		return 0, false
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// throttling is a cgroup's cpu.stat: enforcement periods, those in which
// the quota ran out, and the time its tasks were held back, in ns.
type throttling struct {
	periods, throttled, throttledNs uint64
}

// parseCPUStat reads cpu.stat: v2's throttled_usec or v1's throttled_time
// (ns). A v2 cgroup without the cpu controller has no nr_periods: then
// every counter is zero.
func parseCPUStat(b []byte) (throttling, error) {
	var t throttling
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		key, rest := nextField(line)
		f, _ := nextField(rest)
		var dst *uint64
		scale := uint64(1)
		switch string(key) {
		case "nr_periods":
			dst = &t.periods
		case "nr_throttled":
			dst = &t.throttled
		case "throttled_usec":
			dst, scale = &t.throttledNs, 1000
		case "throttled_time":
			dst = &t.throttledNs
		default:
			continue
		}
		v, ok := parseUint(f)
		if !ok || v > (1<<64-1)/scale {
			return t, fmt.Errorf("cpu.stat %s: bad value %q", key, f)
		}
		*dst = v * scale
	}
	if t.throttled > t.periods {
		return t, fmt.Errorf("cpu.stat: %d throttled of %d periods", t.throttled, t.periods)
	}
	return t, nil
}
