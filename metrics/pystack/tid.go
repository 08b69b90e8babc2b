package pystack

import (
	"os"
	"strconv"
)

// tidFinder maps a thread's pthread_t to its native id on 3.10, whose
// thread states do not hold it. A pthread_t is the address of the C
// library's thread descriptor (glibc's and musl's struct pthread), which
// holds the kernel's thread id at an offset fixed for the library build.
// The offset is found once by matching: the first 4-byte-aligned offset
// at which every thread's descriptor holds a distinct id of a task of the
// process (/proc/PID/task). Found from one thread alone, it is used but
// looked for again while the process has more threads.
type tidFinder struct {
	off   int // offset of the id in the descriptor; -1 until found
	sure  bool
	tried uint32 // 1 + the generation of the last search: once a generation
}

// span is how many bytes of each descriptor the search reads.
const span = 2048

// tid is the native id of the thread whose pthread_t is pthread; 0 when
// unknown.
func (f *tidFinder) tid(p *Process, pthread uint64) int {
	if !f.sure && f.tried != p.gen+1 {
		f.tried = p.gen + 1
		f.find(p)
	}
	if f.off < 0 {
		return 0
	}
	b, err := p.read(pthread+uint64(f.off), 4)
	if err != nil {
		return 0
	}
	return max(int(int32(le32(b, 0))), 0)
}

// find looks for the offset from every thread of the process.
func (f *tidFinder) find(p *Process) {
	tasks := taskIDs(p.pid)
	ids := p.pthreads()
	if len(tasks) == 0 || len(ids) == 0 {
		return
	}
	descs := make([][]byte, 0, len(ids))
	for _, id := range ids {
		b := make([]byte, span)
		if p.cache.ReadAt(b, id) != nil {
			return
		}
		descs = append(descs, b)
	}
	for off := 0; off+4 <= span; off += 4 {
		if matches(descs, off, tasks) {
			f.off, f.sure = off, len(descs) > 1
			return
		}
	}
}

// matches reports whether every descriptor holds a distinct task id at off.
func matches(descs [][]byte, off int, tasks map[int]bool) bool {
	seen := make(map[int]bool, len(descs))
	for _, d := range descs {
		id := int(int32(le32(d, off)))
		if !tasks[id] || seen[id] {
			return false
		}
		seen[id] = true
	}
	return true
}

// pthreads is the thread ids (pthread_t) of the main interpreter's threads.
func (p *Process) pthreads() []uint64 {
	interp, err := p.ptr(p.runtime + uint64(p.lay.interpHead))
	if err != nil || interp == 0 {
		return nil
	}
	states, err := p.tstates(interp)
	if err != nil {
		return nil
	}
	ids := make([]uint64, 0, len(states))
	for _, ts := range states {
		ids = append(ids, ts.id)
	}
	return ids
}

// taskIDs is the ids of pid's tasks (its threads), from /proc.
func taskIDs(pid int) map[int]bool {
	if pid <= 0 {
		return nil
	}
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil
	}
	ids := make(map[int]bool, len(entries))
	for _, e := range entries {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			ids[id] = true
		}
	}
	return ids
}
