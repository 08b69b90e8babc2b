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
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// DefaultProcFS is the procfs mount the samplers read unless told otherwise.
const DefaultProcFS = "/proc"

// procFS reads small files under a procfs root into one reusable buffer.
type procFS struct {
	root string
	buf  []byte
	path []byte
}

func newProcFS(root string) *procFS {
	if root == "" {
		root = DefaultProcFS
	}
	return &procFS{root: root, buf: make([]byte, 16<<10), path: make([]byte, 0, 128)}
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

// readPath reads p.path with plain system calls: an os.File would also
// offer each /proc file to the network poller (which refuses it), tripling
// the system calls of a sample taken every second.
func (p *procFS) readPath() ([]byte, error) {
	path := string(p.path)
	fd, err := openRetry(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	n := 0
	for {
		m, err := syscall.Read(fd, p.buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if m == 0 {
			return p.buf[:n], nil
		}
		n += m
		if n == len(p.buf) {
			if len(p.buf) >= 16<<20 {
				return nil, fmt.Errorf("read %s: larger than 16 MiB", path)
			}
			p.buf = append(p.buf, make([]byte, len(p.buf))...)
		}
	}
}

// openRetry opens path read-only, retrying when a signal interrupts it.
func openRetry(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// clockTicks returns the kernel's USER_HZ (jiffies per second of the
// /proc CPU counters) from the AT_CLKTCK auxiliary vector entry, or 100,
// the value on every mainstream Linux build, when it cannot be read.
func clockTicks() float64 {
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
