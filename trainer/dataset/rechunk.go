package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipetop/pipetop/trainer/zarr"
)

// RechunkOptions configures Rechunk.
type RechunkOptions struct {
	// ChunkFrames is the new chunk length along the frame axis for image
	// arrays (rank 3 or more, i.e. cameras): whole frames, ChunkFrames at
	// a time. Vectors and tables (state, action, episode_ends) get zarr's
	// default guess, which keeps them in a few large chunks that the
	// loader caches.
	ChunkFrames int
	// Codec is a zarr.NewCodec name; empty keeps each array's codec.
	Codec string
	// SlabBytes bounds the memory of one slab (256 MiB).
	SlabBytes int64
}

// Rechunk copies the store at src to dst with new chunking. It writes to a
// temporary directory beside dst, verifies every slab by reading it back,
// and renames into place only when everything matched; src is only read.
func Rechunk(src, dst string, o RechunkOptions) error {
	if o.ChunkFrames < 1 {
		return fmt.Errorf("rechunk: chunk frames %d must be >= 1", o.ChunkFrames)
	}
	if o.SlabBytes <= 0 {
		o.SlabBytes = 256 << 20
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("rechunk: destination %s already exists", dst)
	}
	if a, b := filepath.Clean(src), filepath.Clean(dst); a == b || strings.HasPrefix(b, a+string(filepath.Separator)) {
		return fmt.Errorf("rechunk: destination %s is inside the source %s", dst, src)
	}
	var codec zarr.Codec
	if o.Codec != "" {
		var err error
		if codec, err = zarr.NewCodec(o.Codec); err != nil {
			return fmt.Errorf("rechunk: %w", err)
		}
	}
	in, err := zarr.Open(src)
	if err != nil {
		return fmt.Errorf("rechunk: %w", err)
	}
	tmp := fmt.Sprintf("%s.tmp-%d", filepath.Clean(dst), os.Getpid())
	if err := rechunkInto(in, tmp, codec, o); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("rechunk: %w", err)
	}
	return nil
}

func rechunkInto(in *zarr.Store, tmp string, codec zarr.Codec, o RechunkOptions) error {
	out, err := zarr.Create(tmp)
	if err != nil {
		return fmt.Errorf("rechunk: %w", err)
	}
	names, err := in.Arrays()
	if err != nil {
		return fmt.Errorf("rechunk: %w", err)
	}
	for _, n := range names {
		src, err := in.OpenArray(n)
		if err != nil {
			return fmt.Errorf("rechunk: %w", err)
		}
		if err := copyArray(out, src, codec, o); err != nil {
			return fmt.Errorf("rechunk %s: %w", n, err)
		}
	}
	if err := copyAttrs(in.Root(), tmp); err != nil {
		return fmt.Errorf("rechunk: %w", err)
	}
	if err := out.Consolidate(); err != nil {
		return fmt.Errorf("rechunk: %w", err)
	}
	return nil
}

// newChunks picks the destination chunk shape for an array.
func newChunks(shape []int, itemSize, chunkFrames int) []int {
	if len(shape) == 0 {
		return nil
	}
	if len(shape) < 3 {
		return GuessChunks(shape, itemSize)
	}
	c := append([]int{min(chunkFrames, max(1, shape[0]))}, shape[1:]...)
	return c
}

func copyArray(out *zarr.Store, src *zarr.Array, codec zarr.Codec, o RechunkOptions) error {
	sh := src.Shape()
	if codec == nil && o.Codec == "" {
		codec = src.Codec()
	}
	dstChunks := newChunks(sh, src.DType().Size, o.ChunkFrames)
	dst, err := out.CreateArray(src.Path(), zarr.ArraySpec{Shape: sh, Chunks: dstChunks, DType: src.DType().String(),
		Codec: codec, FillValue: src.FillValue(), DimensionSeparator: src.ChunkSeparator()})
	if err != nil {
		return err
	}
	if len(sh) == 0 {
		buf := make([]byte, src.DType().Size)
		if err := src.ReadRegion(nil, nil, buf); err != nil {
			return err
		}
		return dst.WriteRegion(nil, nil, buf)
	}
	row := int64(src.DType().Size)
	for _, s := range sh[1:] {
		row *= int64(s)
	}
	rows := slabRows(src.Chunks()[0], dstChunks[0], row, o.SlabBytes)
	start, count := make([]int, len(sh)), append([]int(nil), sh...)
	buf := make([]byte, int64(rows)*row)
	check := make([]byte, len(buf))
	for t0 := 0; t0 < sh[0]; t0 += rows {
		n := min(rows, sh[0]-t0)
		start[0], count[0] = t0, n
		b, c := buf[:int64(n)*row], check[:int64(n)*row]
		if err := src.ReadRegion(start, count, b); err != nil {
			return err
		}
		if err := dst.WriteRegion(start, count, b); err != nil {
			return err
		}
		if err := dst.ReadRegion(start, count, c); err != nil {
			return fmt.Errorf("verify rows %d..%d: %w", t0, t0+n, err)
		}
		if !bytes.Equal(b, c) {
			return fmt.Errorf("verify rows %d..%d: data read back differs from the source", t0, t0+n)
		}
	}
	return nil
}

// slabRows picks a slab height: a multiple of the destination chunk rows
// (so every destination chunk is written once, whole) that also covers
// whole source chunks when that fits in the memory bound.
func slabRows(srcRows, dstRows int, rowBytes, limit int64) int {
	l := lcm(srcRows, dstRows)
	if int64(l)*rowBytes <= limit {
		// Grow to use the budget, keeping alignment.
		k := max(1, limit/(int64(l)*rowBytes)/4)
		return l * int(k)
	}
	return dstRows * max(1, (srcRows+dstRows-1)/dstRows)
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	if a/x > (1<<40)/max(1, b) {
		return 1 << 40
	}
	return a / x * b
}

// copyAttrs copies every .zattrs file from src to the same place in dst.
func copyAttrs(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != ".zattrs" {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if _, err := os.Stat(filepath.Dir(target)); errors.Is(err, fs.ErrNotExist) {
			return nil // not an array or group we copied
		}
		return os.WriteFile(target, data, 0o644)
	})
}
