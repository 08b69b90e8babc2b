package zarr

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDType(t *testing.T) {
	tests := []struct {
		in   string
		want DType
		err  bool
	}{
		{"|u1", DType{Uint, 1, false}, false},
		{"<f4", DType{Float, 4, false}, false},
		{">i8", DType{Int, 8, true}, false},
		{">u1", DType{Uint, 1, false}, false},
		{"<f2", DType{Float, 2, false}, false},
		{"|b1", DType{Bool, 1, false}, false},
		{"<f3", DType{}, true},
		{"<c8", DType{}, true},
		{"<U10", DType{}, true},
		{"u1", DType{}, true},
		{"?u1", DType{}, true},
		{"<i99999999999999999999", DType{}, true},
	}
	for _, tt := range tests {
		got, err := ParseDType(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseDType(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestFloat16Bits(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {1e6, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00}, {5.960464477539063e-08, 0x0001}, {0.333251953125, 0x3555},
	}
	for _, tt := range tests {
		if got := float16Bits(tt.in); got != tt.want {
			t.Errorf("float16Bits(%v) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	if got := float16Bits(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("float16Bits(NaN) = %#04x, not a NaN", got)
	}
}

func TestToNative(t *testing.T) {
	buf := []byte{0, 0, 0x80, 0x3f} // 1.0 little-endian
	be := []byte{0x3f, 0x80, 0, 0}
	MustDType(">f4").ToNative(be)
	MustDType("<f4").ToNative(buf)
	if !bytes.Equal(be, buf) {
		t.Errorf("ToNative: %x vs %x", be, buf)
	}
}

func TestCopyBox(t *testing.T) {
	// src 4x5 of 1-byte values v = 10*r + c; copy a 2x3 box at (1,1) to (0,2)
	// in a 3x6 destination.
	src := make([]byte, 20)
	for r := 0; r < 4; r++ {
		for c := 0; c < 5; c++ {
			src[r*5+c] = byte(10*r + c)
		}
	}
	dst := make([]byte, 18)
	CopyBox(dst, []int{3, 6}, []int{0, 2}, src, []int{4, 5}, []int{1, 1}, []int{2, 3}, 1)
	want := []byte{0, 0, 11, 12, 13, 0, 0, 0, 21, 22, 23, 0, 0, 0, 0, 0, 0, 0}
	if !bytes.Equal(dst, want) {
		t.Errorf("CopyBox = %v, want %v", dst, want)
	}
}

func TestFillValueForMissingChunks(t *testing.T) {
	tests := []struct {
		dtype string
		fill  any
		want  []byte
	}{
		{"<i4", 7, []byte{7, 0, 0, 0}},
		{">i2", -2, []byte{0xff, 0xfe}},
		{"<f4", math.NaN(), []byte{0, 0, 0xc0, 0x7f}},
		{"|u1", nil, []byte{0}},
		{"<u8", uint64(1<<63 + 1), []byte{1, 0, 0, 0, 0, 0, 0, 0x80}},
	}
	for _, tt := range tests {
		s, err := Create(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.CreateArray("x", ArraySpec{Shape: []int{3}, Chunks: []int{2}, DType: tt.dtype, FillValue: tt.fill})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 3*len(tt.want))
		if err := a.ReadRegion([]int{0}, []int{3}, got); err != nil {
			t.Fatal(err)
		}
		want := bytes.Repeat(tt.want, 3)
		if !bytes.Equal(got, want) {
			t.Errorf("%s fill %v: got %x, want %x", tt.dtype, tt.fill, got, want)
		}
	}
}

// TestBadInput checks that each kind of damage is an error naming the array,
// the chunk key and the problem.
func TestBadInput(t *testing.T) {
	for _, name := range []string{"blosc-lz4", "blosc-zstd", "zstd", "lz4", "zlib", "gzip", "none"} {
		t.Run(name, func(t *testing.T) {
			codec, err := NewCodec(name)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Create(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			a, err := s.CreateArray("data/cam", ArraySpec{Shape: []int{4, 64}, Chunks: []int{2, 64}, DType: "<u2", Codec: codec, DimensionSeparator: "/"})
			if err != nil {
				t.Fatal(err)
			}
			data := make([]byte, a.ChunkBytes())
			for i := range data {
				data[i] = byte(i * 7 / 5)
			}
			if err := a.WriteChunk([]int{1, 0}, data); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(s.Root(), "data", "cam", "1", "0")
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, raw[:len(raw)-3], 0o644); err != nil {
				t.Fatal(err)
			}
			err = a.ReadChunk([]int{1, 0}, make([]byte, a.ChunkBytes()))
			if err == nil || !strings.Contains(err.Error(), `array "data/cam" chunk 1/0`) {
				t.Errorf("truncated chunk: error %v does not name array and chunk", err)
			}
			if codec != nil {
				garbage := bytes.Repeat([]byte{0xab}, len(raw))
				if err := os.WriteFile(file, garbage, 0o644); err != nil {
					t.Fatal(err)
				}
				err = a.ReadChunk([]int{1, 0}, make([]byte, a.ChunkBytes()))
				if err == nil || !strings.Contains(err.Error(), `array "data/cam" chunk 1/0: `+codec.ID()) {
					t.Errorf("corrupt chunk: error %v does not name array, chunk and codec", err)
				}
			}
			if err := a.ReadChunk([]int{5, 0}, make([]byte, a.ChunkBytes())); err == nil || !strings.Contains(err.Error(), "out of range") {
				t.Errorf("chunk index out of range: %v", err)
			}
			if err := a.ReadChunk([]int{0, 0}, make([]byte, 3)); err == nil || !strings.Contains(err.Error(), "buffer is 3 bytes") {
				t.Errorf("wrong buffer size: %v", err)
			}
		})
	}
}

func TestMissingOrBadMetadata(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenArray("data/nope"); err == nil || !strings.Contains(err.Error(), `array "data/nope": missing .zarray`) {
		t.Errorf("missing .zarray: %v", err)
	}
	bad := map[string]string{
		"order":   `{"zarr_format":2,"shape":[2],"chunks":[1],"dtype":"<f4","compressor":null,"fill_value":0,"order":"F","filters":null}`,
		"dtype":   `{"zarr_format":2,"shape":[2],"chunks":[1],"dtype":"<c8","compressor":null,"fill_value":0,"order":"C","filters":null}`,
		"codec":   `{"zarr_format":2,"shape":[2],"chunks":[1],"dtype":"<f4","compressor":{"id":"bz2"},"fill_value":0,"order":"C","filters":null}`,
		"chunks":  `{"zarr_format":2,"shape":[2],"chunks":[0],"dtype":"<f4","compressor":null,"fill_value":0,"order":"C","filters":null}`,
		"fill":    `{"zarr_format":2,"shape":[2],"chunks":[1],"dtype":"<i4","compressor":null,"fill_value":"NaN","order":"C","filters":null}`,
		"range":   `{"zarr_format":2,"shape":[2],"chunks":[1],"dtype":"|u1","compressor":null,"fill_value":300,"order":"C","filters":null}`,
		"filters": `{"zarr_format":2,"shape":[2],"chunks":[1],"dtype":"<i4","compressor":null,"fill_value":0,"order":"C","filters":[{"id":"delta"}]}`,
		"version": `{"zarr_format":3,"shape":[2],"chunks":[1],"dtype":"<i4","compressor":null,"fill_value":0,"order":"C","filters":null}`,
		"option":  `{"zarr_format":2,"shape":[2],"chunks":[1],"dtype":"<i4","compressor":{"id":"blosc","cnam":"lz4"},"fill_value":0,"order":"C","filters":null}`,
	}
	for name, doc := range bad {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, ".zarray"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := s.OpenArray(name)
		if err == nil || !strings.Contains(err.Error(), `array "`+name+`": .zarray: `) {
			t.Errorf("%s: error %v does not name the array and file", name, err)
		}
	}
}

// BenchmarkCopyBoxPlanar copies one channel of a (T,32,32,1) chunk into an
// interleaved 128x128x3 frame: the collate step for zarr's default chunking
// of camera arrays.
func BenchmarkCopyBoxPlanar(b *testing.B) {
	src := make([]byte, 4*32*32)
	dst := make([]byte, 128*128*3)
	b.SetBytes(32 * 32)
	for b.Loop() {
		CopyBox(dst, []int{1, 128, 128, 3}, []int{0, 32, 64, 1}, src, []int{4, 32, 32, 1}, []int{2, 0, 0, 0}, []int{1, 32, 32, 1}, 1)
	}
}

func TestScatterMatchesNaive(t *testing.T) {
	for _, step := range []int{1, 2, 3, 4, 7} {
		for n := 0; n < 40; n++ {
			s := make([]byte, n)
			for i := range s {
				s[i] = byte(i*7 + 1)
			}
			size := 1
			if n > 0 {
				size = (n-1)*step + 1
			}
			got, want := make([]byte, size+step), make([]byte, size+step)
			for i := range got {
				got[i], want[i] = 0xAA, 0xAA
			}
			for x, v := range s {
				want[x*step] = v
			}
			scatter(got[:size], s, step)
			if string(got) != string(want) {
				t.Fatalf("step %d n %d: got %v want %v", step, n, got, want)
			}
		}
	}
}
