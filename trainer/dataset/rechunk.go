package dataset

import (
	"bytes"
	"fmt"
	"os"
	"path"
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
	// SlabBytes bounds the memory of one slab (256 MiB, or one shard
	// when that is larger: shards are written whole).
	SlabBytes int64
	// Layout is the destination's Zarr format (0: the source's) and
	// camera shards.
	Layout Layout
}

// Rechunk copies the store at src to dst with new chunking, and with
// o.Layout in a new Zarr format or in shards. It writes to a temporary
// directory beside dst, verifies every slab by reading it back, and
// renames into place only when everything matched; src is only read.
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
	if o.Layout.Format == 0 {
		o.Layout.Format = in.Format()
		if o.Layout.ShardFrames > 0 {
			o.Layout.Format = 3
		}
	}
	if err := o.Layout.check(o.ChunkFrames); err != nil {
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
	out, err := zarr.CreateFormat(tmp, o.Layout.Format)
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
	if err := copyAttrs(in, out, names); err != nil {
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
	shards := o.Layout.shardShape(sh, dstChunks)
	spec := zarr.ArraySpec{Shape: sh, Chunks: dstChunks, ShardShape: shards, DType: src.DType().String(),
		Codec: codec, FillValue: src.FillValue()}
	if out.Format() == 2 {
		spec.DimensionSeparator = src.ChunkSeparator()
	}
	dst, err := out.CreateArray(src.Path(), spec)
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
	rows := slabRows(src.Chunks()[0], writeRows(dstChunks, shards), row, o.SlabBytes)
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

// copyAttrs copies the attributes of the root, of every array and of
// every group holding one from in to out.
func copyAttrs(in, out *zarr.Store, arrays []string) error {
	nodes := map[string]bool{"": true}
	for _, a := range arrays {
		for p := a; p != "." && p != ""; p = path.Dir(p) {
			nodes[p] = true
		}
	}
	for p := range nodes {
		attrs, err := in.Attrs(p)
		if err != nil {
			return err
		}
		if len(attrs) == 0 {
			continue
		}
		if err := out.SetAttrs(p, attrs); err != nil {
			return err
		}
	}
	return nil
}
