package ipc

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipetop/pipetop/metrics/stage"
)

// ServerOptions tunes a Server. Zero values pick the defaults.
type ServerOptions struct {
	Dir         string        // socket directory; default Dir()
	Path        string        // exact socket path; overrides Dir and the name
	Flush       time.Duration // how often pending steps are sent; default 50ms
	Pending     int           // steps buffered between flushes; default 8192
	ViewerQueue int           // frames queued per viewer; default 256
	// Progress, when set, is sampled every ProgressEvery (default 1s) on
	// the publisher goroutine and sent to the viewers that accept progress
	// frames. Timer.Progress fits; it must be safe to call concurrently
	// with the loop.
	Progress      func() stage.Progress
	ProgressEvery time.Duration
	Logf          func(format string, args ...any)
}

// ServerStats counts what the server did.
type ServerStats struct {
	Viewers   int   // attached now
	Accepted  int64 // viewers ever attached
	Refused   int64 // connections refused (credentials, bad hello)
	Dropped   int64 // frames dropped for slow viewers, all viewers together
	Overflow  int64 // steps dropped because the publisher fell behind
	Published int64 // steps published
}

// Server is the trainer side: it listens on a Unix socket and streams
// frames to any number of viewers. Publishing never blocks on a viewer.
type Server struct {
	opts  ServerOptions
	path  string
	ln    *net.UnixListener
	hello Frame

	mu      sync.Mutex // guards pending, overflow, stages, loader
	pending []stage.Record
	head    int // ring index of the oldest pending record
	count   int
	stages  []byte // encoded stages frame, nil until the list changes
	loader  []byte // encoded latest loader frame
	fresh   bool   // loader not yet broadcast

	vmu     sync.Mutex
	viewers map[*viewer]struct{}
	hist    history // the steps sent, for viewers that attach later (guarded by vmu)

	accepted, refused, dropped, overflow, published atomic.Int64
	refusals                                        refusalLog
	progress                                        atomic.Pointer[func() stage.Progress]

	// agg folds the flushed steps into the next aggregate and aggStart
	// is when it began; the publisher goroutine's alone.
	agg      *stage.Aggregator
	aggStart time.Time

	flushNow chan struct{}
	done     chan struct{}
	wg       sync.WaitGroup
}

