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
		in, err := m.info()
		if err != nil {
			t.Fatalf("parsed meta rejected by info: %v", err)
		}
		checkArray(t, newArray(&Store{root: t.TempDir()}, "x", in))
	})
}

// checkArray checks what any accepted metadata must give: a bounded chunk
// and a fill value of one element.
func checkArray(t *testing.T, a *Array) {
	t.Helper()
	if a.ChunkBytes() < 0 || a.ChunkBytes() > maxChunkBytes {
		t.Fatalf("chunk bytes %d", a.ChunkBytes())
	}
	if a.fill != nil && len(a.fill) != a.DType().Size {
		t.Fatalf("fill of %d bytes for %s", len(a.fill), a.DType())
	}
	if a.shard != nil && a.shard.indexBytes < 16*a.shard.count {
		t.Fatalf("index of %d bytes for %d chunks", a.shard.indexBytes, a.shard.count)
	}
}

// FuzzParseArrayMetaV3 feeds arbitrary zarr.json documents to the v3
// parser: errors are fine; an accepted document must open as an array
// whose chunks can be read back through its own pipeline.
func FuzzParseArrayMetaV3(f *testing.F) {
	for _, seed := range v3Seeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := parseArrayV3(data)
		if err != nil {
			return
		}
		a := newArray(&Store{root: t.TempDir()}, "x", in)
		checkArray(t, a)
		if a.ChunkBytes() > 1<<16 {
			return
		}
		chunk := make([]byte, a.ChunkBytes())
		for i := range chunk {
			chunk[i] = byte(i)
		}
		enc, err := a.pipe.encode(chunk)
		if err != nil {
			return
		}
		back := make([]byte, len(chunk))
		if err := a.pipe.decode(back, enc); err != nil || string(back) != string(chunk) {
			t.Fatalf("pipeline round trip: %v", err)
		}
	})
}

// FuzzShardIndex feeds arbitrary index bytes and shard sizes to the shard
// index reader: errors are fine; an accepted index must only point inside
// the chunk data of the shard.
func FuzzShardIndex(f *testing.F) {
	in, err := parseArrayV3([]byte(v3Seeds[0]))
	if err != nil {
		f.Fatal(err)
	}
	l := in.shard
	ents := []uint64{0, 10, emptyEntry, emptyEntry, 10, 5, 15, 1}
	good, err := l.encodeIndex(ents)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, int64(16+len(good)))
	f.Add(good[:len(good)-1], int64(100))
	f.Add(make([]byte, len(good)), int64(len(good)))
	f.Fuzz(func(t *testing.T, raw []byte, size int64) {
		if len(raw) != l.indexBytes || size < int64(len(raw)) {
			if _, err := l.parseIndex(raw, max(size, int64(len(raw)))); err == nil && len(raw) != l.indexBytes {
				t.Fatalf("index of %d bytes accepted, want %d", len(raw), l.indexBytes)
			}
			return
		}
		got, err := l.parseIndex(raw, size)
		if err != nil {
			return
		}
		lo, hi := l.dataRange(size)
		for i := 0; i < l.count; i++ {
			off, n := got[2*i], got[2*i+1]
			if off == emptyEntry && n == emptyEntry {
				continue
			}
			if off < uint64(lo) || off+n > uint64(hi) || off+n < off {
				t.Fatalf("entry %d (%d, %d) outside %d..%d", i, off, n, lo, hi)
			}
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
	}
	codecs = append(codecs, crc32cCodec{})
	for i, c := range codecs {
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
