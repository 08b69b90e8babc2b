package zarr

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/pierrec/lz4/v4"
)

// LZ4 is the numcodecs "lz4" codec: a 4-byte little-endian uncompressed
// size followed by one raw LZ4 block, as LZ4_compress_fast writes it.
type LZ4 struct {
	Acceleration int
}

// NewLZ4 returns an lz4 codec (acceleration <= 0 means 1).
func NewLZ4(acceleration int) *LZ4 { return &LZ4{Acceleration: acceleration} }

func parseLZ4(raw json.RawMessage) (Codec, error) {
	cfg := struct {
		ID           string `json:"id"`
		Acceleration int    `json:"acceleration"`
	}{Acceleration: 1}
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, fmt.Errorf("lz4 config: %w", err)
	}
	return NewLZ4(cfg.Acceleration), nil
}

// ID implements Codec.
func (l *LZ4) ID() string { return "lz4" }

// String names the codec for display.
func (l *LZ4) String() string { return "lz4" }

// Config implements Codec.
func (l *LZ4) Config() map[string]any {
	return map[string]any{"id": "lz4", "acceleration": l.Acceleration}
}

// Encode implements Codec.
func (l *LZ4) Encode(dst, src []byte, _ int) ([]byte, error) {
	if len(src) > math.MaxInt32 {
		return nil, fmt.Errorf("lz4: chunk of %d bytes is too large", len(src))
	}
	need := 4 + lz4.CompressBlockBound(len(src))
	if cap(dst) < need {
		dst = make([]byte, need)
	}
	dst = dst[:need]
	binary.LittleEndian.PutUint32(dst, uint32(len(src)))
	if len(src) == 0 {
		// LZ4 encodes empty input as a single zero token.
		dst[4] = 0
		return dst[:5], nil
	}
	c := lz4.CompressorCCompat{Acceleration: l.Acceleration}
	n, err := c.CompressBlock(src, dst[4:])
	if err != nil || n == 0 {
		return nil, fmt.Errorf("lz4: compress failed: %v", err)
	}
	return dst[:4+n], nil
}

// Decode implements Codec.
func (l *LZ4) Decode(dst, src []byte) error {
	if len(src) < 4 {
		return fmt.Errorf("lz4: buffer of %d bytes lacks the 4-byte size prefix", len(src))
	}
	size := int(binary.LittleEndian.Uint32(src))
	if err := checkLen("lz4 size prefix", size, len(dst)); err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	n, err := lz4.UncompressBlock(src[4:], dst)
	if err != nil {
		return fmt.Errorf("lz4: corrupt block: %w", err)
	}
	return checkLen("lz4", n, len(dst))
}
