package zarr

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Zstd is the numcodecs "zstd" codec: one zstd frame carrying its content
// size (numcodecs needs the size in the frame header to decode).
type Zstd struct {
	Level    int
	Checksum bool
	enc      *zstd.Encoder
}

// zstdDecoder is shared: DecodeAll is safe for concurrent use.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<31))
	if err != nil {
		panic(err) // only fails on invalid options
	}
	return d
})

// NewZstd returns a zstd codec at a numcodecs level (1..22; <=0 means 1).
func NewZstd(level int) (*Zstd, error) {
	if level > 22 {
		return nil, fmt.Errorf("zstd: level %d out of range 1..22", level)
	}
	z := &Zstd{Level: level}
	l := level
	if l <= 0 {
		l = 1
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(l)),
		zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1),
		zstd.WithSingleSegment(true)) // always record the content size: numcodecs needs it
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	z.enc = enc
	return z, nil
}

func parseZstd(raw json.RawMessage) (Codec, error) {
	cfg := struct {
		ID       string `json:"id"`
		Level    int    `json:"level"`
		Checksum bool   `json:"checksum"`
	}{Level: 1}
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, fmt.Errorf("zstd config: %w", err)
	}
	z, err := NewZstd(cfg.Level)
	if err != nil {
		return nil, err
	}
	z.Checksum = cfg.Checksum
	return z, nil
}

// ID implements Codec.
func (z *Zstd) ID() string { return "zstd" }

// String names the codec for display.
func (z *Zstd) String() string { return fmt.Sprintf("zstd(%d)", z.Level) }

// Config implements Codec.
func (z *Zstd) Config() map[string]any {
	return map[string]any{"id": "zstd", "level": z.Level}
}

// Encode implements Codec.
func (z *Zstd) Encode(dst, src []byte, _ int) ([]byte, error) {
	return z.enc.EncodeAll(src, dst[:0]), nil
}

// Decode implements Codec.
func (z *Zstd) Decode(dst, src []byte) error {
	out, err := zstdDecoder().DecodeAll(src, dst[:0])
	if err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	if err := checkLen("zstd", len(out), len(dst)); err != nil {
		return err
	}
	if len(out) > 0 && &out[0] != &dst[0] {
		copy(dst, out)
	}
	return nil
}
