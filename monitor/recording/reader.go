package recording

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/pipetop/pipetop/ipc"
)

// MaxLine is the longest entry a reader accepts: a frame at the protocol's
// cap plus the entry's own fields.
const MaxLine = ipc.MaxFrame + 4096

// ErrDamaged is wrapped by errors about a recording that ends in the
// middle of an entry or holds one that does not decode; the entries before
// the damage are good.
var ErrDamaged = errors.New("recording damaged")

// Reader reads a recording entry by entry.
type Reader struct {
	Header Header

	path  string
	f     *os.File
	close func()
	br    *bufio.Reader
	n     int       // entries read
	last  time.Time // time of the last good entry
	buf   []byte
}

// Open opens the recording at path and reads its header. zstd, gzip and
// plain recordings are told apart by their first bytes.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open recording: %w", err)
	}
	r := &Reader{path: path, f: f, close: func() {}}
	if err := r.decompress(); err != nil {
		f.Close()
		return nil, err
	}
	line, err := r.line()
	if err == nil {
		err = json.Unmarshal(line, &r.Header)
	}
	if err == nil && r.Header.Recording != Version {
		err = fmt.Errorf("format version %d, this pipetop reads %d", r.Header.Recording, Version)
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("recording %s: not a pipetop recording (first line): %w", path, err)
	}
	return r, nil
}

func (r *Reader) decompress() error {
	head := bufio.NewReaderSize(r.f, 64<<10)
	magic, _ := head.Peek(4)
	switch {
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		d, err := zstd.NewReader(head, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return fmt.Errorf("recording %s: %w", r.path, err)
		}
		r.close = d.Close
		r.br = bufio.NewReaderSize(d, 64<<10)
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		d, err := gzip.NewReader(head)
		if err != nil {
			return fmt.Errorf("recording %s: %w", r.path, err)
		}
		r.close = func() { d.Close() }
		r.br = bufio.NewReaderSize(d, 64<<10)
	default:
		r.br = head
	}
	return nil
}

// line returns the next line without its newline, valid until the next
// call; io.EOF at a clean end.
func (r *Reader) line() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > MaxLine {
			return nil, fmt.Errorf("entry longer than %d bytes", MaxLine)
		}
		switch {
		case err == nil:
			r.buf = append(r.buf, chunk[:len(chunk)-1]...)
			return r.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.buf = append(r.buf, chunk...)
		case errors.Is(err, io.EOF) && len(r.buf)+len(chunk) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// Next returns the next entry: io.EOF at a clean end, an error wrapping
// ErrDamaged where the file is cut or corrupt.
func (r *Reader) Next() (Entry, error) {
	b, err := r.line()
	if errors.Is(err, io.EOF) {
		return Entry{}, io.EOF
	}
	var e Entry
	if err == nil {
		e, err = decodeEntry(b)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %s after %d entries (last good at %s): %v",
			ErrDamaged, r.path, r.n, r.last.UTC().Format(time.RFC3339Nano), err)
	}
	r.n++
	r.last = e.T
	return e, nil
}

func decodeEntry(b []byte) (Entry, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return Entry{}, fmt.Errorf("decode entry: %w", err)
	}
	e := Entry{T: time.Unix(0, l.T), Rank: l.Rank, Hello: l.Hello, Socket: l.Socket, Lost: l.Lost, Host: l.Host}
	switch {
	case l.Rank != nil && *l.Rank < 0:
		return Entry{}, fmt.Errorf("negative rank %d", *l.Rank)
	case l.Rank != nil && l.Host != nil:
		return Entry{}, errors.New("a host entry with a rank (host readings belong to the machine)")
	}
	n := 0
	for _, set := range []bool{l.Hello != nil, len(l.Frame) > 0, l.Lost != nil, l.Host != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return Entry{}, fmt.Errorf("entry with %d kinds, want exactly one of hello, frame, lost, host", n)
	}
	if len(l.Frame) > 0 {
		f, err := ipc.DecodeFrame(l.Frame)
		if err != nil {
			return Entry{}, err
		}
		if f.Type == ipc.TypeHello {
			return Entry{}, errors.New("hello frame inside a frame entry")
		}
		e.Frame = f
	}
	return e, nil
}

// Close closes the file.
func (r *Reader) Close() error {
	r.close()
	return r.f.Close()
}

// ReadAll reads every entry of the recording at path. With a damaged file
// it returns the entries before the damage and the error that names it.
func ReadAll(path string) (Header, []Entry, error) {
	r, err := Open(path)
	if err != nil {
		return Header{}, nil, err
	}
	defer r.Close()
	var es []Entry
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Header, es, nil
		}
		if err != nil {
			return r.Header, es, err
		}
		es = append(es, e)
	}
}
