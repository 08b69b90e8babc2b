package ipc

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// viewer is one attached connection on the server side. Frames go through a
// bounded queue; when it is full the frame is dropped and counted, and the
// viewer is told how many it missed once it catches up.
type viewer struct {
	conn      *net.UnixConn
	queue     chan []byte
	dropped   atomic.Int64
	progress  atomic.Bool // its hello accepts progress frames
	closeOnce sync.Once
	closed    chan struct{}
	// finishing asks the writer to write what is queued and close: the
	// trainer is shutting down, and the last steps must still arrive.
	finishOnce sync.Once
	finishing  chan struct{}
	writerDone chan struct{}
}

func newViewer(c *net.UnixConn, queue int) *viewer {
	return &viewer{conn: c, queue: make(chan []byte, queue), closed: make(chan struct{}),
		finishing: make(chan struct{}), writerDone: make(chan struct{})}
}

// finish asks the writer to write what is queued, then close.
func (v *viewer) finish() { v.finishOnce.Do(func() { close(v.finishing) }) }

// offer queues frame without blocking; false means it was dropped.
func (v *viewer) offer(frame []byte) bool {
	select {
	case v.queue <- frame:
		return true
	default:
		v.dropped.Add(1)
		return false
	}
}

// writeTimeout bounds one write, so a viewer that stops reading releases
// its goroutine eventually instead of pinning it forever.
const writeTimeout = 30 * time.Second

func (v *viewer) writeLoop() {
	defer close(v.writerDone)
	var reported int64
	for {
		select {
		case <-v.closed:
			return
		case <-v.finishing:
			for {
				select {
				case f := <-v.queue:
					if !v.write(f) {
						return
					}
				default:
					v.close()
					return
				}
			}
		case f := <-v.queue:
			if d := v.dropped.Load(); d != reported && len(v.queue) == 0 {
				reported = d
				if !v.write(appendJSON(nil, Frame{Type: TypeDrops, Dropped: d})) {
					return
				}
			}
			if !v.write(f) {
				return
			}
		}
	}
}

func (v *viewer) write(b []byte) bool {
	v.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := v.conn.Write(b); err != nil {
		v.close()
		return false
	}
	return true
}

// readLoop reads what the viewer sends: an optional hello, then nothing.
// Anything that is not a valid frame closes the connection; EOF is a clean
// detach. It returns the reason for an unclean close.
func (v *viewer) readLoop() error {
	r := NewReader(v.conn)
	for {
		line, err := r.ReadLine()
		if err != nil {
			select {
			case <-v.closed:
				return nil
			default:
			}
			if isClosed(err) {
				return nil
			}
			return fmt.Errorf("read from viewer: %w", err)
		}
		f, err := DecodeFrame(line)
		if errors.Is(err, ErrVersion) {
			return versionRefusal(helloVersion(line), Version)
		}
		if err != nil {
			return fmt.Errorf("%w at byte %d: %w", ErrMalformed, r.Offset(), err)
		}
		if f.Type != TypeHello {
			return fmt.Errorf("viewer sent a %q frame; only hello is accepted", f.Type)
		}
		v.progress.Store(f.Hello.Accepting(TypeProgress))
	}
}

// sendError tells the viewer why it is being closed, best effort.
func (v *viewer) sendError(err error) {
	v.conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	v.conn.Write(appendJSON(nil, Frame{Type: TypeError, Error: err.Error()}))
}

func (v *viewer) close() {
	v.closeOnce.Do(func() {
		close(v.closed)
		v.conn.Close()
	})
}
