package ipc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge is wrapped by the error for a line longer than MaxFrame.
var ErrFrameTooLarge = fmt.Errorf("frame exceeds the %s (%d-byte) limit", capText, MaxFrame)

// ErrMalformed is wrapped by the error for a line that is not a valid frame.
var ErrMalformed = errors.New("malformed frame")

// Reader reads newline-delimited frames with a size cap, counting the
// bytes it has consumed so that an error can say where in the stream the
// bad frame started.
type Reader struct {
	br    *bufio.Reader
	buf   []byte
	pos   int64 // bytes consumed from the stream
	start int64 // stream offset of the line last read (or being read)
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Offset is the stream offset, in bytes, at which the line last returned
// (or the one that failed) started.
func (r *Reader) Offset() int64 { return r.start }

// ReadLine returns the next line without its newline. The slice is valid
// until the next call. A line over MaxFrame is an error wrapping
// ErrFrameTooLarge: the stream cannot be resynchronized after it, so the
// caller should close.
func (r *Reader) ReadLine() ([]byte, error) {
	r.buf = r.buf[:0]
	r.start = r.pos
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.pos += int64(len(chunk))
		if len(r.buf)+len(chunk) > MaxFrame {
			return nil, fmt.Errorf("%w (frame at byte %d)", ErrFrameTooLarge, r.start)
		}
		switch {
		case err == nil:
			if len(r.buf) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			r.buf = append(r.buf, chunk[:len(chunk)-1]...)
			return r.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.buf = append(r.buf, chunk...)
		case errors.Is(err, io.EOF) && len(r.buf)+len(chunk) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// Next reads and decodes the next frame. A line that does not decode is an
// error wrapping ErrMalformed and naming the byte offset where it started;
// a hello of another protocol version wraps ErrVersion instead.
func (r *Reader) Next() (*Frame, error) {
	line, err := r.ReadLine()
	if err != nil {
		return nil, err
	}
	f, err := DecodeFrame(line)
	if err != nil && !errors.Is(err, ErrVersion) {
		return nil, fmt.Errorf("%w at byte %d: %w", ErrMalformed, r.start, err)
	}
	return f, err
}
