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
	conn     *net.UnixConn
	queue    chan []byte
	dropped  atomic.Int64
	progress atomic.Bool // its hello accepts progress frames
	aggs     atomic.Bool // its hello accepts agg frames
	brief    atomic.Bool // ... brief ones (AcceptAggBrief)
	// aggOn: it is sent agg frames instead of steps (guarded by the
	// server's vmu). It turns on where an aggregate begins, after its
	// hello accepted them, so that every step reaches it once.
	aggOn bool
	// backfill: its hello asks for the steps sent before it attached;
	// filled: they went out (guarded by vmu), mark: how many steps the
	// server had sent when it attached (history.total; guarded by vmu).
	backfill  atomic.Bool
	filled    bool
	mark      int64
	batch     atomic.Int64 // ns its hello asks frames to be held (BatchMs)
	writes    atomic.Int64 // writes made to it, for tests of batching
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
	var out net.Buffers
	var last time.Time
	for {
		var f []byte
		select {
		case <-v.closed:
			return
		case <-v.finishing:
			v.drainAndClose()
			return
		case f = <-v.queue:
		}
		if !v.linger(last) {
			return
		}
		out = append(out[:0], f)
		out = v.take(out)
		if d := v.dropped.Load(); d != reported {
			reported = d
			out = append(out, appendJSON(nil, Frame{Type: TypeDrops, Dropped: d}))
		}
		last = time.Now()
		if !v.writev(&out) {
			return
		}
	}
}

// linger holds a frame until the viewer's batch interval has passed since
// the last write (when it asked for one), so what gathers meanwhile goes
// out in the same write. False means the viewer closed meanwhile; a
// finishing server stops the wait at once.
func (v *viewer) linger(last time.Time) bool {
	batch := time.Duration(v.batch.Load())
	wait := time.Until(last.Add(batch))
	if batch <= 0 || wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-v.closed:
		return false
	case <-v.finishing:
	case <-t.C:
	}
	return true
}

// take appends every frame queued now to out.
func (v *viewer) take(out net.Buffers) net.Buffers {
	for {
		select {
		case f := <-v.queue:
			out = append(out, f)
		default:
			return out
		}
	}
}

// drainAndClose writes what is queued, then closes: the trainer is
// shutting down.
func (v *viewer) drainAndClose() {
	out := v.take(nil)
	if len(out) > 0 && !v.writev(&out) {
		return
	}
	v.close()
}

func (v *viewer) write(b []byte) bool {
	out := net.Buffers{b}
	return v.writev(&out)
}

// writev writes every buffer in *out with as few system calls as the
// socket allows; a failed or timed-out write closes the viewer.
func (v *viewer) writev(out *net.Buffers) bool {
	v.writes.Add(1)
	v.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := out.WriteTo(v.conn); err != nil {
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
		v.backfill.Store(f.Hello.Accepting(TypeBackfill)) // before aggs: see Server.aggsOn
		v.brief.Store(f.Hello.Accepting(AcceptAggBrief))  // before aggs: read with it
		v.aggs.Store(f.Hello.Accepting(TypeAgg))
		v.batch.Store(int64(batchOf(f.Hello)))
	}
}

// batchOf is how long a viewer's hello asks frames to be held, within
// [0, MaxBatchMs].
func batchOf(h *Hello) time.Duration {
	if h == nil {
		return 0
	}
	return time.Duration(min(max(h.BatchMs, 0), MaxBatchMs)) * time.Millisecond
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
