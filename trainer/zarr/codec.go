package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Codec is a numcodecs compressor.
type Codec interface {
	// ID is the numcodecs codec id ("blosc", "zstd", ...).
	ID() string
	// Encode compresses src and appends the result to dst[:0]. itemSize is
	// the array's element size (blosc shuffles by it).
	Encode(dst, src []byte, itemSize int) ([]byte, error)
	// Decode decompresses src into dst, which must have exactly the
	// decoded length; any other decoded length is an error.
	Decode(dst, src []byte) error
	// Config is the codec's JSON object as stored in .zarray.
	Config() map[string]any
}

// ParseCodec builds a codec from a .zarray "compressor" value. A JSON null
// (or empty input) means no compression and returns a nil Codec.
func ParseCodec(raw json.RawMessage) (Codec, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var probe struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("compressor: %w", err)
	}
	if probe.ID == nil {
		return nil, fmt.Errorf("compressor: missing \"id\"")
	}
	switch *probe.ID {
	case "blosc":
		return parseBlosc(raw)
	case "zstd":
		return parseZstd(raw)
	case "lz4":
		return parseLZ4(raw)
	case "zlib":
		return parseZlib(raw, false)
	case "gzip":
		return parseZlib(raw, true)
	}
	return nil, fmt.Errorf("compressor: unsupported codec id %q (supported: blosc, zstd, lz4, zlib, gzip)", *probe.ID)
}

// NewCodec returns a codec by short name with zarr-python's usual settings:
// "none", "blosc-lz4" (zarr's default), "blosc-lz4hc", "blosc-zstd",
// "blosc-blosclz", "blosc-zlib", "zstd", "lz4", "zlib", "gzip".
func NewCodec(name string) (Codec, error) {
	switch name {
	case "none", "":
		return nil, nil
	case "blosc", "blosc-lz4":
		return NewBlosc("lz4", 5, ByteShuffle, 0)
	case "blosc-lz4hc", "blosc-zstd", "blosc-blosclz", "blosc-zlib":
		return NewBlosc(name[len("blosc-"):], 5, ByteShuffle, 0)
	case "zstd":
		return NewZstd(1)
	case "lz4":
		return NewLZ4(1), nil
	case "zlib":
		return NewZlib(1)
	case "gzip":
		return NewGzip(1)
	}
	return nil, fmt.Errorf("unknown codec %q (want none, blosc-lz4, blosc-lz4hc, blosc-zstd, blosc-blosclz, blosc-zlib, zstd, lz4, zlib or gzip)", name)
}

// CodecName is the inverse of NewCodec for display: "blosc-lz4/shuffle",
// "zstd(1)", "none".
func CodecName(c Codec) string {
	if c == nil {
		return "none"
	}
	if s, ok := c.(fmt.Stringer); ok {
		return s.String()
	}
	return c.ID()
}

// decodeConfig unmarshals a codec object into v, rejecting unknown fields so
// a misspelt option is not silently ignored.
func decodeConfig(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func checkLen(id string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s: decoded %d bytes, expected %d", id, got, want)
	}
	return nil
}
