package zarr

import (
	"testing"
)

func FuzzParseArrayMeta(f *testing.F) {
	f.Add([]byte(`{"zarr_format":2,"shape":[10,128,128,3],"chunks":[1,128,128,3],"dtype":"|u1","compressor":{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":0},"fill_value":0,"order":"C","filters":null,"dimension_separator":"/"}`))
	f.Add([]byte(`{"zarr_format":2,"shape":[7],"chunks":[3],"dtype":">f8","compressor":{"id":"zstd","level":3},"fill_value":"NaN","order":"C","filters":null}`))
	f.Add([]byte(`{"zarr_format":2,"shape":[],"chunks":[],"dtype":"<i8","compressor":{"id":"lz4","acceleration":1},"fill_value":-5,"order":"C","filters":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseArrayMeta(data)
		if err != nil {
			return
		}
		a, err := newArray(&Store{root: t.TempDir()}, "x", m)
		if err != nil {
			t.Fatalf("parsed meta rejected by newArray: %v", err)
		}
		if a.ChunkBytes() < 0 || a.ChunkBytes() > maxChunkBytes {
			t.Fatalf("chunk bytes %d", a.ChunkBytes())
		}
	})
}

func FuzzParseConsolidated(f *testing.F) {
	f.Add([]byte(`{"metadata":{".zgroup":{"zarr_format":2}},"zarr_consolidated_format":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseConsolidated(data)
	})
}

// FuzzDecode feeds arbitrary bytes to every decoder: errors are fine,
// panics, hangs and out-of-bounds accesses are not.
func FuzzDecode(f *testing.F) {
	src := make([]byte, 600)
	for i := range src {
		src[i] = byte(i / 7)
	}
	names := []string{"blosc-lz4", "blosc-zstd", "blosc-zlib", "blosc-blosclz", "zstd", "lz4", "zlib", "gzip"}
	codecs := make([]Codec, len(names))
	for i, n := range names {
		c, err := NewCodec(n)
		if err != nil {
			f.Fatal(err)
		}
		codecs[i] = c
		enc, err := c.Encode(nil, src, 2)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), uint16(len(src)), enc)
	}
	f.Fuzz(func(t *testing.T, which uint8, size uint16, data []byte) {
		c := codecs[int(which)%len(codecs)]
		dst := make([]byte, int(size)%4096)
		_ = c.Decode(dst, data)
	})
}
