package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// HelloTimeoutEnv names the environment variable that overrides
// DefaultHelloTimeout, as a Go duration ("500ms", "10s").
const HelloTimeoutEnv = "PIPETOP_HELLO_TIMEOUT"

// DefaultHelloTimeout is how long a viewer waits for a trainer's hello
// after the connection is accepted.
const DefaultHelloTimeout = 5 * time.Second

// HelloTimeout returns $PIPETOP_HELLO_TIMEOUT when it holds a positive
// duration, else DefaultHelloTimeout.
func HelloTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(HelloTimeoutEnv)); err == nil && d > 0 {
		return d
	}
	return DefaultHelloTimeout
}

// AttachError says why a viewer could not attach to a trainer socket: who
// is behind it (as far as known), what went wrong and what to do.
type AttachError struct {
	Path    string // the socket
	Name    string // the trainer's name, from its hello or its socket name
	PID     int    // the trainer's pid, from its hello, SO_PEERCRED or socket name; 0 if unknown
	Problem string // what went wrong, e.g. "accepted but sent no hello within 5s"
	Advice  string // what to do; may be empty
	Err     error  // the underlying error, if any
	// Gone is set when nothing listens on the socket (its trainer exited,
	// or is just starting): Watch looks again quickly and reports nothing.
	Gone bool
}

// Error is one sentence: "trainer demo (pid 4242, socket /run/...) speaks
// protocol 2; this pipetop speaks 1 — upgrade pipetop".
func (e *AttachError) Error() string {
	var b strings.Builder
	b.WriteString("trainer ")
	if e.Name != "" {
		b.WriteString(e.Name + " ")
	}
	b.WriteString("(")
	if e.PID > 0 {
		fmt.Fprintf(&b, "pid %d, ", e.PID)
	}
	b.WriteString("socket " + e.Path + ") " + e.Problem)
	if e.Advice != "" {
		b.WriteString(" — " + e.Advice)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *AttachError) Unwrap() error { return e.Err }

const notATrainer = "is something other than a pipetop trainer listening there? (look with: socat - UNIX-CONNECT:%s)"

// attempt is one connection attempt's view of the peer, for error messages.
type attempt struct {
	path    string
	version int
	peerUID int // from SO_PEERCRED; -1 if unknown
	peerPID int
	batchMs int  // what our hello asks (Hello.BatchMs)
	aggs    bool // our hello accepts agg frames
	brief   bool // ... brief ones
	fill    bool // our hello accepts a backfill frame
	inside  func(Hello) string
}

func (a *attempt) fail(problem, advice string, err error) *AttachError {
	name, pid, _ := ParseSocketName(filepath.Base(a.path))
	if a.peerPID > 0 {
		pid = a.peerPID
	}
	return &AttachError{Path: a.path, Name: name, PID: pid, Problem: problem, Advice: advice, Err: err}
}

// Dial connects to the trainer socket at path, introduces itself and reads
// the trainer's hello within HelloTimeout (or ctx's deadline, if sooner).
// Every way this can fail short of ctx ending is an *AttachError.
func Dial(ctx context.Context, path string) (*Conn, error) {
	return DialView(ctx, path, ViewOptions{})
}

// ViewOptions are what a viewer asks of the trainer in its hello.
type ViewOptions struct {
	// Batch asks the trainer to hold frames up to this long and send what
	// gathered in one write (Hello.BatchMs); 0 sends each frame as it is
	// ready. A viewer that redraws every second sets about half that.
	Batch time.Duration
	// Gate, when set, reads the connection only when the gate opens (at
	// the viewer's refreshes) once the hello is in; see Gate.
	Gate *Gate
	// Aggregates asks for agg frames instead of steps: about one frame a
	// second whatever the step rate, for a viewer that summarizes windows
	// and needs no single step (docs/protocol.md).
	Aggregates bool
	// Backfill asks for the steps the trainer finished in the minute
	// before the attach (a backfill frame after its hello), so that a
	// one-shot or a fresh view judges a run of slow steps at once.
	Backfill bool
	// BriefAggregates asks for brief agg frames (AcceptAggBrief), for a
	// rank a view shows in brief.
	BriefAggregates bool
	// Inside, when set, is asked about each hello that announces a stage
	// word (the trainer leaves its stack samples to the viewer): a
	// non-empty reason (the read from outside is refused) is sent back in
	// a second hello (Hello.StacksInside), and the trainer samples its own.
	Inside func(Hello) string
}

// DialView is Dial with the viewer's wishes in its hello.
func DialView(ctx context.Context, path string, o ViewOptions) (*Conn, error) {
	a := &attempt{path: path, version: Version, peerUID: -1, batchMs: int(o.Batch / time.Millisecond), aggs: o.Aggregates,
		brief: o.Aggregates && o.BriefAggregates, fill: o.Backfill, inside: o.Inside}
	conn, err := a.dial(ctx, HelloTimeout())
	if err != nil || o.Gate == nil {
		return conn, err
	}
	if err := conn.gate(o.Gate); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return conn, nil
}

// Probe attaches to the trainer at path and detaches at once; the error is
// why it could not attach (an *AttachError unless ctx ended).
func Probe(ctx context.Context, path string, timeout time.Duration) error {
	_, err := ProbeHello(ctx, path, timeout)
	return err
}

// ProbeHello is Probe that also returns the trainer's hello.
func ProbeHello(ctx context.Context, path string, timeout time.Duration) (Hello, error) {
	c, err := dialAs(ctx, path, Version, timeout)
	if err != nil {
		return Hello{}, err
	}
	h := c.Hello()
	return h, c.Close()
}

// dialAs is Dial speaking protocol version (tests pretend to be other
// versions) and waiting at most timeout for the hello.
func dialAs(ctx context.Context, path string, version int, timeout time.Duration) (*Conn, error) {
	a := &attempt{path: path, version: version, peerUID: -1}
	return a.dial(ctx, timeout)
}

func (a *attempt) dial(ctx context.Context, timeout time.Duration) (*Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", a.path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, a.connectError(err)
	}
	a.peerUID, a.peerPID = peerCred(c)
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	conn, err := a.greet(c, timeout)
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return conn, nil
}

