package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pipetop/pipetop/metrics"
)

// Source labels of the process sampler's values.
const (
	SourceProcPIDStat = "/proc/PID/stat"
	SourceProcPIDIO   = "/proc/PID/io"
)

// MaxChildren bounds how many descendants of the watched process are listed.
const MaxChildren = 256

// ProcInfo is one process of the watched tree.
type ProcInfo struct {
	PID  int
	PPID int
	// Comm is the kernel's short command name (up to 15 bytes).
	Comm string
	// User is the name (or uid) of the process's owner; empty when unknown.
	User string
	// CPU is the share of one core used since the previous sample, in %;
	// a process with several busy threads reads above 100.
	CPU metrics.Value
	// RSS is the resident set size in bytes.
	RSS metrics.Value
	// Threads is the number of threads.
	Threads metrics.Value
	// ReadRate and WriteRate are bytes/s through read/write system calls,
	// page-cache hits included (rchar/wchar).
	ReadRate, WriteRate metrics.Value
	// DiskReadRate and DiskWriteRate are bytes/s that reached the block
	// layer (read_bytes/write_bytes).
	DiskReadRate, DiskWriteRate metrics.Value
}

// ProcSnapshot is one reading of the watched process and its descendants.
type ProcSnapshot struct {
	// Time is the now passed to the Sample that produced this snapshot.
	Time time.Time
	// Alive is false when the watched process does not exist (any more).
	Alive bool
	// Process is the watched process itself.
	Process ProcInfo
	// Children are its descendants (loader workers, compilers, shells),
	// ordered by PID, at most MaxChildren.
	Children []ProcInfo
	// Truncated is set when the tree had more than MaxChildren descendants.
	Truncated bool
}

// ProcSampler samples one process (the trainer) and its descendants: CPU %,
// RSS, threads and IO rates from /proc/PID/{stat,io}. It implements
// metrics.Sampler.
type ProcSampler struct {
	fs    *procFS
	ticks float64
	page  float64

	// Owned by Sample.
	pid      int
	prev     map[int]procCounters
	cur      map[int]procCounters
	prevTime time.Time
	kids     []int     // the descendants found by the last walk
	walked   time.Time // when the tree was last walked; zero: walk next
	rewalk   bool      // this Sample walks the tree (and reads every owner again)
	forks    forkWatch
	dirBuf   []string
	users    map[int]string

	mu   sync.Mutex
	snap ProcSnapshot
}

// procCounters are the cumulative counters of one process at one sample.
type procCounters struct {
	start    uint64
	cpuTicks uint64
	io       procIO
	ioOK     bool
	uid      int // the owner, -1 when unknown
}

var _ metrics.Sampler = (*ProcSampler)(nil)

// NewProcSampler returns a sampler watching pid through the procfs mounted
// at procRoot ("" means DefaultProcFS).
func NewProcSampler(pid int, procRoot string) *ProcSampler {
	fs := newProcFS(procRoot)
	return &ProcSampler{
		fs:    fs,
		forks: forkWatch{fs: fs},
		ticks: ClockTicks(),
		page:  float64(os.Getpagesize()),
		pid:   pid,
		prev:  make(map[int]procCounters),
		cur:   make(map[int]procCounters),
		users: make(map[int]string),
	}
}

// Name implements metrics.Sampler.
func (s *ProcSampler) Name() string { return "proc" }

// SetPID switches the watched process (a new trainer attached); rates start
// over. It must not be called concurrently with Sample.
func (s *ProcSampler) SetPID(pid int) {
	s.pid = pid
	s.walked = time.Time{}
	clear(s.prev)
}

// Sample implements metrics.Sampler. A watched process that is gone yields
// Alive=false and an error naming the pid.
func (s *ProcSampler) Sample(now time.Time) error {
	dt := now.Sub(s.prevTime).Seconds()
	clear(s.cur)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap.Time = now
	s.rewalk = walkDue(s.walked, now, s.forks.forked())
	err := s.readOne(s.pid, dt, &s.snap.Process)
	if err != nil {
		s.snap.Alive = false
		s.snap.Children = s.snap.Children[:0]
		clear(s.prev)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errGone) {
			return fmt.Errorf("process %d is gone", s.pid)
		}
		return fmt.Errorf("process %d: %w", s.pid, err)
	}
	s.snap.Alive = true
	s.sampleChildren(now, dt)
	s.prev, s.cur = s.cur, s.prev
	s.prevTime = now
	return nil
}

