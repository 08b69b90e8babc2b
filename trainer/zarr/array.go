package zarr

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Array is one array of a Store, Zarr v2 or v3. It is safe for concurrent
// reads. A sharded v3 array presents its inner chunks as its chunks: they
// are what a reader decodes, one ranged read each.
type Array struct {
	store *Store
	path  string
	arrayInfo
	chunkBytes int
	grid       []int // number of chunks along each axis
	dir        *dirHandle
	indexes    shardIndexes // the shards' decoded indexes, when sharded
}

// ArraySpec describes an array to create.
type ArraySpec struct {
	Shape  []int
	Chunks []int
	// DType is a numpy type string, e.g. "|u1" or "<f4"; in a v3 store its
	// byte order goes to the bytes codec.
	DType string
	// Codec compresses chunks; nil stores them raw.
	Codec Codec
	// FillValue is nil (JSON null; 0 in a v3 store, which has no null
	// fill), an integer, a float (NaN and the infinities are allowed for
	// float dtypes), a bool, or a json.RawMessage copied from another
	// array's metadata.
	FillValue any
	// DimensionSeparator is "." (the default) or "/" in a v2 store; a v3
	// store always uses its default key encoding, "c/0/1".
	DimensionSeparator string
	// ShardShape, in a v3 store, puts the chunks into shard files of this
	// shape (a multiple of Chunks on every axis) with the sharding_indexed
	// codec: one file per shard, with an index of its chunks checked by
	// crc32c. Nil writes one file per chunk.
	ShardShape []int
	// IndexAtStart puts each shard's index before its chunks rather than
	// after them (zarr-python's default, which some readers require).
	IndexAtStart bool
	// Order, in a v3 store, stores each chunk with its axes permuted (the
	// transpose codec; stored axis i is array axis Order[i]). Nil is C
	// order.
	Order []int
}

// OpenArray opens the array at path p (e.g. "data/camera0").
func (s *Store) OpenArray(p string) (*Array, error) {
	p, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	in, err := s.layout.readArray(p)
	if err != nil {
		return nil, fmt.Errorf("array %q: %w", p, err)
	}
	return newArray(s, p, in), nil
}

func newArray(s *Store, p string, in arrayInfo) *Array {
	a := &Array{store: s, path: p, arrayInfo: in}
	a.dir = newDirHandle(filepath.Join(s.root, filepath.FromSlash(p)))
	a.chunkBytes = in.dtype.Size
	a.grid = make([]int, len(in.shape))
	for i := range in.shape {
		a.chunkBytes *= in.chunks[i]
		a.grid[i] = (in.shape[i] + in.chunks[i] - 1) / in.chunks[i]
	}
	return a
}

// CreateArray writes a new array's metadata (creating parent groups).
func (s *Store) CreateArray(p string, spec ArraySpec) (*Array, error) {
	p, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, fmt.Errorf("create array: empty path")
	}
	if parent := path.Dir(p); parent != "." {
		if err := s.CreateGroup(parent); err != nil {
			return nil, err
		}
	}
	in, err := s.layout.writeArray(p, spec)
	if err != nil {
		return nil, fmt.Errorf("create array %q: %w", p, err)
	}
	return newArray(s, p, in), nil
}

// Path is the array's path inside its store.
func (a *Array) Path() string { return a.path }

// Shape is the array's shape.
func (a *Array) Shape() []int { return a.shape }

// Chunks is the chunk shape.
func (a *Array) Chunks() []int { return a.chunks }

// Grid is the number of chunks along each axis.
func (a *Array) Grid() []int { return a.grid }

// DType is the element type.
func (a *Array) DType() DType { return a.dtype }

// Codec is the chunks' compressor (nil for none).
func (a *Array) Codec() Codec { return a.pipe.compressor() }

// Format is the array's Zarr version, 2 or 3.
func (a *Array) Format() int { return a.format }

// ShardShape is the shape of one shard of a sharded v3 array, nil when
// every chunk has its own file.
func (a *Array) ShardShape() []int {
	if a.shard == nil {
		return nil
	}
	return a.shard.shape
}

// IndexAtStart reports whether a sharded array's shards keep their index
// before their chunks.
func (a *Array) IndexAtStart() bool { return a.shard != nil && a.shard.atStart }

// FillValue is the fill value as ArraySpec takes it: nil (none), or a
// bool, int64, uint64 or float64.
func (a *Array) FillValue() any {
	if a.fill == nil {
		return nil
	}
	return a.dtype.value(a.fill)
}

// ChunkSeparator is the separator of the chunk key encoding ("." or "/").
func (a *Array) ChunkSeparator() string { return a.keys.sep }