// greet sends our hello and reads the trainer's.
func (a *attempt) greet(c net.Conn, timeout time.Duration) (*Conn, error) {
	if _, err := c.Write(appendJSON(nil, a.hello(""))); err != nil && !isClosed(err) {
		return nil, a.fail("accepted the connection but not our hello: "+err.Error(), "", err)
	}
	conn := newConn(c)
	line, err := conn.r.ReadLine()
	if err != nil {
		return nil, a.readError(err, timeout)
	}
	f, err := DecodeFrame(line)
	switch {
	case errors.Is(err, ErrVersion):
		return nil, a.versionError(line, err)
	case err != nil:
		return nil, a.fail(fmt.Sprintf("sent a malformed frame at byte %d: %v", conn.r.Offset(), err),
			fmt.Sprintf(notATrainer, a.path), fmt.Errorf("%w: %w", ErrMalformed, err))
	case f.Type == TypeHello && f.V != a.version:
		return nil, a.versionError(line, ErrVersion)
	case f.Type == TypeError:
		return nil, a.refused(f.Error)
	case f.Type != TypeHello:
		return nil, a.fail(fmt.Sprintf("sent a %q frame before its hello", f.Type), fmt.Sprintf(notATrainer, a.path), ErrMalformed)
	}
	conn.hello = *f.Hello
	if a.inside != nil && f.Hello.StageWord != nil {
		if why := a.inside(*f.Hello); why != "" {
			if _, err := c.Write(appendJSON(nil, a.hello(why))); err != nil && !isClosed(err) {
				return nil, a.fail("took our hello but not the second one (stacks_inside): "+err.Error(), "", err)
			}
		}
	}
	return conn, nil
}

// hello is the viewer's hello frame; inside, when set, asks the trainer to
// sample its own stacks (Hello.StacksInside).
func (a *attempt) hello(inside string) Frame {
	accepts := []string{TypeProgress, TypeStacks}
	if a.aggs {
		accepts = append(accepts, TypeAgg)
	}
	if a.brief {
		accepts = append(accepts, AcceptAggBrief)
	}
	if a.fill {
		accepts = append(accepts, TypeBackfill)
	}
	return Frame{Type: TypeHello, V: a.version, Hello: &Hello{Role: "viewer", Accepts: accepts, BatchMs: a.batchMs, StacksInside: inside}}
}

