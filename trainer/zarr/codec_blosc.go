package zarr

/*
#cgo LDFLAGS: -lblosc
#include <stdlib.h>
#include <blosc.h>
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"unsafe"
)

// Blosc shuffle modes, as numcodecs numbers them.
const (
	AutoShuffle = -1 // bit shuffle for 1-byte items, byte shuffle otherwise
	NoShuffle   = 0
	ByteShuffle = 1
	BitShuffle  = 2
)

var bloscNames = map[string]*C.char{}

func init() {
	for _, n := range []string{"lz4", "lz4hc", "zstd", "blosclz", "zlib"} {
		bloscNames[n] = C.CString(n)
	}
}

// Blosc is the numcodecs "blosc" codec, backed by libblosc. Compression and
// decompression use the context API, so a Blosc is safe for concurrent use
// and never touches libblosc's global state.
type Blosc struct {
	CName     string
	CLevel    int
	Shuffle   int
	BlockSize int
}

// NewBlosc validates and returns a Blosc codec.
func NewBlosc(cname string, clevel, shuffle, blocksize int) (*Blosc, error) {
	if _, ok := bloscNames[cname]; !ok {
		return nil, fmt.Errorf("blosc: unsupported cname %q (want lz4, lz4hc, zstd, blosclz or zlib)", cname)
	}
	if clevel < 0 || clevel > 9 {
		return nil, fmt.Errorf("blosc: clevel %d out of range 0..9", clevel)
	}
	if shuffle < -1 || shuffle > 2 {
		return nil, fmt.Errorf("blosc: shuffle %d out of range -1..2", shuffle)
	}
	if blocksize < 0 {
		return nil, fmt.Errorf("blosc: negative blocksize %d", blocksize)
	}
	return &Blosc{CName: cname, CLevel: clevel, Shuffle: shuffle, BlockSize: blocksize}, nil
}

func parseBlosc(raw json.RawMessage) (Codec, error) {
	cfg := struct {
		ID        string `json:"id"`
		CName     string `json:"cname"`
		CLevel    *int   `json:"clevel"`
		Shuffle   *int   `json:"shuffle"`
		BlockSize int    `json:"blocksize"`
		TypeSize  int    `json:"typesize"`
	}{CName: "lz4"}
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, fmt.Errorf("blosc config: %w", err)
	}
	level, shuffle := 5, ByteShuffle
	if cfg.CLevel != nil {
		level = *cfg.CLevel
	}
	if cfg.Shuffle != nil {
		shuffle = *cfg.Shuffle
	}
	return NewBlosc(cfg.CName, level, shuffle, cfg.BlockSize)
}

// ID implements Codec.
func (b *Blosc) ID() string { return "blosc" }

// String names the codec for display.
func (b *Blosc) String() string {
	sh := map[int]string{-1: "autoshuffle", 0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}[b.Shuffle]
	return fmt.Sprintf("blosc-%s(%d)/%s", b.CName, b.CLevel, sh)
}

// Config implements Codec.
func (b *Blosc) Config() map[string]any {
	return map[string]any{"id": "blosc", "cname": b.CName, "clevel": b.CLevel, "shuffle": b.Shuffle, "blocksize": b.BlockSize}
}

// Encode implements Codec.
func (b *Blosc) Encode(dst, src []byte, itemSize int) ([]byte, error) {
	shuffle := b.Shuffle
	if shuffle == AutoShuffle {
		shuffle = ByteShuffle
		if itemSize == 1 {
			shuffle = BitShuffle
		}
	}
	if itemSize < 1 || itemSize > C.BLOSC_MAX_TYPESIZE {
		itemSize = 1
	}
	if len(src) > C.BLOSC_MAX_BUFFERSIZE {
		return nil, fmt.Errorf("blosc: chunk of %d bytes exceeds blosc's limit of %d", len(src), C.BLOSC_MAX_BUFFERSIZE)
	}
	need := len(src) + C.BLOSC_MAX_OVERHEAD
	if cap(dst) < need {
		dst = make([]byte, need)
	}
	dst = dst[:need]
	n := C.blosc_compress_ctx(C.int(b.CLevel), C.int(shuffle), C.size_t(itemSize), C.size_t(len(src)),
		ptr(src), unsafe.Pointer(&dst[0]), C.size_t(need), bloscNames[b.CName], C.size_t(b.BlockSize), 1)
	if n <= 0 {
		return nil, fmt.Errorf("blosc: compress failed (code %d)", int(n))
	}
	return dst[:n], nil
}

// Decode implements Codec. The header is validated before decompressing, so
// a truncated or corrupt buffer is an error rather than a wild read.
func (b *Blosc) Decode(dst, src []byte) error {
	return BloscDecode(dst, src)
}

// BloscDecode decompresses any blosc buffer into dst (exact length).
func BloscDecode(dst, src []byte) error {
	if len(src) < C.BLOSC_MIN_HEADER_LENGTH {
		return fmt.Errorf("blosc: buffer of %d bytes is shorter than the %d-byte header", len(src), C.BLOSC_MIN_HEADER_LENGTH)
	}
	var nbytes, cbytes, blocksize C.size_t
	if C.blosc_cbuffer_validate(ptr(src), C.size_t(len(src)), &nbytes) < 0 {
		C.blosc_cbuffer_sizes(ptr(src), &nbytes, &cbytes, &blocksize)
		return fmt.Errorf("blosc: corrupt or truncated buffer (%d bytes, header says %d compressed)", len(src), int(cbytes))
	}
	if err := checkLen("blosc", int(nbytes), len(dst)); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	n := C.blosc_decompress_ctx(ptr(src), unsafe.Pointer(&dst[0]), C.size_t(len(dst)), 1)
	if n < 0 {
		return fmt.Errorf("blosc: corrupt buffer (decompress code %d)", int(n))
	}
	return checkLen("blosc", int(n), len(dst))
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
