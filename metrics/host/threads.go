package host

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Thread roles (ThreadInfo.Role), decided by RoleOf.
const (
	// RoleTraining is the thread the publisher named in its hello: the
	// one that runs the training loop.
	RoleTraining = "training"
	// RoleMain is the trainer's first thread when the hello named none
	// (or named another).
	RoleMain = "main"
	// RoleWorker is the first thread of a loader worker process.
	RoleWorker = "worker"
	// RoleIntraOp is a compute pool thread: OpenMP, MKL, torch's own.
	RoleIntraOp = "intra-op"
	// RolePinMemory is a thread that copies batches to pinned memory.
	RolePinMemory = "pin-memory"
	// RoleComm is a collective-communication thread (Gloo, NCCL, c10d).
	RoleComm = "comm"
	// RoleOther is any other thread.
	RoleOther = "other"
	// RolePipetop is a thread of pipetop's own publisher in the trainer
	// (the Python publisher names its threads "pipetop-..."): never the
	// run's.
	RolePipetop = "pipetop"
)

// Roles lists every role in the order the screen and the exporter show
// them.
var Roles = []string{RoleTraining, RoleMain, RoleWorker, RoleIntraOp, RolePinMemory, RoleComm, RoleOther, RolePipetop}

// RoleOf names a thread's role. leader is the thread whose tid is its
// process's pid; trainer says the process is the watched one (else it is
// one of its descendants: a loader worker when it is a direct child);
// training is the training thread's tid from the hello, 0 when unknown.
// Pool threads inherit their process's name (libgomp, MKL and torch's
// intra-op pool do not rename their threads) or carry a pool name.
func RoleOf(name, leaderName []byte, tid, pid, training int, trainer, directChild bool) string {
	switch {
	case training > 0 && tid == training && trainer:
		return RoleTraining
	case tid == pid && trainer:
		return RoleMain
	case tid == pid && directChild:
		return RoleWorker
	case tid == pid:
		return RoleOther
	}
	switch {
	case hasAnyPrefix(name, "pipetop"):
		return RolePipetop
	case hasAnyPrefix(name, "gloo", "nccl", "c10d", "ProcessGroup", "pt_nccl", "NCCL"):
		return RoleComm
	case hasAnyPrefix(name, "pin_memory", "pin-memory", "pt_pin"):
		return RolePinMemory
	case bytes.Equal(name, leaderName), hasAnyPrefix(name, "omp", "OMP", "mkl", "pt_thread_pool", "pt_main", "torch", "tbb", "intraop"):
		return RoleIntraOp
	}
	return RoleOther
}

func hasAnyPrefix(b []byte, prefixes ...string) bool {
	for _, p := range prefixes {
		if bytes.HasPrefix(b, []byte(p)) {
			return true
		}
	}
	return false
}

// ThreadInfo is one thread of the watched tree over the last interval,
// as the sampler reads it and the snapshot shows it (snapshot.Threads).
type ThreadInfo struct {
	PID  int    `json:"pid"`
	TID  int    `json:"tid"`
	Name string `json:"name"`
	// Role is training, main, worker, intra-op, pin-memory, comm, other
	// or pipetop (RoleOf).
	Role string `json:"role"`
	// CPU is the share of the interval the thread ran on a CPU, in % of
	// one core; Wait the share it was runnable but waited for a CPU (the
	// scheduler's run-queue delay). Preempted is involuntary context
	// switches per second. All three are 0 on a thread's first sample
	// (Fresh). Switches is how many times a second it was switched onto a
	// CPU (schedstat's timeslices): with Preempted small, nearly all are
	// voluntary (it blocked, e.g. waiting for a lock or the GIL).
	CPU       float64 `json:"cpu"`
	Wait      float64 `json:"wait"`
	Preempted float64 `json:"preempted"`
	Switches  float64 `json:"switches,omitempty"`
	Fresh     bool    `json:"fresh,omitempty"`
}

// ThreadsReading is one reading of the watched tree's threads and of the
// CPU the host lets them have.
type ThreadsReading struct {
	Time time.Time `json:"-"`
	// Alive is false when the watched process is gone.
	Alive bool `json:"alive"`
	// Threads are every thread of the trainer and its descendants, by
	// pid then tid, at most MaxThreads.
	Threads   []ThreadInfo `json:"threads"`
	Truncated bool         `json:"truncated,omitempty"`
	// AffinityCPUs is the number of CPUs the trainer may run on (its
	// affinity mask); 0 when unknown.
	AffinityCPUs int `json:"affinity_cpus"`
	// Quota is the trainer's cgroup CPU limit.
	Quota CPUQuota `json:"quota"`
	// UsableCores is the CPUs the run may use: the affinity mask, capped
	// by the quota; 0 when unknown.
	UsableCores float64 `json:"usable_cores"`
	// Pressure is the host's CPU pressure (/proc/pressure/cpu); PressureOK
	// is false on kernels without it.
	PressureSome Pressure `json:"pressure_some"`
	PressureFull Pressure `json:"pressure_full"`
	PressureOK   bool     `json:"pressure_ok"`
}

