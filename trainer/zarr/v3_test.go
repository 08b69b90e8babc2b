package zarr

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// v3Case is one array the v3 round-trip test writes and reads back.
type v3Case struct {
	name    string
	spec    ArraySpec
	codec   string
	files   []string // chunk or shard files that must exist
	noFiles []string // and ones that must not
}

func v3Cases() []v3Case {
	return []v3Case{
		{name: "plain-u1", codec: "none", spec: ArraySpec{Shape: []int{5, 6, 3}, Chunks: []int{2, 6, 3}, DType: "|u1"},
			files: []string{"c/0/0/0", "c/2/0/0"}},
		{name: "blosc-lz4", codec: "blosc-lz4", spec: ArraySpec{Shape: []int{9, 8, 8, 3}, Chunks: []int{1, 8, 8, 3}, DType: "|u1"}},
		{name: "zstd-be", codec: "zstd", spec: ArraySpec{Shape: []int{7, 5}, Chunks: []int{3, 2}, DType: ">f4", FillValue: 1.5}},
		{name: "gzip-le-i8", codec: "gzip", spec: ArraySpec{Shape: []int{11}, Chunks: []int{4}, DType: "<i8", FillValue: -7}},
		{name: "transpose", codec: "blosc-zstd", spec: ArraySpec{Shape: []int{4, 6, 5}, Chunks: []int{3, 4, 5}, DType: ">u2", Order: []int{2, 0, 1}}},
		{name: "sharded-end", codec: "blosc-lz4", spec: ArraySpec{Shape: []int{10, 4, 4, 3}, Chunks: []int{1, 4, 4, 3}, ShardShape: []int{4, 4, 4, 3}, DType: "|u1"},
			files: []string{"c/0/0/0/0", "c/2/0/0/0"}, noFiles: []string{"c/1/0/0/0/0", "c/3/0/0/0"}},
		{name: "sharded-start", codec: "zstd", spec: ArraySpec{Shape: []int{9, 7}, Chunks: []int{2, 3}, ShardShape: []int{4, 6}, DType: "<f8", IndexAtStart: true, FillValue: 2.0},
			files: []string{"c/0/0", "c/0/1", "c/2/1"}},
		{name: "sharded-transpose-be", codec: "gzip", spec: ArraySpec{Shape: []int{6, 6}, Chunks: []int{3, 2}, ShardShape: []int{6, 6}, DType: ">i4", Order: []int{1, 0}}},
	}
}

