package dataset

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// ArrayReport describes one array.
type ArrayReport struct {
	Path   string `json:"path"`
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Chunks []int  `json:"chunks"`
	// ShardShape and IndexAtStart describe a sharded v3 array's shards.
	ShardShape   []int  `json:"shard_shape,omitempty"`
	IndexAtStart bool   `json:"index_at_start,omitempty"`
	Codec        string `json:"codec"`
	// Files counts the array's chunk (or shard) files.
	Files       int64   `json:"files"`
	NumChunks   int     `json:"num_chunks"`
	ChunkBytes  int     `json:"chunk_bytes"`
	RawBytes    int64   `json:"raw_bytes"`
	StoredBytes int64   `json:"stored_bytes"`
	Ratio       float64 `json:"compression_ratio"`
}

// Report is the result of Inspect.
type Report struct {
	Dir string `json:"dir"`
	// Format is the store's Zarr version, 2 or 3.
	Format       int                   `json:"format"`
	Consolidated bool                  `json:"consolidated"`
	Episodes     int                   `json:"episodes"`
	Frames       int64                 `json:"frames"`
	Windows      int                   `json:"windows"`
	Window       episodes.WindowParams `json:"window"`
	Arrays       []ArrayReport         `json:"arrays"`
	// ReadAmpUniform is bytes decompressed per byte used with shuffled
	// windows (the uniform sampler), batches of Batch and the loader's
	// cache of CacheBytes: one decode per chunk row per batch, the decoded
	// frames needed soonest kept for later batches.
	ReadAmpUniform float64 `json:"read_amp_uniform"`
	// CacheBytes and Batch are the loader cache and batch the model
	// assumed.
	CacheBytes int64 `json:"cache_bytes"`
	Batch      int   `json:"batch"`
	// ReadAmpLarge is ReadAmpUniform for a dataset ten times the cache
	// (the model runs with a tenth of the decoded data as its cache, when
	// that is less than CacheBytes): what the chunking costs once the data
	// outgrows the cache. The recommendation rests on it.
	ReadAmpLarge float64 `json:"read_amp_large"`
	// ReadAmpChunk is the same when each chunk is decoded once per epoch
	// (the chunk-aware sampler with a cache that holds its mix).
	ReadAmpChunk   float64 `json:"read_amp_chunk"`
	Recommendation string  `json:"recommendation"`
}

// InspectOptions tune what Inspect models.
type InspectOptions struct {
	// CacheBytes is the loader's decoded-chunk cache; 0 means
	// DefaultCacheBytes.
	CacheBytes int64
	// Batch is the loader's batch size; 0 means DefaultBatch.
	Batch int
}

// Inspect examines the replay buffer at dir with the given keys and window,
// modelling the loader's default cache.
func Inspect(dir string, keys episodes.Keys, win episodes.WindowParams) (*Report, error) {
	return InspectWith(dir, keys, win, InspectOptions{})
}

// InspectWith is Inspect with options.
func InspectWith(dir string, keys episodes.Keys, win episodes.WindowParams, o InspectOptions) (*Report, error) {
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	b, err := episodes.Open(dir, keys)
	if err != nil {
		return nil, err
	}
	idx, err := b.Index(win)
	if err != nil {
		return nil, err
	}
	r := &Report{Dir: dir, Format: b.Store.Format(), Consolidated: b.Store.Consolidated(), Episodes: len(b.EpisodeEnds),
		Frames: b.Frames, Windows: idx.Len(), Window: win, CacheBytes: o.CacheBytes, Batch: o.Batch}
	names, err := b.Store.Arrays()
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		a, err := b.Store.OpenArray(n)
		if err != nil {
			return nil, err
		}
		ar, err := arrayReport(dir, a)
		if err != nil {
			return nil, err
		}
		r.Arrays = append(r.Arrays, ar)
	}
	r.readAmp(b, idx)
	r.recommend(b)
	return r, nil
}