// MaxThreads bounds the threads one reading lists.
const MaxThreads = 1024

// threadCounters are one thread's cumulative counters at its last read,
// and what that read showed. Times are Unix nanoseconds: the struct stays
// under the 128 bytes a map keeps in place, so keeping it allocates
// nothing.
type threadCounters struct {
	at                       int64 // when its schedstat was read
	run, wait, nvcsw, slices uint64
	name                     string // kept so that an unchanged name is not copied again
	// readAt and readWait are when the status (nvcsw, name) was last read
	// and the wait then; preempted is the rate between the last two reads.
	readAt    int64
	readWait  uint64
	preempted float64
	seen      int64 // when the thread was first read
	// cpu, waited, switches and role are what the last read showed;
	// quiet says the thread ran and waited under quietShare of a core
	// since the read before.
	cpu, waited, switches float64
	role                  uint8 // an index in Roles
	quiet                 bool
}

// shown is the ThreadInfo of the thread's last read.
func (c *threadCounters) shown(pid, tid int) ThreadInfo {
	return ThreadInfo{PID: pid, TID: tid, Name: c.name, Role: Roles[c.role], CPU: c.cpu, Wait: c.waited, Preempted: c.preempted, Switches: c.switches}
}

// statusWait is the run-queue wait, in ns, after which a thread's status
// is read again, once that wait is also quietShare of the time since the
// last read: a thread preempted goes back to the run queue, so one that
// waited less since its last read was preempted little or not at all, and
// its switches are read at the next walk or the next wait.
const statusWait = uint64(time.Millisecond)

// A thread that ran and waited for a CPU under quietShare of a core since
// its previous read is quiet: it is read again in the next quietEvery
// window (windows staggered by tid), and until then shows that reading,
// its mean over the last seconds. A trainer's idle pool threads are most
// of its threads, and each read costs the kernel as much for an idle
// thread as for a busy one.
const (
	quietShare = 0.01
	quietEvery = 4 * time.Second
)

// watchedProc is one process of the walked tree with its threads.
type watchedProc struct {
	pid         int
	directChild bool
	leader      []byte
	tids        []int
}

// ThreadSampler reads every thread of one process tree (the trainer, its
// loader workers and their children): per thread one or two small files
// per refresh (task/TID/schedstat: run time and run-queue wait; a quiet
// thread's only once every quietEvery; task/TID/status: name and
// involuntary switches, read again only for a thread that waited for a CPU
// since it was last read (statusWait), for each process's first thread and
// after a walk: a thread that was preempted waited, and the kernel spends
// more making one status file than the schedstat of every thread of a
// small trainer). The tree and its thread lists are walked again only when
// they change: a thread or process gone, a process whose thread count
// moved (read for free from its first thread's status), or for new
// processes when walkDue says so. It also reads the host's CPU pressure
// and the trainer's cgroup quota. Not safe for concurrent Sample calls.
type ThreadSampler struct {
	fs       *procFS
	cg       cgroupReader
	pid      int
	training int

	procs    []watchedProc
	walked   time.Time
	rewalked bool // this Sample walked the tree: every status is read
	forks    forkWatch
	prev     map[int]threadCounters
	cur      map[int]threadCounters
	tree     *ProcSampler // borrows its walk of the descendants

	mu   sync.Mutex
	snap ThreadsReading
}

// NewThreadSampler returns a sampler over the procfs at procRoot (""
// means DefaultProcFS); it watches nothing until SetPID.
func NewThreadSampler(procRoot string) *ThreadSampler {
	fs := newProcFS(procRoot)
	return &ThreadSampler{fs: fs, cg: cgroupReader{fs: newProcFS(procRoot)}, forks: forkWatch{fs: fs},
		prev: map[int]threadCounters{}, cur: map[int]threadCounters{}, tree: NewProcSampler(0, procRoot)}
}

// SetPID watches pid's tree; training is the training thread's tid from
// the hello (0 when unknown). Rates start over.
func (s *ThreadSampler) SetPID(pid, training int) {
	s.pid, s.training = pid, training
	s.walked = time.Time{}
	s.tree.pid = pid
	clear(s.prev)
}

