// Package host samples the machine pipetop runs on: per-core CPU
// utilisation, load average, memory and swap (CPUSampler), and one watched
// process with its children (ProcSampler), and every thread of that tree
// with the CPU the host lets it have: run-queue wait, CPU pressure and the
// cgroup quota (ThreadSampler).
//
// Both samplers read /proc directly with reusable buffers and
// allocation-free parsers rather than through gopsutil, whose per-call
// parsing allocates heavily; the tests cross-check the readings against
// gopsutil. Rates (CPU %, IO bytes/s) are deltas between two Sample calls,
// so no call ever sleeps.
package host

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// DefaultProcFS is the procfs mount the samplers read unless told otherwise.
const DefaultProcFS = "/proc"

// procFS reads small files under a procfs root into one reusable buffer.
// A file read once stays open and is read again from offset 0 (a /proc
// file is regenerated on each read from its start), so a refresh costs
// one system call per file instead of four.
//
// The calls are raw: they do not tell the Go scheduler that the thread is
// in the kernel. A /proc read never waits for I/O, and a scheduler told of
// a system call after the process slept wakes its monitor thread, which
// then polls every 20 µs for the rest of the refresh; on a small virtual
// machine those wake-ups cost more than the reads.
type procFS struct {
	root string
	buf  []byte
	path []byte
	open map[string]int // files kept open, by path; nil: none are kept
}

// maxOpenFiles bounds the files a procFS keeps open; past it they are all
// closed and opened again as they are read.
const maxOpenFiles = 512

func newProcFS(root string) *procFS {
	if root == "" {
		root = DefaultProcFS
	}
	p := &procFS{root: root, buf: make([]byte, 16<<10), path: make([]byte, 0, 128)}
	if isProcfs(root) {
		p.open = map[string]int{}
	}
	return p
}

// isProcfs says whether root is a procfs mount. Only there does a kept
// file fail once its process is gone; a copy of /proc on disk (the tests'
// trees) keeps answering with what a removed file held, so its files are
// opened for every read.
func isProcfs(root string) bool {
	const procSuperMagic = 0x9fa0
	var st syscall.Statfs_t
	return syscall.Statfs(root, &st) == nil && st.Type == procSuperMagic
}

// read returns the content of root/name; the slice is valid until the next
// read. The buffer grows for large files (a /proc/stat with many cores).
func (p *procFS) read(name string) ([]byte, error) {
	p.path = append(append(append(p.path[:0], p.root...), '/'), name...)
	return p.readPath()
}

// readPID returns root/PID/file.
func (p *procFS) readPID(pid int, file string) ([]byte, error) {
	p.path = append(append(p.path[:0], p.root...), '/')
	p.path = strconv.AppendInt(p.path, int64(pid), 10)
	p.path = append(append(p.path, '/'), file...)
	return p.readPath()
}

// readPath reads p.path through the file kept open for it, or opens it. A
// kept file that fails (its process exited: a new one may have its pid
// now) is closed and the path opened again.
func (p *procFS) readPath() ([]byte, error) {
	if fd, ok := p.open[string(p.path)]; ok {
		if b, err := p.readAll(fd); err == nil {
			return b, nil
		}
		rawClose(fd)
		delete(p.open, string(p.path))
	}
	path := string(p.path)
	fd, err := rawOpen(append(p.path, 0))
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	b, err := p.readAll(fd)
	if err != nil || p.open == nil {
		rawClose(fd)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if p.open == nil {
		return b, nil
	}
	if len(p.open) >= maxOpenFiles {
		p.Close()
	}
	p.open[path] = fd
	return b, nil
}

// readAll reads fd from offset 0 to its end into p.buf.
func (p *procFS) readAll(fd int) ([]byte, error) {
	n := 0
	for {
		m, err := rawPread(fd, p.buf[n:], n)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return p.buf[:n], nil
		}
		n += m
		if n < len(p.buf) {
			// A short read is the end: a /proc file hands out as
			// much as fits each read (and a plain file all it has
			// left), so asking again would only read nothing.
			return p.buf[:n], nil
		}
		if n == len(p.buf) {
			if len(p.buf) >= 16<<20 {
				return nil, errors.New("larger than 16 MiB")
			}
			p.buf = append(p.buf, make([]byte, len(p.buf))...)
		}
	}
}

// Close closes every file kept open.
func (p *procFS) Close() {
	for path, fd := range p.open {
		rawClose(fd)
		delete(p.open, path)
	}
}

// rawOpen opens the NUL-terminated path read-only, retrying when a signal
// interrupts it.
func rawOpen(path []byte) (int, error) {
	for {
		fd, _, errno := syscall.RawSyscall6(syscall.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(&path[0])),
			syscall.O_RDONLY|syscall.O_CLOEXEC, 0, 0, 0)
		if errno != syscall.EINTR {
			if errno != 0 {
				return -1, errno
			}
			return int(fd), nil
		}
	}
}

// atFDCWD is AT_FDCWD: paths relative to the working directory.
const atFDCWD = ^uintptr(99) // -100

// rawPread reads fd at off into b.
func rawPread(fd int, b []byte, off int) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, errno := syscall.RawSyscall6(syscall.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

func rawClose(fd int) { syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(fd), 0, 0) }

// ClockTicks returns the kernel's USER_HZ (jiffies per second of the
// /proc CPU counters) from the AT_CLKTCK auxiliary vector entry, or 100,
// the value on every mainstream Linux build, when it cannot be read.
func ClockTicks() float64 {
	const atClkTck = 17
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil || strconv.IntSize != 64 {
		return 100
	}
	for ; len(b) >= 16; b = b[16:] {
		key := binary.NativeEndian.Uint64(b)
		val := binary.NativeEndian.Uint64(b[8:])
		if key == atClkTck && val > 0 {
			return float64(val)
		}
		if key == 0 {
			break
		}
	}
	return 100
}