func (a *attempt) connectError(err error) *AttachError {
	switch {
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		if owner := ownerUID(a.path); owner >= 0 && owner != os.Geteuid() {
			return a.fail(fmt.Sprintf("belongs to uid %d: only the same user or root can attach (this pipetop runs as uid %d)", owner, os.Geteuid()),
				fmt.Sprintf("run pipetop as uid %d or as root", owner), err)
		}
		return a.fail("cannot be opened: permission denied", "check the modes of the socket and its directory", err)
	case errors.Is(err, syscall.ECONNREFUSED):
		e := a.fail("refuses connections: its trainer has exited", "pipetop ls removes stale sockets", err)
		e.Gone = true
		return e
	case errors.Is(err, syscall.ENOENT):
		e := a.fail("is gone: its trainer has exited", "", err)
		e.Gone = true
		return e
	}
	return a.fail("cannot be connected to: "+err.Error(), "", err)
}

func (a *attempt) readError(err error, timeout time.Duration) *AttachError {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return a.fail(fmt.Sprintf("accepted but sent no hello within %v", timeout),
			"is the trainer stopped or stuck, or not a pipetop trainer? (raise the wait with "+HelloTimeoutEnv+")", err)
	case errors.Is(err, ErrFrameTooLarge):
		return a.fail("sent a frame over the "+capText+" cap at byte 0", fmt.Sprintf(notATrainer, a.path), err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isClosed(err):
		return a.fail("closed the connection before its hello", "see the trainer's log for why", err)
	}
	return a.fail("failed before its hello: "+err.Error(), "", err)
}

// versionError names both versions from a hello of another version; the
// fields read here (type, v, hello.name, hello.pid) are the same in every
// protocol version, so the mismatch can always be explained.
func (a *attempt) versionError(line []byte, err error) *AttachError {
	var h struct {
		V     int `json:"v"`
		Hello struct {
			Name string `json:"name"`
			PID  int    `json:"pid"`
		} `json:"hello"`
	}
	json.Unmarshal(line, &h) // validate already read v from it
	e := a.fail(fmt.Sprintf("speaks protocol %d; this pipetop speaks %d", h.V, a.version), "upgrade pipetop", err)
	if h.V < a.version {
		e.Advice = fmt.Sprintf("upgrade the trainer's publisher (pipetrain, pipetop_publish.py) to protocol %d, or attach with a pipetop that speaks protocol %d", a.version, h.V)
	}
	if h.Hello.Name != "" {
		e.Name = h.Hello.Name
	}
	if h.Hello.PID > 0 {
		e.PID = h.Hello.PID
	}
	return e
}

// refused explains an error frame sent instead of a hello.
func (a *attempt) refused(msg string) *AttachError {
	me := os.Geteuid()
	if a.peerUID >= 0 && a.peerUID != me && me != 0 {
		return a.fail(fmt.Sprintf("belongs to uid %d: only the same user or root can attach (this pipetop runs as uid %d)", a.peerUID, me),
			fmt.Sprintf("run pipetop as uid %d or as root", a.peerUID), errors.New(msg))
	}
	return a.fail("refused this pipetop: "+msg, "", errors.New(msg))
}

// peerCred returns the uid and pid of the process that listens on c's
// socket, by SO_PEERCRED; -1, 0 when unknown.
func peerCred(c net.Conn) (uid, pid int) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, 0
	}
	uid = -1
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			uid, pid = int(cred.Uid), int(cred.Pid)
		}
	})
	return uid, pid
}

// ownerUID returns the uid owning path, -1 when unknown.
func ownerUID(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// streamError explains an error in the middle of a trainer's stream: a
// malformed or oversized frame names the trainer and the byte offset.
func streamError(ep Endpoint, h Hello, err error, offset int64) error {
	var problem string
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		problem = fmt.Sprintf("sent a frame over the %s cap at byte %d", capText, offset)
	case errors.Is(err, ErrMalformed):
		problem = "sent a " + err.Error()
	default:
		return fmt.Errorf("trainer %s: %w", ep.Path, err)
	}
	name := h.Name
	if name == "" {
		name = ep.Name
	}
	return &AttachError{Path: ep.Path, Name: name, PID: h.PID, Problem: problem,
		Advice: "a bug in its publisher; pipetop keeps retrying", Err: err}
}
