package screen

import (
	"os"
	"syscall"
	"unsafe"
)

// writer is the screen's output: the terminal's file, except that a write the
// terminal can take at once goes out with a raw system call. The Go
// scheduler is then not told that the thread entered the kernel; when it
// is told so right after the process slept, it wakes its monitor thread,
// which polls every 20 µs for the rest of the work at hand — on a small
// virtual machine those wake-ups cost more than drawing the screen.
// Anything larger than rawWriteMax, or a terminal that is not ready for
// output, takes the ordinary path, which may wait.
type writer struct {
	*os.File
	fd uintptr
}

// newWriter wraps f (the terminal).
func newWriter(f *os.File) writer { return writer{File: f, fd: f.Fd()} }

// rawWriteMax is the most a raw write sends: well under what a terminal
// that polls ready takes without waiting.
const rawWriteMax = 2048

// Write writes b, raw when small and the terminal is ready.
func (t writer) Write(b []byte) (int, error) {
	if len(b) > rawWriteMax || !t.ready() {
		return t.File.Write(b)
	}
	n := 0
	for n < len(b) {
		m, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, t.fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			w, err := t.File.Write(b[n:]) // the ordinary path says what went wrong
			return n + w, err
		}
		n += int(m)
	}
	return n, nil
}

// ready says whether the terminal takes output now (poll with no wait).
func (t writer) ready() bool {
	type pollFd struct {
		fd              int32
		events, revents int16
	}
	const pollOut = 0x4
	p := pollFd{fd: int32(t.fd), events: pollOut}
	var zero syscall.Timespec
	n, _, errno := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
	return errno == 0 && n == 1 && p.revents&pollOut != 0
}