func arrayReport(dir string, a *zarr.Array) (ArrayReport, error) {
	ar := ArrayReport{Path: a.Path(), DType: a.DType().String(), Shape: a.Shape(), Chunks: a.Chunks(),
		ShardShape: a.ShardShape(), IndexAtStart: a.IndexAtStart(),
		Codec: zarr.CodecName(a.Codec()), NumChunks: a.NumChunks(), ChunkBytes: a.ChunkBytes()}
	ar.RawBytes = int64(a.DType().Size)
	for _, s := range a.Shape() {
		ar.RawBytes *= int64(s)
	}
	err := filepath.WalkDir(filepath.Join(dir, filepath.FromSlash(a.Path())), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".z") || d.Name() == "zarr.json" {
			return nil
		}
		ar.Files++
		info, err := d.Info()
		if err != nil {
			return err
		}
		ar.StoredBytes += info.Size()
		return nil
	})
	if err != nil {
		return ar, fmt.Errorf("inspect %s: %w", a.Path(), err)
	}
	if ar.StoredBytes > 0 {
		ar.Ratio = float64(ar.RawBytes) / float64(ar.StoredBytes)
	}
	return ar, nil
}

// frameSpan is the decoded bytes touched to read one row (frame) of a: all
// chunks crossing that row, i.e. chunk rows × the padded row size.
func frameSpan(a *zarr.Array) (decoded, used int64) {
	used = int64(a.DType().Size)
	span := int64(a.ChunkBytes())
	for k, s := range a.Shape()[1:] {
		used *= int64(s)
		span *= int64(a.Grid()[k+1])
	}
	return span, used
}

// decodedBytes is the size of b's arrays decoded (padded chunks included).
func decodedBytes(b *episodes.Buffer) int64 {
	var n int64
	for _, a := range append(append(append([]*zarr.Array(nil), b.Cameras...), b.LowDim...), b.Action) {
		n += int64(a.ChunkBytes()) * int64(a.NumChunks())
	}
	return n
}

func (r *Report) readAmp(b *episodes.Buffer, idx *episodes.Index) {
	r.ReadAmpUniform = uniformAmp(b, idx, r.CacheBytes, r.Batch, 1)
	r.ReadAmpLarge = r.ReadAmpUniform
	if small := decodedBytes(b) / 10; small < r.CacheBytes {
		r.ReadAmpLarge = uniformAmp(b, idx, small, r.Batch, 1)
	}
	// The chunk-aware sampler decodes every chunk about once per epoch.
	var dec, used float64
	for _, a := range b.Cameras {
		d, u := frameSpan(a)
		dec += float64(d) * float64(a.Grid()[0])
		used += float64(r.Window.NObs) * float64(u)
	}
	for _, a := range append(append([]*zarr.Array(nil), b.LowDim...), b.Action) {
		d, u := frameSpan(a)
		rows := r.Window.NObs
		if a == b.Action {
			rows = r.Window.Horizon
		}
		dec += float64(d) * float64(a.Grid()[0])
		used += float64(rows) * float64(u)
	}
	if perEpoch := used * float64(r.Windows); perEpoch > 0 {
		r.ReadAmpChunk = dec / perEpoch
	}
}

