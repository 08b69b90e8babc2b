package child

import (
	"fmt"
	"io"
	"sync"
)

// heldMax is the most output a Held keeps.
const heldMax = 1 << 20

// Held is a command's output: passed through to a writer, or kept (the
// last heldMax bytes) while a screen owns the terminal.
type Held struct {
	mu   sync.Mutex
	w    io.Writer
	held bool
	buf  []byte
	lost int
}

// NewHeld is output passed through to w until Hold.
func NewHeld(w io.Writer) *Held { return &Held{w: w} }

// Write implements io.Writer.
func (h *Held) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held {
		return h.w.Write(p)
	}
	h.buf = append(h.buf, p...)
	if over := len(h.buf) - heldMax; over > 0 {
		h.lost += over
		h.buf = append(h.buf[:0], h.buf[over:]...)
	}
	return len(p), nil
}

// Hold starts keeping the output.
func (h *Held) Hold() {
	h.mu.Lock()
	h.held = true
	h.mu.Unlock()
}

// Release writes what was kept (saying how much was dropped, if any) and
// passes the output through again.
func (h *Held) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = false
	if h.lost > 0 {
		fmt.Fprintf(h.w, "pipetop: %d bytes of the command's output were dropped while the monitor was open\n", h.lost)
	}
	if len(h.buf) > 0 {
		_, _ = h.w.Write(h.buf)
	}
	h.buf, h.lost = nil, 0
}
