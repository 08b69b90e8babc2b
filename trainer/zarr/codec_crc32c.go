package zarr

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32cCodec is the Zarr v3 "crc32c" codec: the CRC-32C (Castagnoli) of
// the bytes, appended as 4 little-endian bytes. Decoding checks it.
type crc32cCodec struct{}

// ID implements Codec.
func (crc32cCodec) ID() string { return "crc32c" }

// Config implements Codec.
func (crc32cCodec) Config() map[string]any { return map[string]any{"id": "crc32c"} }

func (crc32cCodec) overhead() int { return 4 }

// Encode implements Codec.
func (crc32cCodec) Encode(dst, src []byte, _ int) ([]byte, error) {
	dst = append(dst[:0], src...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(src, castagnoli)), nil
}

// Decode implements Codec.
func (crc32cCodec) Decode(dst, src []byte) error {
	if len(src) != len(dst)+4 {
		return fmt.Errorf("crc32c: %d bytes, expected %d plus the 4-byte checksum", len(src), len(dst))
	}
	body := src[:len(dst)]
	want := binary.LittleEndian.Uint32(src[len(dst):])
	if got := crc32.Checksum(body, castagnoli); got != want {
		return fmt.Errorf("crc32c: checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	copy(dst, body)
	return nil
}