// Sample reads every thread at now.
func (s *ThreadSampler) Sample(now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap.Time = now
	s.snap.PressureSome, s.snap.PressureFull, s.snap.PressureOK = s.pressure()
	s.rewalked = walkDue(s.walked, now, s.forks.forked())
	if s.rewalked {
		s.forks.walking()
		s.walk()
		s.walked = now
	}
	clear(s.cur)
	s.snap.Threads = s.snap.Threads[:0]
	s.snap.Alive = false
	for i := range s.procs {
		s.readProc(&s.procs[i])
	}
	s.prev, s.cur = s.cur, s.prev
	if !s.snap.Alive {
		s.walked = time.Time{}
		return fmt.Errorf("threads of process %d: gone", s.pid)
	}
	q, err := s.cg.read()
	s.snap.Quota = q
	s.snap.UsableCores = float64(s.snap.AffinityCPUs)
	if q.CPUs > 0 && (s.snap.UsableCores == 0 || q.CPUs < s.snap.UsableCores) {
		s.snap.UsableCores = q.CPUs
	}
	if err != nil {
		return fmt.Errorf("cgroup of process %d: %w", s.pid, err)
	}
	return nil
}

func (s *ThreadSampler) pressure() (some, full Pressure, ok bool) {
	b, err := s.fs.read("pressure/cpu")
	if err != nil {
		return some, full, false
	}
	some, full, err = parsePressure(b)
	return some, full, err == nil
}

// walk lists the tree's processes and each one's threads, and locates
// the trainer's cgroup.
func (s *ThreadSampler) walk() {
	s.tree.walk()
	s.procs = s.procs[:0]
	s.procs = s.appendProc(s.procs, s.pid, false)
	n := len(s.procs[0].tids)
	for _, kid := range s.tree.kids {
		if n >= MaxThreads {
			break
		}
		s.procs = s.appendProc(s.procs, kid, s.isChild(kid))
		n += len(s.procs[len(s.procs)-1].tids)
	}
	s.snap.Truncated = s.tree.snap.Truncated || n > MaxThreads
	s.cg.locate(s.pid)
}

// isChild reports whether pid's parent is the trainer.
func (s *ThreadSampler) isChild(pid int) bool {
	b, err := s.fs.readPID(pid, "stat")
	if err != nil {
		return false
	}
	st, err := parseProcStat(b)
	return err == nil && int(st.ppid) == s.pid
}

// appendProc adds pid with its thread ids, sorted.
func (s *ThreadSampler) appendProc(dst []watchedProc, pid int, directChild bool) []watchedProc {
	p := watchedProc{pid: pid, directChild: directChild}
	if len(dst) < cap(dst) {
		old := dst[:len(dst)+1][len(dst)]
		p.tids, p.leader = old.tids[:0], old.leader[:0]
	}
	f, err := os.Open(s.fs.root + "/" + strconv.Itoa(pid) + "/task")
	if err == nil {
		names, _ := f.Readdirnames(-1)
		f.Close()
		for _, n := range names {
			if tid, ok := parseUint([]byte(n)); ok && tid < 1<<31 {
				p.tids = append(p.tids, int(tid))
			}
		}
	}
	slices.Sort(p.tids)
	if i := slices.Index(p.tids, pid); i > 0 {
		// The first thread first: its name names the process's pool.
		copy(p.tids[1:i+1], p.tids[:i])
		p.tids[0] = pid
	}
	return append(dst, p)
}

// readProc reads every thread of p but the quiet ones not yet due; a
// thread gone or a thread count that moved makes the next Sample walk
// again.
func (s *ThreadSampler) readProc(p *watchedProc) {
	for _, tid := range p.tids {
		if len(s.snap.Threads) >= MaxThreads {
			return
		}
		prev, known := s.prev[tid]
		if known && s.held(p, tid, &prev) {
			s.cur[tid] = prev
			s.snap.Threads = append(s.snap.Threads, prev.shown(p.pid, tid))
			continue
		}
		b, err := s.fs.readTask(p.pid, tid, "schedstat")
		if err != nil {
			s.walked = time.Time{}
			continue
		}
		ss, err := parseSchedstat(b)
		if err != nil {
			continue
		}
		st, kept := s.keptStatus(p, tid, ss, prev, known)
		if !kept {
			var ok bool
			if st, ok = s.readStatus(p, tid); !ok {
				continue
			}
		}
		if tid == p.pid {
			p.leader = append(p.leader[:0], st.name...)
			if st.threads != uint64(len(p.tids)) {
				s.walked = time.Time{}
			}
			if p.pid == s.pid {
				s.snap.Alive = true
				s.snap.AffinityCPUs = st.cpus
			}
		}
		s.snap.Threads = append(s.snap.Threads, s.thread(p, tid, ss, st, !kept, prev, known))
	}
}