// errGone marks a process that exited between listing and reading.
var errGone = errors.New("process exited")

// TreeEvery is the shortest time between two walks of the process tree
// for new descendants; in between a sampler reads the ones it knows. A
// walk reads a file per thread of every process in the tree (a PyTorch
// trainer and its loader workers have dozens), the sampling itself two per
// process. A descendant that exits makes the next sample walk again.
const TreeEvery = 5 * time.Second

// TreeQuiet is the longest: after TreeEvery a tree is walked again only
// when the kernel has handed out a pid since the last walk (a process or a
// thread was created somewhere on the host; forkWatch), and after
// TreeQuiet whatever happened, for what no new pid announces: a process
// whose owner changed, one moved to another cgroup, a thread renamed by
// another.
const TreeQuiet = time.Minute

// walkDue reports whether a tree last walked at walked (zero: never, or
// asked again) is to be walked at now: TreeEvery has passed and a pid was
// handed out since (forked), TreeQuiet has passed, or the clock went back.
func walkDue(walked, now time.Time, forked bool) bool {
	if walked.IsZero() || now.Before(walked) {
		return true
	}
	age := now.Sub(walked)
	return age >= TreeQuiet || forked && age >= TreeEvery
}

// forkWatch tells whether a process or a thread may have been created
// since the last walk, from /proc/loadavg's last field (the pid the kernel
// handed out last: every fork and every new thread moves it, in the pid
// namespace of the reader and every one above). One small read a sample,
// where a walk reads a file per thread of the tree.
type forkWatch struct {
	fs     *procFS
	walked int // the last pid at the last walk; 0: unknown
	now    int // the last pid read by the latest forked
}

// forked reads the last pid; true when it moved since the last walk or
// cannot be read.
func (w *forkWatch) forked() bool {
	w.now = 0
	if b, err := w.fs.read("loadavg"); err == nil {
		w.now, _ = parseLastPID(b)
	}
	return w.now == 0 || w.now != w.walked
}

// walking records the last pid read as the one at this walk: a pid handed
// out during the walk moved it already, so the next forked says so.
func (w *forkWatch) walking() { w.walked = w.now }

// sampleChildren reads the descendants, walking the tree first when it is
// due; a child that exits mid-walk is skipped.
func (s *ProcSampler) sampleChildren(now time.Time, dt float64) {
	if s.rewalk {
		s.forks.walking()
		s.walk()
		s.walked = now
	}
	s.snap.Children = s.snap.Children[:0]
	for _, pid := range s.kids {
		var p ProcInfo
		if err := s.readOne(pid, dt, &p); err != nil {
			s.walked = time.Time{} // gone: look for the tree as it is now
			continue
		}
		s.snap.Children = append(s.snap.Children, p)
	}
}

// walk lists the descendants breadth-first into s.kids, sorted.
func (s *ProcSampler) walk() {
	s.kids = s.appendChildren(s.kids[:0], s.pid)
	for i := 0; i < len(s.kids) && len(s.kids) <= MaxChildren; i++ {
		s.kids = s.appendChildren(s.kids, s.kids[i])
	}
	s.snap.Truncated = len(s.kids) > MaxChildren
	if s.snap.Truncated {
		s.kids = s.kids[:MaxChildren]
	}
	slices.Sort(s.kids)
}

// appendChildren appends pid's direct children, read from the per-thread
// /proc/PID/task/TID/children lists.
func (s *ProcSampler) appendChildren(dst []int, pid int) []int {
	tasks, err := s.taskIDs(pid)
	if err != nil {
		return dst
	}
	for _, tid := range tasks {
		b, err := s.fs.read(tid)
		if err != nil {
			continue
		}
		for len(b) > 0 {
			var f []byte
			f, b = nextField(b)
			if len(f) == 0 {
				break
			}
			if c, ok := parseUint(f); ok && c < 1<<31 {
				dst = append(dst, int(c))
			}
		}
	}
	return dst
}