// Listen creates the socket for a trainer called name and starts serving.
// hello.Stages must be the stage list that published records use.
func Listen(name string, hello Hello, opts ServerOptions) (*Server, error) {
	if err := hello.validate(); err != nil {
		return nil, fmt.Errorf("listen as %s: %w", name, err)
	}
	opts = withDefaults(opts)
	path := opts.Path
	if path == "" {
		dir := opts.Dir
		if dir == "" {
			dir = Dir()
		}
		if err := ensureDir(dir); err != nil {
			return nil, err
		}
		path = filepath.Join(dir, SocketName(name, os.Getpid()))
	}
	os.Remove(path) // a stale socket of our own pid
	ln, err := listenUnix(path)
	if err != nil {
		return nil, err
	}
	hello.Role, hello.Name = "trainer", name
	fillIdentity(&hello)
	s := &Server{
		opts: opts, path: path, ln: ln,
		hello:    Frame{Type: TypeHello, V: Version, Hello: &hello},
		pending:  make([]stage.Record, opts.Pending),
		viewers:  map[*viewer]struct{}{},
		flushNow: make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	if opts.Progress != nil {
		s.SetProgress(opts.Progress)
	}
	s.wg.Add(2)
	go s.acceptLoop()
	go s.publishLoop()
	return s, nil
}

func withDefaults(o ServerOptions) ServerOptions {
	if o.Flush <= 0 {
		o.Flush = 50 * time.Millisecond
	}
	if o.Pending <= 0 {
		o.Pending = 8192
	}
	if o.ViewerQueue <= 0 {
		o.ViewerQueue = 256
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = time.Second
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return o
}

func listenUnix(path string) (*net.UnixListener, error) {
	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	return ln, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Publish queues a copy of r for the viewers. It never blocks on a viewer;
// when the publisher falls more than Pending steps behind, the oldest
// pending step is dropped and counted.
func (s *Server) Publish(r *stage.Record) {
	s.mu.Lock()
	n := len(s.pending)
	if s.count == n {
		s.head = (s.head + 1) % n
		s.count--
		s.overflow.Add(1)
	}
	s.pending[(s.head+s.count)%n] = *r
	s.count++
	s.mu.Unlock()
	s.published.Add(1)
}

// SetStages announces a new stage list; later records are indexed by it.
func (s *Server) SetStages(names []string) {
	f := appendJSON(nil, Frame{Type: TypeStages, Stages: names})
	s.mu.Lock()
	s.hello.Hello.Stages = append([]string(nil), names...)
	s.stages = f
	s.mu.Unlock()
	s.kick()
}

// PublishLoader sends loader statistics to the viewers, and to viewers that
// attach later.
func (s *Server) PublishLoader(ls stage.LoaderStats) {
	f := appendJSON(nil, Frame{Type: TypeLoader, Loader: &ls})
	s.mu.Lock()
	s.loader, s.fresh = f, true
	s.mu.Unlock()
}

// PublishEvent sends a one-off event to the attached viewers.
func (s *Server) PublishEvent(kind, msg string) {
	s.broadcast(appendJSON(nil, Frame{Type: TypeEvent, Event: &Event{TimeNs: time.Now().UnixNano(), Kind: kind, Msg: msg}}))
}

// Stats returns the server's counters.
func (s *Server) Stats() ServerStats {
	s.vmu.Lock()
	n := len(s.viewers)
	s.vmu.Unlock()
	return ServerStats{Viewers: n, Accepted: s.accepted.Load(), Refused: s.refused.Load(),
		Dropped: s.dropped.Load(), Overflow: s.overflow.Load(), Published: s.published.Load()}
}

// Close stops serving, flushes pending steps to the viewers, disconnects
// them and removes the socket.
func (s *Server) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	close(s.done)
	err := s.ln.Close()
	s.wg.Wait() // the publisher has queued the last steps
	s.vmu.Lock()
	vs := make([]*viewer, 0, len(s.viewers))
	for v := range s.viewers {
		vs = append(vs, v)
		v.finish()
	}
	s.vmu.Unlock()
	// Each viewer gets what is queued for it, within closeDrain in all.
	end := time.Now().Add(closeDrain)
	for _, v := range vs {
		select {
		case <-v.writerDone:
		case <-time.After(time.Until(end)):
		}
		v.close()
	}
	return err
}

// closeDrain bounds how long Close waits for viewers to take their last
// frames.
const closeDrain = time.Second

func (s *Server) kick() {
	select {
	case s.flushNow <- struct{}{}:
	default:
	}
}

func (s *Server) publishLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.Flush)
	defer t.Stop()
	var batch []stage.Record
	var lastProgress time.Time
	for {
		select {
		case <-s.done:
			s.flush(&batch)
			s.sendAggregate()
			return
		case <-t.C:
		case <-s.flushNow:
		}
		s.flush(&batch)
		if f := s.progress.Load(); f != nil && time.Since(lastProgress) >= s.opts.ProgressEvery {
			lastProgress = time.Now()
			s.PublishProgress((*f)())
		}
	}
}

// SetProgress sets (or replaces) the function the publisher goroutine
// samples for progress frames; see ServerOptions.Progress.
func (s *Server) SetProgress(f func() stage.Progress) { s.progress.Store(&f) }

