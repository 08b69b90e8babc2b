package ipc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// Conn is the viewer side of one connection to a trainer.
type Conn struct {
	c     net.Conn
	r     *Reader
	hello Hello
}

// Dial connects to the trainer socket at path, introduces itself and reads
// the trainer's hello. A trainer speaking another protocol version, or one
// that refuses us, is an error that says so.
func Dial(ctx context.Context, path string) (*Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to trainer %s: %w", path, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		c.SetDeadline(deadline)
	} else {
		c.SetDeadline(time.Now().Add(5 * time.Second))
	}
	if _, err := c.Write(appendJSON(nil, Frame{Type: TypeHello, V: Version, Hello: &Hello{Role: "viewer"}})); err != nil {
		c.Close()
		return nil, fmt.Errorf("greet trainer %s: %w", path, err)
	}
	conn := &Conn{c: c, r: NewReader(c)}
	f, err := conn.r.Next()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("read hello from %s: %w", path, err)
	}
	switch {
	case f.Type == TypeError:
		c.Close()
		return nil, fmt.Errorf("trainer %s refused: %s", path, f.Error)
	case f.Type != TypeHello:
		c.Close()
		return nil, fmt.Errorf("trainer %s sent %q before hello", path, f.Type)
	}
	c.SetDeadline(time.Time{})
	conn.hello = *f.Hello
	return conn, nil
}

// Hello is the trainer's greeting.
func (c *Conn) Hello() Hello { return c.hello }

// Next returns the next frame. An error frame from the trainer is returned
// as an error.
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
func (c *Conn) Close() error { return c.c.Close() }

// Message is what Watch delivers: a frame, a new connection, or a lost one.
type Message struct {
	Connected    *Hello // set when a connection (re)opened
	Endpoint     Endpoint
	Frame        *Frame // set for every frame after hello
	Disconnected error  // set when the connection ended (nil error wrapped as io.EOF)
}

// Resolver finds the endpoint to connect to; it is asked again before each
// reconnection, so a restarted trainer (new pid, new socket) is found.
type Resolver func() (Endpoint, error)

// ResolveSpec resolves a spec (path, pid or name; empty for the only live
// trainer) against the socket directory. A name keeps matching a restarted
// trainer; a pid does not.
func ResolveSpec(spec string) Resolver {
	return func() (Endpoint, error) {
		eps, err := List()
		if err != nil {
			return Endpoint{}, err
		}
		return Find(eps, spec)
	}
}

// Watch connects through resolve and sends every frame to out until ctx is
// done, reconnecting with exponential backoff (100 ms to 2 s) when the
// trainer goes away. It closes out when it returns.
func Watch(ctx context.Context, resolve Resolver, out chan<- Message) {
	defer close(out)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		ep, err := resolve()
		if err == nil {
			var conn *Conn
			conn, err = Dial(ctx, ep.Path)
			if err == nil {
				backoff = 100 * time.Millisecond
				err = pump(ctx, conn, ep, out)
				if !send(ctx, out, Message{Endpoint: ep, Disconnected: err}) {
					return
				}
			}
		}
		if errors.Is(err, ErrVersion) {
			send(ctx, out, Message{Disconnected: err})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func pump(ctx context.Context, conn *Conn, ep Endpoint, out chan<- Message) error {
	defer conn.Close()
	h := conn.Hello()
	if !send(ctx, out, Message{Connected: &h, Endpoint: ep}) {
		return ctx.Err()
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	for {
		f, err := conn.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("trainer %s: %w", ep.Path, err)
		}
		if !send(ctx, out, Message{Frame: f, Endpoint: ep}) {
			return ctx.Err()
		}
	}
}

func send(ctx context.Context, out chan<- Message, m Message) bool {
	select {
	case out <- m:
		return true
	case <-ctx.Done():
		return false
	}
}