func TestV3RoundTrip(t *testing.T) {
	s, err := CreateFormat(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range v3Cases() {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.spec.Codec, err = NewCodec(tc.codec); err != nil {
				t.Fatal(err)
			}
			a, err := s.CreateArray("data/"+tc.name, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			data := randomBytes(r, a.DType(), prod(tc.spec.Shape))
			if err := a.WriteRegion(make([]int, len(tc.spec.Shape)), tc.spec.Shape, data); err != nil {
				t.Fatal(err)
			}
			again, err := s.OpenArray("data/" + tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := readArrayAll(t, again); !bytes.Equal(got, data) {
				t.Errorf("read back differs")
			}
			for _, f := range tc.files {
				if _, err := os.Stat(filepath.Join(s.Root(), "data", tc.name, f)); err != nil {
					t.Errorf("file %s: %v", f, err)
				}
			}
			for _, f := range tc.noFiles {
				if _, err := os.Stat(filepath.Join(s.Root(), "data", tc.name, f)); err == nil {
					t.Errorf("file %s exists", f)
				}
			}
			if tc.spec.ShardShape != nil && again.IndexAtStart() != tc.spec.IndexAtStart {
				t.Errorf("IndexAtStart %v", again.IndexAtStart())
			}
		})
	}
}

func prod(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}

// TestV3PartialShardWrite writes a sharded array a few rows at a time:
// each write reads the shard back, merges and rewrites it.
func TestV3PartialShardWrite(t *testing.T) {
	s, err := CreateFormat(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.CreateArray("x", ArraySpec{Shape: []int{13, 5}, Chunks: []int{2, 5}, ShardShape: []int{6, 5}, DType: "<u2", FillValue: 9})
	if err != nil {
		t.Fatal(err)
	}
	want := randomBytes(rand.New(rand.NewPCG(1, 1)), a.DType(), 13*5)
	for r0 := 0; r0 < 13; r0 += 3 {
		n := min(3, 13-r0)
		if err := a.WriteRegion([]int{r0, 0}, []int{n, 5}, want[r0*10:(r0+n)*10]); err != nil {
			t.Fatal(err)
		}
	}
	if got := readArrayAll(t, a); !bytes.Equal(got, want) {
		t.Errorf("read back differs")
	}
	if err := a.WriteChunk([]int{0, 0}, make([]byte, a.ChunkBytes())); err == nil || !strings.Contains(err.Error(), "a shard at a time") {
		t.Errorf("WriteChunk on a sharded array: %v", err)
	}
}

func TestV3StoreMetadata(t *testing.T) {
	dir := t.TempDir()
	s, err := CreateFormat(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"data/cam", "meta/ends"} {
		if _, err := s.CreateArray(p, ArraySpec{Shape: []int{4}, Chunks: []int{2}, DType: "<i8"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetAttrs("", map[string]any{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAttrs("data/cam", map[string]any{"n": 1.0}); err != nil {
		t.Fatal(err)
	}
	for _, consolidate := range []bool{false, true} {
		if consolidate {
			if err := s.Consolidate(); err != nil {
				t.Fatal(err)
			}
			// With consolidated metadata, the array documents on disk
			// are not needed.
			if err := os.Remove(filepath.Join(dir, "data", "cam", "zarr.json")); err != nil {
				t.Fatal(err)
			}
		}
		o, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if o.Format() != 3 || o.Consolidated() != consolidate {
			t.Errorf("format %d consolidated %v", o.Format(), o.Consolidated())
		}
		names, err := o.Arrays()
		if err != nil || strings.Join(names, ",") != "data/cam,meta/ends" {
			t.Errorf("Arrays() = %v, %v", names, err)
		}
		if at, err := o.Attrs(""); err != nil || at["k"] != "v" {
			t.Errorf("root attrs %v, %v", at, err)
		}
		if at, err := o.Attrs("data/cam"); err != nil || at["n"] != 1.0 {
			t.Errorf("array attrs %v, %v", at, err)
		}
		if _, err := o.OpenArray("data/cam"); err != nil {
			t.Error(err)
		}
	}
}

// TestV3BadMetadata checks that each unsupported or broken zarr.json is an
// error naming the array, the file and what is wrong.
func TestV3BadMetadata(t *testing.T) {
	base := `"zarr_format":3,"node_type":"array","shape":[4],"data_type":"uint16","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},"fill_value":0`
	bytesLE := `{"name":"bytes","configuration":{"endian":"little"}}`
	tests := []struct{ name, doc, want string }{
		{"codec", `{` + base + `,"codecs":[` + bytesLE + `,{"name":"bz2"}]}`, `codec "bz2" is not supported`},
		{"extension", `{` + base + `,"codecs":[` + bytesLE + `],"chunk_offsets":{"must_understand":true}}`, `extension "chunk_offsets" is not supported`},
		{"transformer", `{` + base + `,"codecs":[` + bytesLE + `],"storage_transformers":[{"name":"x"}]}`, "storage_transformers"},
		{"dtype", `{"zarr_format":3,"node_type":"array","shape":[4],"data_type":"complex64","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},"fill_value":0,"codecs":[` + bytesLE + `]}`, `data_type "complex64"`},
		{"endian", `{` + base + `,"codecs":[{"name":"bytes"}]}`, "bytes: no endian"},
		{"no-bytes", `{` + base + `,"codecs":[{"name":"zstd"}]}`, "zstd comes before an array-to-bytes codec"},
		{"two-compressors", `{` + base + `,"codecs":[` + bytesLE + `,{"name":"zstd"},{"name":"gzip"}]}`, "at most one compressor"},
		{"grid", `{"zarr_format":3,"node_type":"array","shape":[4],"data_type":"uint8","chunk_grid":{"name":"rectilinear"},"fill_value":0,"codecs":["bytes"]}`, `chunk_grid "rectilinear"`},
		{"nested", `{` + base + `,"codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[1],"codecs":[{"name":"sharding_indexed"}],"index_codecs":[` + bytesLE + `]}}]}`, "sharding_indexed inside a shard"},
		{"divide", `{` + base + `,"codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[3],"codecs":[` + bytesLE + `],"index_codecs":[` + bytesLE + `]}}]}`, "does not divide"},
		{"index-codec", `{` + base + `,"codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[1],"codecs":[` + bytesLE + `],"index_codecs":[` + bytesLE + `,{"name":"zstd"}]}}]}`, "index must have a fixed size"},
		{"blosc-option", `{` + base + `,"codecs":[` + bytesLE + `,{"name":"blosc","configuration":{"cnam":"lz4"}}]}`, "blosc configuration"},
		{"fill", `{"zarr_format":3,"node_type":"array","shape":[4],"data_type":"uint8","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},"fill_value":"0x7fc00000","codecs":["bytes"]}`, "fill_value"},
		{"group", `{"zarr_format":3,"node_type":"group"}`, "not an array"},
		{"version", `{"zarr_format":4,"node_type":"array"}`, "zarr_format 4"},
	}
	dir := t.TempDir()
	s, err := CreateFormat(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.MkdirAll(filepath.Join(dir, tt.name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, tt.name, "zarr.json"), []byte(tt.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := s.OpenArray(tt.name)
			if err == nil || !strings.Contains(err.Error(), `array "`+tt.name+`": zarr.json: `) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v: want the array, zarr.json and %q", err, tt.want)
			}
		})
	}
}

func TestV3Seeds(t *testing.T) {
	for i, doc := range v3Seeds {
		if _, err := parseArrayV3([]byte(doc)); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}

// shardFixture writes a 2-shard array (4 inner chunks per shard) and
// returns it with the path of its first shard.
func shardFixture(t *testing.T, atStart bool) (*Array, string, []byte) {
	t.Helper()
	s, err := CreateFormat(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	codec, _ := NewCodec("blosc-lz4")
	a, err := s.CreateArray("data/cam", ArraySpec{Shape: []int{8, 16, 16, 3}, Chunks: []int{1, 16, 16, 3},
		ShardShape: []int{4, 16, 16, 3}, DType: "|u1", Codec: codec, IndexAtStart: atStart})
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(rand.New(rand.NewPCG(5, 6)), a.DType(), 8*16*16*3)
	if err := a.WriteRegion([]int{0, 0, 0, 0}, a.Shape(), data); err != nil {
		t.Fatal(err)
	}
	return a, filepath.Join(s.Root(), "data", "cam", "c", "0", "0", "0", "0"), data
}

// TestShardDamage checks that a truncated shard, a bad index checksum and
// a corrupt inner chunk are errors naming the array and the shard file,
// that nothing is returned for them, and that the other shard still reads.
func TestShardDamage(t *testing.T) {
	damage := []struct {
		name string
		fn   func(raw []byte, indexBytes int, atStart bool) []byte
		want string
	}{
		{"truncated", func(raw []byte, _ int, _ bool) []byte { return raw[:len(raw)-100] }, ""},
		{"tiny", func(raw []byte, _ int, _ bool) []byte { return raw[:10] }, "truncated: 10 bytes"},
		{"checksum", func(raw []byte, n int, atStart bool) []byte {
			at := len(raw) - n + 3
			if atStart {
				at = 3
			}
			raw[at] ^= 0x40
			return raw
		}, "index: crc32c: checksum mismatch"},
		{"chunk", func(raw []byte, n int, atStart bool) []byte {
			at := 4 // the first chunk's blosc header: its decoded size
			if atStart {
				at += n
			}
			raw[at] ^= 0x11
			return raw
		}, "blosc"},
	}
	for _, atStart := range []bool{false, true} {
		for _, d := range damage {
			t.Run(d.name+map[bool]string{false: "-end", true: "-start"}[atStart], func(t *testing.T) {
				a, file, data := shardFixture(t, atStart)
				raw, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, d.fn(raw, a.shard.indexBytes, atStart), 0o644); err != nil {
					t.Fatal(err)
				}
				want := d.want
				if want == "" {
					want = "checksum mismatch"
					if atStart {
						want = "truncated or corrupt shard"
					}
				}
				var got error
				for f := 0; f < 4 && got == nil; f++ {
					got = a.ReadChunk([]int{f, 0, 0, 0}, make([]byte, a.ChunkBytes()))
				}
				if got == nil || !strings.Contains(got.Error(), `array "data/cam" shard c/0/0/0/0`) || !strings.Contains(got.Error(), want) {
					t.Errorf("error %v: want the array, shard and %q", got, want)
				}
				other := make([]byte, a.ChunkBytes())
				if err := a.ReadChunk([]int{5, 0, 0, 0}, other); err != nil || !bytes.Equal(other, data[5*len(other):6*len(other)]) {
					t.Errorf("the undamaged shard: %v", err)
				}
			})
		}
	}
}

func TestPermute(t *testing.T) {
	shape := []int{2, 3, 4}
	src := make([]byte, 2*prod(shape))
	for i := range src {
		src[i] = byte(i)
	}
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}, {2, 1, 0}} {
		dst := make([]byte, len(src))
		permute(dst, src, shape, order, 2)
		ds := permuted(shape, order)
		var i [3]int
		for i[0] = 0; i[0] < ds[0]; i[0]++ {
			for i[1] = 0; i[1] < ds[1]; i[1]++ {
				for i[2] = 0; i[2] < ds[2]; i[2]++ {
					var j [3]int
					for k := range 3 {
						j[order[k]] = i[k]
					}
					so := 2 * ((j[0]*shape[1]+j[1])*shape[2] + j[2])
					do := 2 * ((i[0]*ds[1]+i[1])*ds[2] + i[2])
					if dst[do] != src[so] || dst[do+1] != src[so+1] {
						t.Fatalf("order %v: dst%v = %v, want src%v", order, i, dst[do:do+2], j)
					}
				}
			}
		}
		back := make([]byte, len(src))
		permute(back, dst, ds, inversePerm(order), 2)
		if !bytes.Equal(back, src) {
			t.Errorf("order %v: inverse does not restore", order)
		}
	}
}