// PublishProgress sends where the loop is now to the viewers that accept
// progress frames. ServerOptions.Progress calls it periodically.
func (s *Server) PublishProgress(p stage.Progress) {
	f := appendJSON(nil, Frame{Type: TypeProgress, Progress: &p})
	s.vmu.Lock()
	for v := range s.viewers {
		if v.progress.Load() && !v.offer(f) {
			s.dropped.Add(1)
		}
	}
	s.vmu.Unlock()
}

// maxStepsPerFrame keeps steps frames well under MaxFrame.
const maxStepsPerFrame = 512

func (s *Server) flush(batch *[]stage.Record) {
	s.mu.Lock()
	*batch = (*batch)[:0]
	for ; s.count > 0; s.count-- {
		*batch = append(*batch, s.pending[s.head])
		s.head = (s.head + 1) % len(s.pending)
	}
	stages, loader := s.stages, s.loader
	fresh := s.fresh
	s.stages, s.fresh = nil, false
	names := s.hello.Hello.Stages
	s.mu.Unlock()
	if stages != nil {
		s.sendAggregate() // of the steps of the old list
		s.agg = nil
		s.vmu.Lock()
		s.hist.reset()
		s.vmu.Unlock()
		s.broadcast(stages)
	}
	s.sendSteps(*batch)
	s.aggregate(*batch, names)
	if fresh {
		s.broadcastTo(loader, func(v *viewer) bool { return !v.brief.Load() })
	}
}

// AggregateEvery is how long one aggregate stands for: a viewer that
// accepts agg frames hears of a step up to this much later than of a
// steps frame.
const AggregateEvery = time.Second

// sendSteps sends recs, in frames of at most maxStepsPerFrame, to the
// viewers that take steps frames, after the backfill of the viewers that
// asked for one since, and keeps them for later ones.
func (s *Server) sendSteps(recs []stage.Record) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	s.backfill()
	s.hist.add(recs)
	raw := 0
	for v := range s.viewers {
		if !v.aggOn {
			raw++
		}
	}
	for raw > 0 && len(recs) > 0 {
		k := min(len(recs), maxStepsPerFrame)
		// A frame is shared by every viewer queue, so each gets its own buffer.
		f := appendSteps(nil, recs[:k])
		for v := range s.viewers {
			if !v.aggOn && !v.offer(f) {
				s.dropped.Add(1)
			}
		}
		recs = recs[k:]
	}
}

// aggregate folds recs into the current aggregate and sends it once it
// stands for AggregateEvery or is full.
func (s *Server) aggregate(recs []stage.Record, names []string) {
	if s.agg == nil {
		s.agg, s.aggStart = stage.NewAggregator(names), time.Now()
	}
	for i := range recs {
		s.agg.Add(&recs[i])
		if s.agg.Full() {
			s.sendAggregate()
		}
	}
	if time.Since(s.aggStart) >= AggregateEvery {
		s.sendAggregate()
	}
}

// sendAggregate sends the current aggregate, if it holds steps, to the
// viewers that take agg frames, and starts the next one: viewers whose
// hello accepted agg frames since take them from here on.
func (s *Server) sendAggregate() {
	if s.agg == nil {
		return
	}
	s.aggStart = time.Now()
	if s.agg.Steps() == 0 {
		s.aggsOn(aggFrames{})
		return
	}
	g := s.agg.Take()
	s.vmu.Lock()
	var full, brief bool
	for v := range s.viewers {
		full = full || (v.aggOn && !v.brief.Load())
		brief = brief || (v.aggOn && v.brief.Load())
	}
	s.vmu.Unlock()
	var f aggFrames // each form encoded only for a viewer that takes it
	if full {
		f.full = appendJSON(nil, Frame{Type: TypeAgg, Agg: &g})
	}
	if brief {
		b := g.Brief()
		f.brief = appendJSON(nil, Frame{Type: TypeAgg, Agg: &b})
	}
	s.aggsOn(f)
}

// aggFrames are one aggregate's agg frame, in full and brief; nil when no
// viewer takes that form.
type aggFrames struct{ full, brief []byte }

