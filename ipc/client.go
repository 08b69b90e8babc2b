package ipc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Conn is the viewer side of one connection to a trainer.
type Conn struct {
	c     net.Conn
	src   *connSource
	r     *Reader
	hello Hello
}

// connSource is what a Conn's Reader reads: the socket, waiting for data as
// usual, or through a Gate once the hello is in.
type connSource struct {
	c     net.Conn
	gated *gatedReader
}

func (s *connSource) Read(p []byte) (int, error) {
	if s.gated != nil {
		return s.gated.Read(p)
	}
	return s.c.Read(p)
}

// newConn wraps c for reading frames.
func newConn(c net.Conn) *Conn {
	src := &connSource{c: c}
	return &Conn{c: c, src: src, r: NewReader(src)}
}

// gate makes every later read of c go through g.
func (c *Conn) gate(g *Gate) error {
	r, err := newGatedReader(g, c.c)
	if err != nil {
		return err
	}
	c.src.gated = r
	return nil
}

// Hello is the trainer's greeting.
func (c *Conn) Hello() Hello { return c.hello }

// Next returns the next frame. An error frame from the trainer is returned
// as an error; a malformed frame is an error wrapping ErrMalformed that
// names its byte offset in the stream.
func (c *Conn) Next() (*Frame, error) {
	f, err := c.r.Next()
	if err != nil {
		return nil, err
	}
	if f.Type == TypeError {
		return nil, fmt.Errorf("trainer closed the connection: %s", f.Error)
	}
	return f, nil
}

// Close closes the connection.
func (c *Conn) Close() error {
	if c.src.gated != nil {
		c.src.gated.close() // c.c is closed already: the gate reads a copy
		return nil
	}
	return c.c.Close()
}

// Message is what Watch delivers: a frame, a new connection, a lost one,
// or an attempt that failed.
type Message struct {
	Connected    *Hello // set when a connection (re)opened
	Endpoint     Endpoint
	Frame        *Frame // set for every frame after hello
	Disconnected error  // set when an established connection ended
	// Failed is set when an attempt to attach to Endpoint failed before the
	// trainer's hello: usually an *AttachError saying why and what to do.
	Failed error
	// RetryAt is when Watch tries again, with Disconnected and Failed.
	RetryAt time.Time
}

// Resolver finds the endpoint to connect to; it is asked again before each
// reconnection, so a restarted trainer (new pid, new socket) is found.
type Resolver func() (Endpoint, error)

// ResolveSpec resolves a spec (path, pid or name; empty for the only live
// trainer) against the socket directory. A name keeps matching a restarted
// trainer; a pid does not.
func ResolveSpec(spec string) Resolver {
	return func() (Endpoint, error) {
		if strings.Contains(spec, "/") {
			return Find(nil, spec) // a path needs no list (which connects to every socket)
		}
		eps, err := List()
		if err != nil {
			return Endpoint{}, err
		}
		return Find(eps, spec)
	}
}

// Retry delays of Watch: a trainer that went away or is not there yet is
// looked for again quickly; a socket that answered wrongly (an
// *AttachError) is retried after RetryMin, doubling up to RetryMax.
const (
	RetryMin     = time.Second
	RetryMax     = 30 * time.Second
	lookupMin    = 100 * time.Millisecond
	lookupMax    = 2 * time.Second
	retryDoubles = 2
)

// backoff is a doubling delay between lo and hi.
type backoff struct{ lo, hi, next time.Duration }

func (b *backoff) take() time.Duration {
	if b.next < b.lo {
		b.next = b.lo
	}
	d := b.next
	b.next = min(retryDoubles*b.next, b.hi)
	return d
}

func (b *backoff) reset() { b.next = b.lo }

// Watch connects through resolve and hands every frame to deliver until
// ctx is done, reconnecting when the trainer goes away. A failed attempt
// is delivered as a Failed message with the time of the next try.
// deliver runs on Watch's goroutine, one message at a time: a gated
// connection's messages are applied by the time it parks at the gate.
func Watch(ctx context.Context, resolve Resolver, deliver func(Message), o ViewOptions) {
	lookup := backoff{lo: lookupMin, hi: lookupMax}
	failed := backoff{lo: RetryMin, hi: RetryMax}
	for ctx.Err() == nil {
		wait, ok := attach(ctx, resolve, deliver, o, &lookup, &failed)
		if !ok {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// WatchConn is Watch whose first connection is conn, already made to the
// trainer at ep with o (DialView): a viewer that dialed to read the hello
// first (is it a rank of a run?) watches on that connection instead of
// making another.
func WatchConn(ctx context.Context, conn *Conn, ep Endpoint, resolve Resolver, deliver func(Message), o ViewOptions) {
	lookup := backoff{lo: lookupMin, hi: lookupMax}
	failed := backoff{lo: RetryMin, hi: RetryMax}
	wait, ok := follow(ctx, conn, ep, deliver, &lookup, &failed)
	if !ok {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(wait):
	}
	Watch(ctx, resolve, deliver, o)
}

// attach makes one attempt and says how long to wait before the next; ok
// is false when ctx ended.
func attach(ctx context.Context, resolve Resolver, deliver func(Message), o ViewOptions, lookup, failed *backoff) (wait time.Duration, ok bool) {
	ep, err := resolve()
	if err != nil {
		return lookup.take(), true
	}
	conn, err := DialView(ctx, ep.Path, o)
	var ae *AttachError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return 0, false
	case errors.As(err, &ae) && ae.Gone:
		// A trainer that has just exited or not yet started: not a
		// failure to show, look again soon.
		return lookup.take(), true
	default:
		wait = failed.take()
		deliver(Message{Endpoint: ep, Failed: err, RetryAt: time.Now().Add(wait)})
		return wait, true
	}
	lookup.reset()
	failed.reset()
	return follow(ctx, conn, ep, deliver, lookup, failed)
}

// follow hands the frames of conn, made to ep, to deliver until it ends,
// and says how long to wait before the next attempt; ok is false when ctx
// ended.
func follow(ctx context.Context, conn *Conn, ep Endpoint, deliver func(Message), lookup, failed *backoff) (wait time.Duration, ok bool) {
	err := pump(ctx, conn, ep, deliver)
	if ctx.Err() != nil {
		return 0, false
	}
	wait = lookup.take()
	var ae *AttachError
	if errors.As(err, &ae) {
		wait = failed.take()
	}
	deliver(Message{Endpoint: ep, Disconnected: err, RetryAt: time.Now().Add(wait)})
	return wait, true
}

func pump(ctx context.Context, conn *Conn, ep Endpoint, deliver func(Message)) error {
	defer conn.Close()
	h := conn.Hello()
	deliver(Message{Connected: &h, Endpoint: ep})
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	for {
		f, err := conn.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return streamError(ep, h, err, conn.r.Offset())
		}
		deliver(Message{Frame: f, Endpoint: ep})
	}
}
