package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
)

// Zlib is the numcodecs "zlib" codec (a zlib stream, RFC 1950) or, with
// Gzip set, the "gzip" codec (a gzip member, RFC 1952).
type Zlib struct {
	Level int
	Gzip  bool
}

// NewZlib returns a zlib codec at level 0..9.
func NewZlib(level int) (*Zlib, error) { return newZlib(level, false) }

// NewGzip returns a gzip codec at level 0..9.
func NewGzip(level int) (*Zlib, error) { return newZlib(level, true) }

func newZlib(level int, gz bool) (*Zlib, error) {
	z := &Zlib{Level: level, Gzip: gz}
	if level < -1 || level > 9 {
		return nil, fmt.Errorf("%s: level %d out of range 0..9", z.ID(), level)
	}
	return z, nil
}

func parseZlib(raw json.RawMessage, gz bool) (Codec, error) {
	cfg := struct {
		ID    string `json:"id"`
		Level int    `json:"level"`
	}{Level: 1}
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, fmt.Errorf("zlib config: %w", err)
	}
	return newZlib(cfg.Level, gz)
}

// ID implements Codec.
func (z *Zlib) ID() string {
	if z.Gzip {
		return "gzip"
	}
	return "zlib"
}

// String names the codec for display.
func (z *Zlib) String() string { return fmt.Sprintf("%s(%d)", z.ID(), z.Level) }

// Config implements Codec.
func (z *Zlib) Config() map[string]any {
	return map[string]any{"id": z.ID(), "level": z.Level}
}

// Encode implements Codec.
func (z *Zlib) Encode(dst, src []byte, _ int) ([]byte, error) {
	buf := bytes.NewBuffer(dst[:0])
	var w io.WriteCloser
	var err error
	if z.Gzip {
		w, err = gzip.NewWriterLevel(buf, z.Level)
	} else {
		w, err = zlib.NewWriterLevel(buf, z.Level)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", z.ID(), err)
	}
	if _, err := w.Write(src); err != nil {
		return nil, fmt.Errorf("%s: %w", z.ID(), err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", z.ID(), err)
	}
	return buf.Bytes(), nil
}

// Decode implements Codec.
func (z *Zlib) Decode(dst, src []byte) error {
	var r io.ReadCloser
	var err error
	if z.Gzip {
		var g *gzip.Reader
		g, err = gzip.NewReader(bytes.NewReader(src))
		if g != nil {
			g.Multistream(true)
		}
		r = g
	} else {
		r, err = zlib.NewReader(bytes.NewReader(src))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", z.ID(), err)
	}
	defer r.Close()
	n, err := io.ReadFull(r, dst)
	if err != nil {
		return fmt.Errorf("%s: decoded %d bytes, expected %d: %w", z.ID(), n, len(dst), err)
	}
	var one [1]byte
	if m, _ := r.Read(one[:]); m != 0 {
		return fmt.Errorf("%s: decoded more than the expected %d bytes", z.ID(), len(dst))
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fmt.Errorf("%s: %w", z.ID(), err)
	}
	return nil
}