func (r *Report) recommend(b *episodes.Buffer) {
	cam := b.Cameras[0]
	ch, sh := cam.Chunks(), cam.Shape()
	oneFrame := ch[0] == 1 && ch[1] == sh[1] && ch[2] == sh[2]
	// Rechunking to one frame makes a file per frame unless it shards.
	rechunk := fmt.Sprintf("pipetrain data rechunk %s DST --chunk-frames 1", r.Dir)
	if sh[0] > ShardFileThreshold {
		rechunk = fmt.Sprintf("pipetrain data rechunk %s DST --format 3 --chunk-frames 1 --shard-frames %d: one file per frame would be %d files per camera, more than %d, so into Zarr v3 shards", r.Dir, DefaultShardFrames, sh[0], ShardFileThreshold)
	}
	switch {
	case oneFrame && cam.ShardShape() == nil && sh[0] > ShardFileThreshold:
		r.Recommendation = fmt.Sprintf("1-frame chunks fit random training windows, but each camera array is %d files (more than %d): slow to copy, list and open on network file systems and object stores. Shard them, keeping 1-frame reads: pipetrain data rechunk %s DST --format 3 --chunk-frames 1 --shard-frames %d",
			sh[0], ShardFileThreshold, r.Dir, DefaultShardFrames)
	case r.ReadAmpLarge <= 1.5 || oneFrame:
		r.Recommendation = "chunking fits random training windows; nothing to do"
	case ch[1] != sh[1] || ch[2] != sh[2] || ch[3] != sh[3]:
		r.Recommendation = fmt.Sprintf("camera chunks %v split frames and hold %d frames each: a random window decompresses %.0fx the bytes it uses once the data outgrows the cache. Rechunk with --chunk-frames 1 (%s), or train with --sampler chunk to decode each chunk about once per epoch (read amplification %.2f)",
			ch, ch[0], r.ReadAmpLarge, rechunk, r.ReadAmpChunk)
	default:
		r.Recommendation = fmt.Sprintf("camera chunks hold %d frames: a random window decompresses %.0fx the bytes it uses once the data outgrows the cache. Rechunk with --chunk-frames 1 (%s), or train with --sampler chunk (read amplification %.2f)",
			ch[0], r.ReadAmpLarge, rechunk, r.ReadAmpChunk)
	}
}

// WriteText prints the report for people.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "dataset %s (Zarr v%d, consolidated metadata: %v)\n", r.Dir, r.Format, r.Consolidated)
	fmt.Fprintf(w, "  %d episodes, %d frames, %d training windows (n_obs %d, horizon %d, n_action %d)\n\n",
		r.Episodes, r.Frames, r.Windows, r.Window.NObs, r.Window.Horizon, r.Window.NActionSteps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ARRAY\tDTYPE\tSHAPE\tCHUNKS\tSHARDS\tCODEC\tCHUNK\tFILES\tRAW\tSTORED\tRATIO")
	var raw, stored, files int64
	for _, a := range r.Arrays {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%s\t%s\t%s\t%d\t%s\t%s\t%.2f\n", a.Path, a.DType, a.Shape, a.Chunks, shardText(a), a.Codec,
			HumanBytes(int64(a.ChunkBytes)), a.Files, HumanBytes(a.RawBytes), HumanBytes(a.StoredBytes), a.Ratio)
		raw += a.RawBytes
		stored += a.StoredBytes
		files += a.Files
	}
	fmt.Fprintf(tw, "total\t\t\t\t\t\t\t%d\t%s\t%s\t%.2f\n", files, HumanBytes(raw), HumanBytes(stored), float64(raw)/float64(max(1, stored)))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nread amplification with a %d MiB decoded-chunk cache: %.1f (uniform sampling), %.2f (chunk-aware sampling); %.1f uniform once the data is ten times the cache\n",
		r.CacheBytes>>20, r.ReadAmpUniform, r.ReadAmpChunk, r.ReadAmpLarge)
	for _, a := range r.Arrays {
		if a.ShardShape != nil {
			fmt.Fprintf(w, "sharded arrays: the loader reads each chunk with one ranged read of its shard, after one read of the shard's index (cached)\n")
			break
		}
	}
	_, err := fmt.Fprintf(w, "recommendation: %s\n", r.Recommendation)
	return err
}

// shardText is an array's shard layout for the table: "-" when unsharded.
func shardText(a ArrayReport) string {
	if a.ShardShape == nil {
		return "-"
	}
	where := "end"
	if a.IndexAtStart {
		where = "start"
	}
	return fmt.Sprintf("%v index@%s", a.ShardShape, where)
}

// HumanBytes formats a byte count with a binary unit.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