// ChunkBytes is the decoded size of one chunk (edge chunks included: Zarr
// stores them padded to the full chunk shape).
func (a *Array) ChunkBytes() int { return a.chunkBytes }

// NumChunks is the number of chunks in the grid.
func (a *Array) NumChunks() int {
	n := 1
	for _, g := range a.grid {
		n *= g
	}
	return n
}

// ChunkKey returns the store key of the file holding the chunk at grid
// index idx: "3.0.0" (v2), "c/3/0/0" (v3), or for a sharded array the key
// of the chunk's shard.
func (a *Array) ChunkKey(idx []int) string {
	if a.shard != nil {
		return a.shardKey(idx)
	}
	return a.keys.key(idx)
}

// chunkName names chunk idx in errors: its key, and its grid index when
// it is an inner chunk of a shard.
func (a *Array) chunkName(idx []int) string {
	if a.shard != nil {
		return fmt.Sprintf("shard %s chunk %v", a.shardKey(idx), idx)
	}
	return "chunk " + a.keys.key(idx)
}

func (a *Array) checkIndex(idx []int) error {
	if len(idx) != len(a.grid) {
		return fmt.Errorf("array %q: chunk index %v has rank %d, want %d", a.path, idx, len(idx), len(a.grid))
	}
	for i, v := range idx {
		if v < 0 || v >= a.grid[i] {
			return fmt.Errorf("array %q: chunk index %v out of range (grid %v)", a.path, idx, a.grid)
		}
	}
	return nil
}

// ReadRaw returns the stored (compressed) bytes of a chunk, appended to
// buf[:0]. A missing chunk returns (nil, nil): it reads as the fill value.
func (a *Array) ReadRaw(idx []int, buf []byte) ([]byte, error) {
	if err := a.checkIndex(idx); err != nil {
		return nil, err
	}
	if a.shard != nil {
		return a.readInner(idx, buf)
	}
	out, err := a.dirHandle().readFile(a.ChunkKey(idx), buf)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("array %q chunk %s: %w", a.path, a.ChunkKey(idx), err)
	}
	return out, nil
}

// DecodeChunk decodes stored bytes raw (from ReadRaw) into dst, which must
// be ChunkBytes long. A nil raw (missing chunk) fills dst with the fill value.
func (a *Array) DecodeChunk(idx []int, raw, dst []byte) error {
	if len(dst) != a.chunkBytes {
		return fmt.Errorf("array %q %s: buffer is %d bytes, chunk is %d", a.path, a.chunkName(idx), len(dst), a.chunkBytes)
	}
	if raw == nil {
		a.fillChunk(dst)
		return nil
	}
	if err := a.pipe.decode(dst, raw); err != nil {
		return fmt.Errorf("array %q %s: %w", a.path, a.chunkName(idx), err)
	}
	return nil
}

func (a *Array) fillChunk(dst []byte) {
	if a.fill == nil {
		clear(dst)
		return
	}
	for i := 0; i < len(dst); i += len(a.fill) {
		copy(dst[i:], a.fill)
	}
}

// ReadChunk reads and decodes the chunk at idx into dst (ChunkBytes long).
func (a *Array) ReadChunk(idx []int, dst []byte) error {
	raw, err := a.ReadRaw(idx, nil)
	if err != nil {
		return err
	}
	return a.DecodeChunk(idx, raw, dst)
}

// WriteChunk encodes data (a full chunk, ChunkBytes long) and writes it
// atomically (temp file + rename) at idx. A sharded array is written a
// shard at a time, by WriteRegion.
func (a *Array) WriteChunk(idx []int, data []byte) error {
	if err := a.checkIndex(idx); err != nil {
		return err
	}
	key := a.ChunkKey(idx)
	if a.shard != nil {
		return fmt.Errorf("array %q chunk %v: a sharded array is written a shard at a time (WriteRegion)", a.path, idx)
	}
	if len(data) != a.chunkBytes {
		return fmt.Errorf("array %q chunk %s: got %d bytes, chunk is %d", a.path, key, len(data), a.chunkBytes)
	}
	out, err := a.pipe.encode(data)
	if err != nil {
		return fmt.Errorf("array %q chunk %s: %w", a.path, key, err)
	}
	if err := a.writeFile(key, out); err != nil {
		return fmt.Errorf("array %q chunk %s: %w", a.path, key, err)
	}
	return nil
}

// writeFile writes the concatenated parts to the file key of the array's
// directory atomically: a temporary file beside it, then a rename.
func (a *Array) writeFile(key string, parts ...[]byte) error {
	file := filepath.Join(a.store.root, filepath.FromSlash(a.path), filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			break
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
