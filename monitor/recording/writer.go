package recording

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/pipetop/pipetop/ipc"
)

// FlushEvery is the longest a written entry waits in memory.
const FlushEvery = time.Second

// Writer appends entries to a recording. It is safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	enc    *zstd.Encoder
	buf    []byte
	last   time.Time // last flush
	err    error     // first write error; later writes are dropped
	closed bool
}

// Create starts a new recording at path (replacing a file there) with its
// header.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create recording: %w", err)
	}
	enc, err := zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("create recording %s: %w", path, err)
	}
	w := &Writer{path: path, f: f, enc: enc, last: time.Now()}
	h.Recording = Version
	b, _ := json.Marshal(h) // a Header always encodes
	w.write(append(b, '\n'), true)
	return w, w.Err()
}

// Hello records a (re)connection to the trainer at socket, rank of a run
// (nil for a single-process trainer).
func (w *Writer) Hello(t time.Time, rank *int, h *ipc.Hello, socket string) {
	w.entry(line{T: t.UnixNano(), Rank: rank, Hello: h, Socket: socket})
}

// Lost records the end of a link to a trainer or to rank of a run.
func (w *Writer) Lost(t time.Time, rank *int, detail string) {
	w.entry(line{T: t.UnixNano(), Rank: rank, Lost: &detail})
}

// Host records the machine's readings and flushes: host readings come at
// the refresh interval, so a quiet trainer's entries wait no longer.
func (w *Writer) Host(t time.Time, h Host) {
	if len(h) > 0 { // an empty map is no entry: nothing was read
		w.entry(line{T: t.UnixNano(), Host: h})
	}
	w.Flush()
}

// Frame records one frame from the trainer or from rank of a run. Steps
// frames are written in the protocol's compact form, without reflection:
// this runs for every frame.
func (w *Writer) Frame(t time.Time, rank *int, f *ipc.Frame) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := append(w.buf[:0], `{"t":`...)
	b = strconv.AppendInt(b, t.UnixNano(), 10)
	if rank != nil {
		b = append(b, `,"rank":`...)
		b = strconv.AppendInt(b, int64(*rank), 10)
	}
	b = append(b, `,"frame":`...)
	b = ipc.AppendFrame(b, f)
	b = append(bytes.TrimSuffix(b, []byte{'\n'}), "}\n"...)
	w.buf = b
	w.writeLocked(b, false)
}

// Entry writes an entry read from a recording (copying or merging one).
func (w *Writer) Entry(e Entry) {
	switch {
	case e.Hello != nil:
		w.Hello(e.T, e.Rank, e.Hello, e.Socket)
	case e.Frame != nil:
		w.Frame(e.T, e.Rank, e.Frame)
	case e.Lost != nil:
		w.Lost(e.T, e.Rank, *e.Lost)
	case e.Host != nil:
		w.Host(e.T, e.Host)
	}
}

func (w *Writer) entry(l line) {
	b, err := json.Marshal(l)
	if err != nil {
		w.mu.Lock()
		w.fail(fmt.Errorf("encode recording entry: %w", err))
		w.mu.Unlock()
		return
	}
	w.write(append(b, '\n'), false)
}

func (w *Writer) write(b []byte, flush bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeLocked(b, flush)
}

func (w *Writer) writeLocked(b []byte, flush bool) {
	if w.err != nil || w.closed {
		return
	}
	if _, err := w.enc.Write(b); err != nil {
		w.fail(err)
		return
	}
	if flush || time.Since(w.last) >= FlushEvery {
		w.flushLocked()
	}
}

// Flush writes what is buffered as a complete block.
func (w *Writer) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && !w.closed {
		w.flushLocked()
	}
}

func (w *Writer) flushLocked() {
	w.last = time.Now()
	if err := w.enc.Flush(); err != nil {
		w.fail(err)
	}
}

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = fmt.Errorf("write recording %s: %w", w.path, err)
	}
}

// Err returns the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close ends the zstd stream, syncs and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if err := w.enc.Close(); err != nil {
		w.fail(err)
	}
	if err := w.f.Sync(); err != nil {
		w.fail(err)
	}
	if err := w.f.Close(); err != nil {
		w.fail(err)
	}
	return w.err
}
