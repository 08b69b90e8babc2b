package host

import (
	"bytes"
	"errors"
	"fmt"
)

// This file holds allocation-free parsers for the /proc files the samplers
// read. Each takes the file's bytes and reports malformed input as an error
// naming the file and what was wrong.

// cpuTimes are the jiffy counters of one "cpu" line of /proc/stat.
type cpuTimes struct {
	busy, total uint64
}

// errNoCPULines means /proc/stat had no per-core lines.
var errNoCPULines = errors.New("no cpuN lines")

// parseStat reads /proc/stat: the aggregate line into *all and per-core lines
// into cores, indexed by core number (cores is grown as needed and returned).
// online[i] is set for each core present in this read.
func parseStat(b []byte, all *cpuTimes, cores []cpuTimes, online []bool) ([]cpuTimes, []bool, error) {
	for i := range online {
		online[i] = false
	}
	seen := 0
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		if !bytes.HasPrefix(line, []byte("cpu")) {
			continue
		}
		name, rest := nextField(line)
		t, err := parseCPULine(rest)
		if err != nil {
			return cores, online, fmt.Errorf("/proc/stat line %q: %w", name, err)
		}
		if len(name) == 3 {
			*all = t
			continue
		}
		idx, ok := parseUint(name[3:])
		if !ok || idx > 1<<16 {
			return cores, online, fmt.Errorf("/proc/stat: bad cpu name %q", name)
		}
		for uint64(len(cores)) <= idx {
			cores = append(cores, cpuTimes{})
			online = append(online, false)
		}
		cores[idx], online[idx] = t, true
		seen++
	}
	if seen == 0 {
		return cores, online, fmt.Errorf("/proc/stat: %w", errNoCPULines)
	}
	return cores, online, nil
}

// parseCPULine sums user nice system idle iowait irq softirq steal; guest
// time is already counted in user. Older kernels have fewer columns.
func parseCPULine(b []byte) (cpuTimes, error) {
	var t cpuTimes
	for col := 0; col < 8; col++ {
		var f []byte
		f, b = nextField(b)
		if len(f) == 0 {
			if col < 4 {
				return t, fmt.Errorf("only %d columns, want at least 4", col)
			}
			break
		}
		v, ok := parseUint(f)
		if !ok {
			return t, fmt.Errorf("column %d %q is not a number", col+1, f)
		}
		t.total += v
		if col != 3 && col != 4 { // idle, iowait
			t.busy += v
		}
	}
	return t, nil
}

// memInfo holds the /proc/meminfo fields pipetop shows, in bytes.
type memInfo struct {
	total, available, swapTotal, swapFree uint64
	found                                 uint8 // bit set of fields seen
}

// parseMeminfo reads /proc/meminfo (values in kB).
func parseMeminfo(b []byte) (memInfo, error) {
	var m memInfo
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		key, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		var bit uint8
		switch string(key) {
		case "MemTotal":
			dst, bit = &m.total, 1
		case "MemAvailable":
			dst, bit = &m.available, 2
		case "SwapTotal":
			dst, bit = &m.swapTotal, 4
		case "SwapFree":
			dst, bit = &m.swapFree, 8
		default:
			continue
		}
		f, _ := nextField(rest)
		v, ok := parseUint(f)
		if !ok || v > 1<<53 {
			return m, fmt.Errorf("/proc/meminfo %s: bad value %q", key, f)
		}
		*dst = v * 1024
		m.found |= bit
	}
	if m.found&3 != 3 {
		return m, errors.New("/proc/meminfo: MemTotal or MemAvailable missing")
	}
	return m, nil
}

// parseLoadavg reads the first three fields of /proc/loadavg.
func parseLoadavg(b []byte) ([3]float64, error) {
	var l [3]float64
	for i := range l {
		var f []byte
		f, b = nextField(b)
		v, ok := parseDecimal(f)
		if !ok {
			return l, fmt.Errorf("/proc/loadavg field %d: bad value %q", i+1, f)
		}
		l[i] = v
	}
	return l, nil
}

// parseLastPID reads /proc/loadavg's fifth field: the pid the kernel
// handed out last, to a process or a thread.
func parseLastPID(b []byte) (int, error) {
	var f []byte
	for range 5 {
		f, b = nextField(b)
	}
	v, ok := parseUint(f)
	if !ok || v == 0 || v >= 1<<31 {
		return 0, fmt.Errorf("/proc/loadavg field 5: bad pid %q", f)
	}
	return int(v), nil
}

// procStat holds the fields of /proc/PID/stat pipetop uses.
type procStat struct {
	comm       []byte // aliases the input
	ppid       uint64
	cpuTicks   uint64 // utime + stime
	threads    uint64
	startTicks uint64 // start time since boot, identifies pid reuse
	rssPages   uint64
}

// parseProcStat reads /proc/PID/stat. comm may contain spaces and
// parentheses, so fields are counted from the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	var s procStat
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return s, errors.New("stat: no (comm) field")
	}
	s.comm = b[open+1 : end]
	rest := b[end+1:]
	// Field numbers as in proc(5); field 3 (state) is the first after comm.
	for field := 3; field <= 24; field++ {
		var f []byte
		f, rest = nextField(rest)
		if len(f) == 0 {
			return s, fmt.Errorf("stat: only %d fields", field-1)
		}
		var dst *uint64
		switch field {
		case 4:
			dst = &s.ppid
		case 14, 15:
			v, ok := parseUint(f)
			if !ok {
				return s, fmt.Errorf("stat field %d: bad value %q", field, f)
			}
			s.cpuTicks += v
			continue
		case 20:
			dst = &s.threads
		case 22:
			dst = &s.startTicks
		case 24:
			dst = &s.rssPages
		default:
			continue
		}
		v, ok := parseUint(f)
		if !ok {
			return s, fmt.Errorf("stat field %d: bad value %q", field, f)
		}
		*dst = v
	}
	return s, nil
}

// procIO holds /proc/PID/io counters in bytes.
type procIO struct {
	rchar, wchar, readBytes, writeBytes uint64
}

// parseProcIO reads /proc/PID/io.
func parseProcIO(b []byte) (procIO, error) {
	var p procIO
	found := 0
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		key, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(key) {
		case "rchar":
			dst = &p.rchar
		case "wchar":
			dst = &p.wchar
		case "read_bytes":
			dst = &p.readBytes
		case "write_bytes":
			dst = &p.writeBytes
		default:
			continue
		}
		f, _ := nextField(rest)
		v, ok := parseUint(f)
		if !ok {
			return p, fmt.Errorf("io %s: bad value %q", key, f)
		}
		*dst = v
		found++
	}
	if found < 4 {
		return p, fmt.Errorf("io: %d of 4 counters found", found)
	}
	return p, nil
}

// cutLine splits b at the first newline.
func cutLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// nextField skips leading blanks and returns the next blank-separated field.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' {
		j++
	}
	return b[i:j], b[j:]
}

// parseUint parses a non-empty decimal without allocating; it rejects
// overflow.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// parseDecimal parses "12.34" style numbers as in /proc/loadavg.
func parseDecimal(b []byte) (float64, bool) {
	whole, frac, _ := bytes.Cut(b, []byte("."))
	w, ok := parseUint(whole)
	if !ok {
		return 0, false
	}
	v := float64(w)
	if len(frac) > 0 {
		if len(frac) > 9 {
			return 0, false
		}
		f, ok := parseUint(frac)
		if !ok {
			return 0, false
		}
		scale := 1.0
		for range frac {
			scale *= 10
		}
		v += float64(f) / scale
	}
	return v, true
}
