package ipc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge is returned for a line longer than MaxFrame.
var ErrFrameTooLarge = fmt.Errorf("frame exceeds the %d-byte limit", MaxFrame)

// Reader reads newline-delimited frames with a size cap.
type Reader struct {
	br  *bufio.Reader
	buf []byte
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// ReadLine returns the next line without its newline. The slice is valid
// until the next call. A line over MaxFrame is ErrFrameTooLarge: the
// stream cannot be resynchronized after it, so the caller should close.
func (r *Reader) ReadLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > MaxFrame {
			return nil, ErrFrameTooLarge
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

// Next reads and decodes the next frame.
func (r *Reader) Next() (*Frame, error) {
	line, err := r.ReadLine()
	if err != nil {
		return nil, err
	}
	return DecodeFrame(line)
}
