package ipc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HoldMax is the longest a Gate holds a connection's reads: a viewer that
// stops refreshing (a paused screen) still drains its trainers this often,
// so a trainer's writes never wait on it for long.
const HoldMax = 2 * time.Second

// Gate reads a viewer's trainer connections only when the viewer is about
// to refresh. A trainer's batch that arrives between refreshes waits in the
// socket; Open then reads and decodes every connection's backlog in one go,
// in the same wake-up as the refresh. Without it each arrival is a wake-up
// of its own (one per trainer per batch), and on a small virtual machine a
// wake-up costs about as much as the work it does.
//
// A gated connection reads without waiting: when its socket is empty it
// parks at the gate until the next Open, until HoldMax passes, or until it
// is closed.
type Gate struct {
	mu      sync.Mutex
	open    chan struct{} // closed by Open to release the readers parked now
	epoch   int           // Opens so far
	readers int           // gated connections open
	parked  int           // of them, parked since the last Open
	settled chan struct{} // closed when every reader is parked
}

// NewGate returns a closed gate with no connections.
func NewGate() *Gate { return &Gate{open: make(chan struct{})} }

// Open releases every parked connection and waits, at most wait, until
// each has read what its trainer sent and parked again: a gated Watch
// delivers each message before it reads on, so by then every message it
// read has been delivered.
func (g *Gate) Open(wait time.Duration) {
	g.mu.Lock()
	if g.readers == 0 {
		g.mu.Unlock()
		return
	}
	close(g.open)
	g.open = make(chan struct{})
	g.epoch++
	g.parked = 0
	settled := make(chan struct{})
	g.settled = settled
	g.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-settled:
	case <-t.C:
		g.mu.Lock()
		if g.settled == settled {
			g.settled = nil
		}
		g.mu.Unlock()
	}
}

// check closes settled once every reader is parked; g.mu is held.
func (g *Gate) check() {
	if g.settled != nil && g.parked >= g.readers {
		close(g.settled)
		g.settled = nil
	}
}

// add counts a new gated connection.
func (g *Gate) add() {
	g.mu.Lock()
	g.readers++
	g.mu.Unlock()
}

// remove forgets the closed connection r.
func (g *Gate) remove(r *gatedReader) {
	g.mu.Lock()
	g.readers--
	g.unparkLocked(r)
	g.check()
	g.mu.Unlock()
}

// park counts r as having nothing to read and returns what releases it.
func (g *Gate) park(r *gatedReader) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.parked++
	r.parkedIn = g.epoch
	g.check()
	return g.open
}

// unpark undoes park for r when it stops waiting.
func (g *Gate) unpark(r *gatedReader) {
	g.mu.Lock()
	g.unparkLocked(r)
	g.mu.Unlock()
}

// unparkLocked uncounts r if it is parked since the last Open; g.mu is held.
func (g *Gate) unparkLocked(r *gatedReader) {
	if r.parkedIn == g.epoch {
		g.parked--
	}
	r.parkedIn = -1
}

// gatedReader reads one connection through a Gate, from its own copy of
// the socket's descriptor, which the Go runtime's poller does not watch.
// A descriptor the poller watches wakes it whenever its trainer writes,
// though nobody waits on it: 64 ranks made 64 such wake-ups a second, a
// quarter of what such a viewer spent. The copy is read only at the gate,
// without waiting.
type gatedReader struct {
	g         *Gate
	mu        sync.Mutex // guards fd: a read never meets a closed descriptor
	fd        int        // -1 once closed
	closed    chan struct{}
	closeOnce sync.Once
	parkedIn  int // the gate's epoch it is parked in, -1 while reading (g.mu)
	// drained: the last read left the socket empty, so the next one
	// parks first instead of asking the socket again (only Read uses it).
	drained bool
	hold    *time.Timer // wait's HoldMax, made once (only Read uses it)
}

// newGatedReader registers c with g: it copies c's descriptor, and then
// closes c, which takes the socket off the poller; the copy keeps it
// open. c must offer its file descriptor.
func newGatedReader(g *Gate, c net.Conn) (*gatedReader, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, errors.New("gated reads need a socket with a file descriptor")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(orig uintptr) { fd, derr = unix.FcntlInt(orig, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("copy the socket descriptor: %w", derr)
	}
	c.Close()
	g.add()
	return &gatedReader{g: g, fd: fd, closed: make(chan struct{}), parkedIn: -1}, nil
}

// Read returns what the socket holds now; when it holds nothing it parks
// at the gate first. A read that did not fill p emptied the socket (a
// stream socket's read takes all it holds, up to len(p)): the next Read
// parks without asking it again, a system call fewer per trainer and
// refresh.
func (r *gatedReader) Read(p []byte) (int, error) {
	for {
		if r.drained {
			if err := r.wait(); err != nil {
				return 0, err
			}
		}
		n, err, again := r.try(p)
		r.drained = again || (err == nil && n < len(p))
		if !again {
			return n, err
		}
	}
}

// try reads once without waiting; again is true when nothing was there.
func (r *gatedReader) try(p []byte) (n int, err error, again bool) {
	r.mu.Lock()
	if r.fd < 0 {
		r.mu.Unlock()
		return 0, net.ErrClosed, false
	}
	n, rerr := rawRead(uintptr(r.fd), p) // the socket is non-blocking: this never waits
	r.mu.Unlock()
	switch {
	case errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EINTR):
		return 0, nil, true
	case rerr != nil:
		return 0, rerr, false
	case n == 0 && len(p) > 0:
		return 0, io.EOF, false
	}
	return n, nil, false
}

// rawRead reads the non-blocking socket fd without telling the scheduler:
// it never waits, and a system call the scheduler hears of after the
// process slept wakes its monitor thread for the rest of the refresh (the
// same reason as the raw /proc reads of metrics/host).
func rawRead(fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// wait parks until the gate opens, HoldMax passes or the reader closes.
func (r *gatedReader) wait() error {
	open := r.g.park(r)
	if r.hold == nil {
		r.hold = time.NewTimer(HoldMax)
	} else {
		r.hold.Reset(HoldMax) // a stopped timer's channel holds nothing since Go 1.23
	}
	defer r.hold.Stop()
	select {
	case <-open:
	case <-r.hold.C:
		r.g.unpark(r)
	case <-r.closed:
		return net.ErrClosed
	}
	return nil
}

// close releases a parked Read, takes the connection off the gate and
// closes the descriptor.
func (r *gatedReader) close() {
	r.closeOnce.Do(func() {
		close(r.closed)
		r.g.remove(r)
		r.mu.Lock()
		unix.Close(r.fd)
		r.fd = -1
		r.mu.Unlock()
	})
}
