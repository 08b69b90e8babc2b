package screen

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/muesli/cancelreader"
)

// ctrlC is the byte a terminal in raw mode sends for Ctrl-C.
const ctrlC = 0x03

// endMark is what input writes after the last key it passes to a screen
// whose context ended: a focus report, which pipetop's screens never ask
// the terminal for. The screen quits when it reads it (drawn), so every
// key before it was handled.
const endMark = "\x1b[I"

// input hands the terminal's keys to one screen. pipetop reads the
// terminal itself, with a read it can cancel, and passes the keys to
// Bubble Tea through a pipe; when the screen's context ends it stops
// passing keys on and marks the end, and the screen quits once it has
// handled every key before the mark. Bubble Tea's own reader stopped on
// the context and dropped a key it read in that moment: a Ctrl-C typed
// as one screen gave way to the next (a bisect's phases) was lost, and
// the bisect ran on.
type input struct {
	tty    cancelreader.CancelReader
	pr     *io.PipeReader // Bubble Tea's input
	pw     *io.PipeWriter
	mu     sync.Mutex    // held over a write to pw and over ending
	ended  atomic.Bool   // the end is marked: later keys are kept (keep)
	done   chan struct{} // closed when pump returns
	broken bool          // a Ctrl-C read after the end was marked
}

// left holds the keys read from the terminal that no screen took (they
// came as one screen ended): the next screen gets them first.
var left struct {
	sync.Mutex
	b []byte
}

// openInput starts reading f for a screen.
func openInput(f *os.File) (*input, error) {
	tty, err := cancelreader.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("screen: the terminal's input: %w", err)
	}
	in := &input{tty: tty, done: make(chan struct{})}
	in.pr, in.pw = io.Pipe()
	go in.pump()
	return in, nil
}

// pump passes the keys to the screen until close, those no screen took
// first (left).
func (in *input) pump() {
	defer close(in.done)
	left.Lock()
	b := left.b
	left.b = nil
	left.Unlock()
	in.pass(b)
	buf := make([]byte, 4096)
	for {
		n, err := in.tty.Read(buf)
		if err != nil {
			return
		}
		in.pass(buf[:n])
	}
}

// pass writes b to the screen; what it could not write (its end was
// marked, or it is gone) is kept.
func (in *input) pass(b []byte) {
	if len(b) == 0 {
		return // an empty write to the pipe would wait for a read
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	if !in.ended.Load() {
		n, _ = in.pw.Write(b) // short only once close ended the screen's pipe
	}
	in.keep(b[n:])
}

// end stops passing keys on and writes endMark after the last one.
func (in *input) end() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.ended.Swap(true) {
		return
	}
	_, _ = in.pw.Write([]byte(endMark)) // fails only once the screen is gone
}

// keep saves b for the next screen; a Ctrl-C in it interrupts this one
// instead, and is not passed on.
func (in *input) keep(b []byte) {
	if i := bytes.IndexByte(b, ctrlC); i >= 0 {
		in.broken = true
		b = append(b[:i:i], b[i+1:]...)
	}
	if len(b) == 0 {
		return
	}
	left.Lock()
	left.b = append(left.b, b...)
	left.Unlock()
}

// close stops reading the terminal once the screen is done with it, and
// reports whether a Ctrl-C came after its end was marked.
func (in *input) close() bool {
	in.tty.Cancel()
	in.pr.CloseWithError(io.EOF) // ends a write the screen no longer reads
	<-in.done
	_ = in.tty.Close() // its epoll and pipe; the terminal stays open
	return in.broken
}
