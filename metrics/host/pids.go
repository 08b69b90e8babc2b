package host

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
	"time"

	"github.com/pipetop/pipetop/metrics"
)

// Source labels of the pid reader's values.
const (
	SourceProcPIDStatus = "/proc/PID/status"
	SourceProcUptime    = "/proc/uptime"
)

// Visibility says how much of a process /proc showed.
type Visibility int

// Visibility values.
const (
	// Visible: every file was read.
	Visible Visibility = iota
	// Hidden: /proc has no such pid: it exited before the read, or it
	// lives in a PID namespace this procfs does not show (the GPU driver
	// reports host pids; inside a container most are not visible).
	Hidden
	// Exited: the process went away between two reads of its files.
	Exited
)

// String names v for the screen and JSON.
func (v Visibility) String() string {
	switch v {
	case Visible:
		return "visible"
	case Hidden:
		return "not visible"
	}
	return "exited"
}

// PIDInfo is one process read by pid.
type PIDInfo struct {
	// PID is the pid asked for, in the namespace of the procfs read.
	PID int
	// NSPID is the pid inside the process's own (innermost) PID namespace,
	// from NSpid in /proc/PID/status: equal to PID outside containers.
	NSPID int
	// UID is the real user id and User its name (the number when the name
	// is unknown); -1 and "" when not visible.
	UID  int
	User string
	// Comm is the short command name, Cmdline the full command line
	// (arguments joined by spaces; "[comm]" for a kernel thread).
	Comm, Cmdline string
	// CPU is the share of one core since the previous Read, in %.
	CPU metrics.Value
	// RSS is the resident set size in bytes.
	RSS metrics.Value
	// Age is how long the process has run, in seconds.
	Age metrics.Value
	// Vis says how much /proc showed; only Visible entries carry values.
	Vis Visibility
}

// PIDReader reads a changing set of processes by pid from /proc: user,
// command line, CPU %, RSS and age. CPU % is a delta between two Reads of
// the same process (a reused pid starts over). Not safe for concurrent use.
type PIDReader struct {
	fs    *procFS
	ticks float64
	page  float64

	prev, cur map[int]procCounters
	prevTime  time.Time
	users     map[int]string
}

// NewPIDReader returns a reader over the procfs mounted at procRoot (""
// means DefaultProcFS).
func NewPIDReader(procRoot string) *PIDReader {
	s := NewProcSampler(0, procRoot)
	return &PIDReader{fs: s.fs, ticks: s.ticks, page: s.page,
		prev: map[int]procCounters{}, cur: map[int]procCounters{}, users: map[int]string{}}
}

// Read returns one PIDInfo per pid, in order, read at now.
func (r *PIDReader) Read(now time.Time, pids []int) []PIDInfo {
	dt := now.Sub(r.prevTime).Seconds()
	clear(r.cur)
	uptime, upOK := r.uptime()
	out := make([]PIDInfo, len(pids))
	for i, pid := range pids {
		out[i] = r.readPID(pid, dt, uptime, upOK)
	}
	r.prev, r.cur = r.cur, r.prev
	r.prevTime = now
	return out
}

func (r *PIDReader) uptime() (float64, bool) {
	b, err := r.fs.read("uptime")
	if err != nil {
		return 0, false
	}
	f, _ := nextField(b)
	return parseDecimal(f)
}

// readPID reads stat, then status, then cmdline; a failure after stat
// means the process exited in between.
func (r *PIDReader) readPID(pid int, dt, uptime float64, upOK bool) PIDInfo {
	p := PIDInfo{PID: pid, NSPID: pid, UID: -1, Vis: Hidden,
		CPU: metrics.Failure(SourceProcPIDStat), RSS: metrics.Failure(SourceProcPIDStat), Age: metrics.Failure(SourceProcPIDStat)}
	b, err := r.fs.readPID(pid, "stat")
	if err != nil {
		return p
	}
	st, err := parseProcStat(b)
	if err != nil {
		return p
	}
	p.Comm = string(st.comm)
	p.Vis = Exited
	b, err = r.fs.readPID(pid, "status")
	if err != nil {
		return p
	}
	uid, nspid, ok := parseStatus(b)
	if !ok {
		return p
	}
	b, err = r.fs.readPID(pid, "cmdline")
	if err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, errGone)) {
		return p
	}
	p.Vis = Visible
	p.UID, p.User = uid, r.userName(uid)
	if nspid > 0 {
		p.NSPID = nspid
	}
	p.Cmdline = cmdline(b, p.Comm)
	p.RSS = metrics.Of(float64(st.rssPages)*r.page, SourceProcPIDStat)
	p.Age = metrics.Unsupported(SourceProcUptime)
	if upOK {
		p.Age = metrics.Of(max(0, uptime-float64(st.startTicks)/r.ticks), SourceProcUptime)
	}
	c := procCounters{start: st.startTicks, cpuTicks: st.cpuTicks}
	r.cur[pid] = c
	p.CPU = metrics.Pending(SourceProcPIDStat)
	if prev, ok := r.prev[pid]; ok && prev.start == c.start && dt > 0 && c.cpuTicks >= prev.cpuTicks {
		p.CPU = metrics.Of(100*float64(c.cpuTicks-prev.cpuTicks)/r.ticks/dt, SourceProcPIDStat)
	}
	return p
}

// parseStatus reads the real uid and the innermost NSpid from
// /proc/PID/status; kernels before 4.1 have no NSpid (the pid is then the
// same everywhere pipetop can see).
func parseStatus(b []byte) (uid, nspid int, ok bool) {
	uid, nspid = -1, 0
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		switch {
		case bytes.HasPrefix(line, []byte("Uid:")):
			f, _ := nextField(line[4:])
			v, good := parseUint(f)
			if !good || v > 1<<31 {
				return -1, 0, false
			}
			uid = int(v)
		case bytes.HasPrefix(line, []byte("NSpid:")):
			rest := line[6:]
			for {
				var f []byte
				f, rest = nextField(rest)
				if len(f) == 0 {
					break
				}
				if v, good := parseUint(f); good && v < 1<<31 {
					nspid = int(v)
				}
			}
		}
	}
	return uid, nspid, uid >= 0
}

// cmdline joins the NUL-separated arguments with spaces; an empty command
// line (kernel thread, zombie) reads "[comm]".
func cmdline(b []byte, comm string) string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return "[" + comm + "]"
	}
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
}

// userName looks uid up once and remembers it.
func (r *PIDReader) userName(uid int) string { return userName(r.users, uid) }

// userName returns uid's login name (its number when unknown), looked up
// once per cache.
func userName(cache map[int]string, uid int) string {
	if n, ok := cache[uid]; ok {
		return n
	}
	n := strconv.Itoa(uid)
	if u, err := user.LookupId(n); err == nil {
		n = u.Username
	}
	cache[uid] = n
	return n
}

// owner is the uid owning root/PID (the process's effective uid), -1
// when it cannot be read.
func owner(root string, pid int) int {
	fi, err := os.Stat(root + "/" + strconv.Itoa(pid))
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
