package zarr

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Array is one Zarr v2 array of a Store. It is safe for concurrent reads.
type Array struct {
	store *Store
	path  string
	meta  ArrayMeta
	arrayInfo
	chunkBytes int
	grid       []int // number of chunks along each axis
	dir        *dirHandle
}

// ArraySpec describes an array to create.
type ArraySpec struct {
	Shape  []int
	Chunks []int
	// DType is a numpy type string, e.g. "|u1" or "<f4".
	DType string
	// Codec compresses chunks; nil stores them raw.
	Codec Codec
	// FillValue is nil (JSON null), an integer, a float (NaN and the
	// infinities are allowed for float dtypes), or a json.RawMessage copied
	// from another array's metadata.
	FillValue any
	// DimensionSeparator is "." (the default) or "/".
	DimensionSeparator string
}

// OpenArray opens the array at path p (e.g. "data/camera0").
func (s *Store) OpenArray(p string) (*Array, error) {
	p, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	data, err := s.readMeta(path.Join(p, ".zarray"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("array %q: missing .zarray in %s", p, s.root)
		}
		return nil, fmt.Errorf("array %q: %w", p, err)
	}
	m, err := ParseArrayMeta(data)
	if err != nil {
		return nil, fmt.Errorf("array %q: .zarray: %w", p, err)
	}
	return newArray(s, p, m)
}

func newArray(s *Store, p string, m ArrayMeta) (*Array, error) {
	in, err := m.info()
	if err != nil {
		return nil, fmt.Errorf("array %q: .zarray: %w", p, err)
	}
	a := &Array{store: s, path: p, meta: m, arrayInfo: in}
	a.dir = newDirHandle(filepath.Join(s.root, filepath.FromSlash(p)))
	a.chunkBytes = in.dtype.Size
	a.grid = make([]int, len(in.shape))
	for i := range in.shape {
		a.chunkBytes *= in.chunks[i]
		a.grid[i] = (in.shape[i] + in.chunks[i] - 1) / in.chunks[i]
	}
	return a, nil
}

// CreateArray writes a new array's .zarray (creating parent groups).
func (s *Store) CreateArray(p string, spec ArraySpec) (*Array, error) {
	p, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, fmt.Errorf("create array: empty path")
	}
	m, err := spec.meta()
	if err != nil {
		return nil, fmt.Errorf("create array %q: %w", p, err)
	}
	a, err := newArray(s, p, m)
	if err != nil {
		return nil, err
	}
	if err := s.CreateGroup(path.Dir(p)); err != nil && path.Dir(p) != "." {
		return nil, err
	}
	dir := filepath.Join(s.root, filepath.FromSlash(p))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create array %q: %w", p, err)
	}
	doc := map[string]any{
		"zarr_format": 2, "shape": m.Shape, "chunks": m.Chunks, "dtype": spec.DType,
		"compressor": m.Compressor, "fill_value": m.FillValue, "order": "C", "filters": nil,
	}
	if spec.DimensionSeparator != "" {
		doc["dimension_separator"] = spec.DimensionSeparator
	}
	if err := writeJSON(filepath.Join(dir, ".zarray"), doc); err != nil {
		return nil, fmt.Errorf("create array %q: %w", p, err)
	}
	if s.consolidated != nil {
		s.consolidated = nil // stale until the next Consolidate
	}
	return a, nil
}

func (spec ArraySpec) meta() (ArrayMeta, error) {
	m := ArrayMeta{ZarrFormat: 2, Shape: spec.Shape, Chunks: spec.Chunks, Order: "C",
		DimensionSeparator: spec.DimensionSeparator}
	var err error
	m.DType = []byte(strconv.Quote(spec.DType))
	if m.FillValue, err = fillJSON(spec.FillValue); err != nil {
		return m, err
	}
	m.Compressor = []byte("null")
	if spec.Codec != nil {
		if m.Compressor, err = jsonMarshal(spec.Codec.Config()); err != nil {
			return m, err
		}
	}
	return m, nil
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

// Codec is the compressor (nil for none).
func (a *Array) Codec() Codec { return a.codec }

// Meta is the .zarray document.
func (a *Array) Meta() ArrayMeta { return a.meta }

// ChunkBytes is the decoded size of one chunk (edge chunks included: Zarr
// v2 stores them padded to the full chunk shape).
func (a *Array) ChunkBytes() int { return a.chunkBytes }

// NumChunks is the number of chunks in the grid.
func (a *Array) NumChunks() int {
	n := 1
	for _, g := range a.grid {
		n *= g
	}
	return n
}

// ChunkKey returns the store key of the chunk at grid index idx, e.g. "3.0.0".
func (a *Array) ChunkKey(idx []int) string {
	if len(idx) == 0 {
		return "0"
	}
	var b strings.Builder
	for i, v := range idx {
		if i > 0 {
			b.WriteString(a.sep)
		}
		b.WriteString(strconv.Itoa(v))
	}
	return b.String()
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

func (a *Array) chunkFile(idx []int) string {
	return filepath.Join(a.store.root, filepath.FromSlash(a.path), filepath.FromSlash(a.ChunkKey(idx)))
}

// ReadRaw returns the stored (compressed) bytes of a chunk, appended to
// buf[:0]. A missing chunk returns (nil, nil): it reads as the fill value.
func (a *Array) ReadRaw(idx []int, buf []byte) ([]byte, error) {
	if err := a.checkIndex(idx); err != nil {
		return nil, err
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
		return fmt.Errorf("array %q chunk %s: buffer is %d bytes, chunk is %d", a.path, a.ChunkKey(idx), len(dst), a.chunkBytes)
	}
	if raw == nil {
		a.fillChunk(dst)
		return nil
	}
	var err error
	if a.codec == nil {
		err = checkLen("raw chunk", len(raw), len(dst))
		copy(dst, raw)
	} else {
		err = a.codec.Decode(dst, raw)
	}
	if err != nil {
		return fmt.Errorf("array %q chunk %s: %w", a.path, a.ChunkKey(idx), err)
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

// WriteChunk compresses data (a full chunk, ChunkBytes long) and writes it
// atomically (temp file + rename) at idx.
func (a *Array) WriteChunk(idx []int, data []byte) error {
	if err := a.checkIndex(idx); err != nil {
		return err
	}
	key := a.ChunkKey(idx)
	if len(data) != a.chunkBytes {
		return fmt.Errorf("array %q chunk %s: got %d bytes, chunk is %d", a.path, key, len(data), a.chunkBytes)
	}
	out := data
	if a.codec != nil {
		var err error
		if out, err = a.codec.Encode(nil, data, a.dtype.Size); err != nil {
			return fmt.Errorf("array %q chunk %s: %w", a.path, key, err)
		}
	}
	file := a.chunkFile(idx)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("array %q chunk %s: %w", a.path, key, err)
	}
	tmp := file + ".partial"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return fmt.Errorf("array %q chunk %s: %w", a.path, key, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("array %q chunk %s: %w", a.path, key, err)
	}
	return nil
}