// aggsOn offers f to the viewers that take agg frames (the brief frame to
// those that asked for it), then turns agg frames on for the viewers whose
// hello accepted them (once their backfill, when they asked for one, went
// out: it comes first).
func (s *Server) aggsOn(f aggFrames) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	for v := range s.viewers {
		b := f.full
		if v.brief.Load() {
			b = f.brief
		}
		if v.aggOn && b != nil && !v.offer(b) {
			s.dropped.Add(1)
		}
		if v.aggs.Load() && (v.filled || !v.backfill.Load()) {
			v.aggOn = true
		}
	}
}

// backfill sends each viewer whose hello asked for it, once, the steps
// sent before it attached that the history still holds (those of the
// last BackfillWindow). Steps sent to it between its attach and its hello
// came before them; the viewer puts them in order.
func (s *Server) backfill() {
	for v := range s.viewers {
		if v.filled || !v.backfill.Load() {
			continue
		}
		v.filled = true
		for _, f := range appendBackfill(nil, s.hist.before(v.mark)) {
			if !v.offer(f) {
				s.dropped.Add(1)
			}
		}
	}
}

// broadcast offers frame to every viewer.
func (s *Server) broadcast(frame []byte) { s.broadcastTo(frame, nil) }

// broadcastTo offers frame to the viewers that wants takes (all when nil).
func (s *Server) broadcastTo(frame []byte, wants func(*viewer) bool) {
	s.vmu.Lock()
	for v := range s.viewers {
		if (wants == nil || wants(v)) && !v.offer(frame) {
			s.dropped.Add(1)
		}
	}
	s.vmu.Unlock()
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.opts.Logf("ipc: accept on %s: %v", s.path, err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go s.serve(c)
	}
}

// serve checks a new connection's credentials, greets it and registers it.
func (s *Server) serve(c *net.UnixConn) {
	if err := checkPeer(c); err != nil {
		s.refused.Add(1)
		s.refusals.log(s.opts.Logf, s.path, err)
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write(appendJSON(nil, Frame{Type: TypeError, Error: err.Error()}))
		c.Close()
		return
	}
	s.mu.Lock()
	greeting := appendJSON(nil, s.hello)
	loader := s.loader
	s.mu.Unlock()
	v := newViewer(c, s.opts.ViewerQueue)
	// The hello goes out before anything is read, so that even a viewer
	// refused for its own hello learns who the trainer is first.
	if !v.write(greeting) {
		return
	}
	if loader != nil {
		v.offer(loader)
	}
	s.vmu.Lock()
	v.mark = s.hist.total // every step before it went to the viewers before it
	s.viewers[v] = struct{}{}
	s.vmu.Unlock()
	s.accepted.Add(1)
	go v.writeLoop()
	err := v.readLoop()
	s.vmu.Lock()
	delete(s.viewers, v)
	s.vmu.Unlock()
	if err != nil {
		s.refused.Add(1)
		s.refusals.log(s.opts.Logf, s.path, err)
		v.sendError(err)
	}
	v.close()
}

// checkPeer allows only the same uid or root, by SO_PEERCRED.
func checkPeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("peer credentials: %w", err)
	}
	if cerr != nil {
		return fmt.Errorf("peer credentials: %w", cerr)
	}
	if cred.Uid != 0 && int(cred.Uid) != os.Geteuid() {
		return &uidError{pid: int(cred.Pid), uid: int(cred.Uid), own: os.Geteuid()}
	}
	return nil
}

// uidError refuses a viewer of another uid.
type uidError struct{ pid, uid, own int }

func (e *uidError) Error() string {
	return fmt.Sprintf("permission denied: viewer pid %d runs as uid %d; only uid %d (the trainer's) or root can attach", e.pid, e.uid, e.own)
}

// EncodeConfig marshals a trainer configuration for Hello.Config.
func EncodeConfig(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