// held reports whether a thread's last read, prev, stands for this Sample:
// the thread was quiet, is not a process's first thread (its count is read
// every time), this Sample did not walk (a walk reads every thread), and
// prev is in the current quietEvery window.
func (s *ThreadSampler) held(p *watchedProc, tid int, prev *threadCounters) bool {
	now := s.snap.Time.UnixNano()
	return prev.quiet && !s.rewalked && tid != p.pid && quietWindow(now, tid) == quietWindow(prev.at, tid)
}

// quietWindow numbers the quietEvery window a time in Unix nanoseconds
// falls in for thread tid; the windows of different threads start a
// quarter apart, so the quiet threads' reads spread over the refreshes.
func quietWindow(unixNano int64, tid int) int64 {
	return (unixNano + int64(tid%4)*int64(quietEvery/4)) / int64(quietEvery)
}

// keptStatus is the status last read (prev; known is false for a thread
// not read before) for a thread that has not waited for a CPU since (see
// statusWait; a rename by another thread shows at the next walk); ok is
// false when the file must be read: a new thread, one seen first less
// than TreeEvery ago (one that names itself after it starts), one that
// waited, a process's first thread (its thread count and affinity), or a
// Sample that walked.
func (s *ThreadSampler) keptStatus(p *watchedProc, tid int, ss schedStat, prev threadCounters, known bool) (threadStatus, bool) {
	now := s.snap.Time.UnixNano()
	if !known || s.rewalked || tid == p.pid || now-prev.seen < int64(TreeEvery) || ss.waitNs < prev.readWait {
		return threadStatus{}, false
	}
	waited := ss.waitNs - prev.readWait
	if waited >= statusWait && float64(waited) >= quietShare*float64(now-prev.readAt) {
		return threadStatus{}, false
	}
	return threadStatus{name: []byte(prev.name), nvcsw: prev.nvcsw}, true
}

// readStatus reads and parses one thread's status file; a thread gone
// makes the next Sample walk again.
func (s *ThreadSampler) readStatus(p *watchedProc, tid int) (threadStatus, bool) {
	b, err := s.fs.readTask(p.pid, tid, "status")
	if err != nil {
		s.walked = time.Time{}
		return threadStatus{}, false
	}
	st, err := parseThreadStatus(b)
	return st, err == nil
}

// thread makes one ThreadInfo and keeps its counters for the next delta;
// read tells whether st was read now, prev is the thread's previous read
// (ok false: none). CPU and Wait are rates since that read, Preempted the
// rate between the last two reads of its status.
func (s *ThreadSampler) thread(p *watchedProc, tid int, ss schedStat, st threadStatus, read bool, prev threadCounters, ok bool) ThreadInfo {
	name := prev.name
	if !ok || name != string(st.name) {
		name = string(st.name)
	}
	role := RoleOf(st.name, p.leader, tid, p.pid, s.training, p.pid == s.pid, p.directChild)
	now := s.snap.Time.UnixNano()
	c := threadCounters{at: now, run: ss.runNs, wait: ss.waitNs, nvcsw: st.nvcsw, slices: ss.slices, name: name,
		readAt: prev.readAt, readWait: prev.readWait, preempted: prev.preempted, seen: prev.seen,
		role: uint8(slices.Index(Roles, role))}
	if !ok {
		c.seen = now
	}
	if read {
		c.preempted = 0
		if ok && c.nvcsw >= prev.nvcsw && now > prev.readAt {
			c.preempted = float64(c.nvcsw-prev.nvcsw) / (float64(now-prev.readAt) / 1e9)
		}
		c.readAt, c.readWait = now, ss.waitNs
	}
	t := c.shown(p.pid, tid)
	dt := float64(now-prev.at) / 1e9
	if !ok || dt <= 0 || c.run < prev.run || c.wait < prev.wait || c.nvcsw < prev.nvcsw || c.slices < prev.slices {
		t.Fresh = true
		c.preempted, t.Preempted = 0, 0
	} else {
		c.cpu = 100 * float64(c.run-prev.run) / 1e9 / dt
		c.waited = 100 * float64(c.wait-prev.wait) / 1e9 / dt
		c.switches = float64(c.slices-prev.slices) / dt
		t.CPU, t.Wait, t.Switches = c.cpu, c.waited, c.switches
		c.quiet = c.cpu+c.waited < 100*quietShare
	}
	s.cur[tid] = c
	return t
}

// Snapshot returns a copy of the latest reading; Threads is the caller's.
func (s *ThreadSampler) Snapshot() ThreadsReading {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.snap
	c.Threads = append([]ThreadInfo(nil), s.snap.Threads...)
	return c
}