// taskIDs returns "PID/task/TID/children" names for every thread of pid.
func (s *ProcSampler) taskIDs(pid int) ([]string, error) {
	dir := s.fs.root + "/" + strconv.Itoa(pid) + "/task"
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	s.dirBuf = s.dirBuf[:0]
	prefix := strconv.Itoa(pid) + "/task/"
	for _, n := range names {
		s.dirBuf = append(s.dirBuf, prefix+n+"/children")
	}
	return s.dirBuf, nil
}

// readOne fills p from /proc/PID/stat and /proc/PID/io and records the
// counters for the next delta.
func (s *ProcSampler) readOne(pid int, dt float64, p *ProcInfo) error {
	b, err := s.fs.readPID(pid, "stat")
	if err != nil {
		return err
	}
	st, err := parseProcStat(b)
	if err != nil {
		return fmt.Errorf("/proc/%d/%w", pid, err)
	}
	if p.PID != pid || p.Comm != string(st.comm) {
		p.Comm = string(st.comm)
	}
	p.PID, p.PPID = pid, int(st.ppid)
	c := procCounters{start: st.startTicks, cpuTicks: st.cpuTicks, uid: s.owner(pid, st.startTicks)}
	p.User = ""
	if c.uid >= 0 {
		p.User = userName(s.users, c.uid)
	}
	p.RSS = metrics.Of(float64(st.rssPages)*s.page, SourceProcPIDStat)
	p.Threads = metrics.Of(float64(st.threads), SourceProcPIDStat)
	if b, err := s.fs.readPID(pid, "io"); err == nil {
		c.io, err = parseProcIO(b)
		c.ioOK = err == nil
	}
	s.cur[pid] = c
	s.fillRates(p, c, dt)
	return nil
}

// owner is the uid of the process pid started at start: read from
// /proc/PID when first seen and at each walk of the tree, kept in between
// (a process changes its owner rarely, a trainer never).
func (s *ProcSampler) owner(pid int, start uint64) int {
	if prev, ok := s.prev[pid]; ok && prev.start == start && !s.rewalk {
		return prev.uid
	}
	return owner(s.fs.root, pid)
}

// fillRates sets the delta-based values of p; they are Missing on the first
// sample of a process (or of a reused pid).
func (s *ProcSampler) fillRates(p *ProcInfo, c procCounters, dt float64) {
	prev, ok := s.prev[p.PID]
	ok = ok && prev.start == c.start && dt > 0
	p.CPU = metrics.Pending(SourceProcPIDStat)
	if ok && c.cpuTicks >= prev.cpuTicks {
		p.CPU = metrics.Of(100*float64(c.cpuTicks-prev.cpuTicks)/s.ticks/dt, SourceProcPIDStat)
	}
	if !c.ioOK {
		// Unreadable (another user's process) or absent (no task IO
		// accounting in this kernel).
		f := metrics.Unsupported(SourceProcPIDIO)
		p.ReadRate, p.WriteRate, p.DiskReadRate, p.DiskWriteRate = f, f, f, f
		return
	}
	ok = ok && prev.ioOK
	p.ReadRate = rate(c.io.rchar, prev.io.rchar, dt, ok)
	p.WriteRate = rate(c.io.wchar, prev.io.wchar, dt, ok)
	p.DiskReadRate = rate(c.io.readBytes, prev.io.readBytes, dt, ok)
	p.DiskWriteRate = rate(c.io.writeBytes, prev.io.writeBytes, dt, ok)
}

func rate(cur, prev uint64, dt float64, ok bool) metrics.Value {
	if !ok || cur < prev {
		return metrics.Pending(SourceProcPIDIO)
	}
	return metrics.Of(float64(cur-prev)/dt, SourceProcPIDIO)
}

// Snapshot returns a copy of the latest reading; Children is the caller's.
func (s *ProcSampler) Snapshot() ProcSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.snap
	c.Children = append([]ProcInfo(nil), s.snap.Children...)
	return c
}
