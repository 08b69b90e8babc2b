package loader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("loader closed")

// result is a finished batch (or its error) waiting for delivery.
type result struct {
	b   *Batch
	err error
}

// Loader produces batches of training windows. Next, Release, Position and
// Close are for the training loop's goroutine; Stats is safe from any.
type Loader struct {
	cfg     Config
	buf     *episodes.Buffer
	idx     *episodes.Index
	sampler episodes.Shuffle
	shape   Shape
	arrays  []*zarr.Array // cameras, then low-dim, then action
	cams    []camera
	orders  orderCache

	// planMu orders batch planning and guards store and uses.
	planMu sync.Mutex
	store  *frameStore
	uses   uses
	low    *chunkCache // decoded low-dim chunks
	// directHorizon bounds how far ahead (in samples) a frame of a
	// one-frame-per-chunk camera may be needed to be cached: decoding
	// such a frame costs only a few copies of it, so keeping it pays
	// only when it is used again soon.
	directHorizon int64

	free     chan *Batch
	poolSize int
	held     int // batches handed out and not yet released

	mu        sync.Mutex
	ready     map[int64]result
	changed   chan struct{} // closed and replaced whenever ready changes
	nextBatch int64         // next batch number to assign (workers)
	nextOut   int64         // next batch number to deliver

	done   chan struct{}
	closed atomic.Bool
	wg     sync.WaitGroup
	inline *worker

	st counters
}

// New opens the dataset, builds the window index and starts the workers.
func New(cfg Config) (*Loader, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	b, err := episodes.Open(cfg.Dir, cfg.Keys)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	idx, err := b.Index(cfg.Window)
	if err != nil {
		return nil, fmt.Errorf("loader: %s: %w", cfg.Dir, err)
	}
	l := &Loader{
		cfg: cfg, buf: b, idx: idx,
		shape: Shape{NObs: cfg.Window.NObs, Cams: len(b.Cameras), H: b.H, W: b.W,
			Horizon: cfg.Window.Horizon, StateDim: b.StateDim, ActionDim: b.ActionDim},
		ready:   map[int64]result{},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	l.arrays = append(append(append(l.arrays, b.Cameras...), b.LowDim...), b.Action)
	for _, a := range b.Cameras {
		l.cams = append(l.cams, newCamera(a))
	}
	if l.sampler, err = l.newSampler(); err != nil {
		return nil, err
	}
	l.orders.sampler = l.sampler
	lowCap := min(cfg.CacheBytes/8, lowDimBytes(b))
	l.low = newChunkCache(lowCap)
	// The first job keeps at most one batch's worth of frames for later.
	l.store = newFrameStore(cfg.CacheBytes-lowCap, l.shape.FrameBytes(), cfg.Batch*l.shape.NObs*l.shape.Cams*l.shape.FrameBytes())
	l.directHorizon = int64(8 * cfg.Batch)
	l.uses = uses{orders: &l.orders, idx: idx, nobs: cfg.Window.NObs, frames: b.Frames, per: int64(l.sampler.Len())}
	l.poolSize = cfg.Prefetch + cfg.Workers + 2
	l.free = make(chan *Batch, l.poolSize)
	for range l.poolSize {
		l.free <- NewBatch(l.shape, cfg.Batch)
	}
	l.st.start(time.Now())
	if cfg.Workers == 0 {
		l.inline = l.newWorker()
	}
	for range cfg.Workers {
		l.wg.Add(1)
		go l.run(l.newWorker())
	}
	return l, nil
}

func (l *Loader) newSampler() (episodes.Shuffle, error) {
	s, err := l.baseSampler()
	if err != nil || l.cfg.World <= 1 {
		return s, err
	}
	sh, err := episodes.NewShard(s, l.cfg.Rank, l.cfg.World)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	return sh, nil
}

func (l *Loader) baseSampler() (episodes.Shuffle, error) {
	if l.cfg.Sampler == "uniform" {
		return episodes.Uniform{N: l.idx.Len(), Seed: l.cfg.Seed}, nil
	}
	cf := l.buf.Cameras[0].Chunks()[0]
	mix, span := l.cfg.Mix, 0
	if mix == 0 {
		mix, span = chunkMix(l.cfg.CacheBytes, cf, l.rowBytes())
	}
	s, err := episodes.NewChunkAware(l.idx, cf, span, mix, l.cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	return s, nil
}

// rowBytes is one frame of every camera, decoded.
func (l *Loader) rowBytes() int64 {
	return int64(len(l.buf.Cameras)) * int64(l.shape.FrameBytes())
}

// chunkMix picks the chunk-aware sampler's mix and span for a cache of
// cacheBytes and chunks of chunkFrames frames of rowBytes each. When the
// cache holds three chunk rows or more, whole chunks are mixed, as many as
// a third of the cache holds (2 to 64). A smaller cache mixes two spans of
// a chunk at a time, each span a sixth of what the cache holds, so the two
// being sampled take a third of it and the rest keeps frames of the
// chunk's next spans decoded with them: a chunk row is then decoded about
// once per cache-full of its frames instead of once per batch.
func chunkMix(cacheBytes int64, chunkFrames int, rowBytes int64) (mix, span int) {
	group := int64(chunkFrames) * rowBytes
	if cacheBytes >= 3*group {
		return int(min(64, max(2, cacheBytes/(3*group)))), 0
	}
	return 2, int(max(1, cacheBytes/(6*rowBytes)))
}

// Shape is the geometry of the batches.
func (l *Loader) Shape() Shape { return l.shape }

// Windows is the number of training windows in the dataset.
func (l *Loader) Windows() int { return l.idx.Len() }

// EpochWindows is the number of windows this loader visits per epoch: all
// of them, or this rank's shard.
func (l *Loader) EpochWindows() int { return l.sampler.Len() }

// SamplerName is the sampler in use ("uniform" or "chunk").
func (l *Loader) SamplerName() string { return l.sampler.Name() }

// Position is the stream index of the next sample Next will deliver; pass
// it as Config.StartSample to resume. Epoch = Position / EpochWindows.
func (l *Loader) Position() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg.StartSample + l.nextOut*int64(l.cfg.Batch)
}

// run is a worker goroutine: take a free buffer, claim the next batch
// number, fill it, publish it.
func (l *Loader) run(w *worker) {
	defer l.wg.Done()
	for {
		var b *Batch
		select {
		case b = <-l.free:
		case <-l.done:
			return
		}
		n, err := w.fillBatch(b, false)
		l.publish(n, result{b, err})
	}
}

func (l *Loader) publish(n int64, r result) {
	l.mu.Lock()
	l.ready[n] = r
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// Next returns the next batch in sample order, blocking until it is ready.
// Errors reading or decoding the batch's data are returned here (the batch
// is skipped; the next call moves on). Give the batch back with Release.
func (l *Loader) Next(ctx context.Context) (*Batch, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	if l.held >= l.poolSize {
		return nil, fmt.Errorf("loader: the caller holds %d batches without Release (pool of %d)", l.held, l.poolSize)
	}
	if l.inline != nil {
		return l.nextInline()
	}
	for {
		l.mu.Lock()
		r, ok := l.ready[l.nextOut]
		if ok {
			delete(l.ready, l.nextOut)
			l.nextOut++
		}
		ch := l.changed
		l.mu.Unlock()
		if ok {
			return l.deliver(r)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.done:
			return nil, ErrClosed
		}
	}
}

func (l *Loader) nextInline() (*Batch, error) {
	b := <-l.free
	_, err := l.inline.fillBatch(b, true)
	return l.deliver(result{b, err})
}

// claim assigns the next batch number: the workers' counter, or the
// delivery counter when decoding inline.
func (l *Loader) claim(inline bool) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if inline {
		l.nextOut++
		return l.nextOut - 1
	}
	l.nextBatch++
	return l.nextBatch - 1
}

// lowDimBytes is the decoded size of the low-dim and action arrays.
func lowDimBytes(b *episodes.Buffer) int64 {
	var n int64
	for _, a := range append(append([]*zarr.Array(nil), b.LowDim...), b.Action) {
		n += int64(a.NumChunks()) * int64(a.ChunkBytes())
	}
	return n
}

func (l *Loader) deliver(r result) (*Batch, error) {
	if r.err != nil {
		l.st.errors.Add(1)
		l.free <- r.b
		return nil, r.err
	}
	l.held++
	l.st.delivered.Add(int64(r.b.Size))
	return r.b, nil
}

// Release returns a batch's buffer to the pool. The batch must not be used
// afterwards.
func (l *Loader) Release(b *Batch) {
	if b == nil {
		return
	}
	l.held--
	l.free <- b
}

// Close stops the workers and waits for them.
func (l *Loader) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	close(l.done)
	l.wg.Wait()
	l.planMu.Lock()
	l.store.mem.release()
	l.planMu.Unlock()
	return nil
}

// Stats returns a snapshot of the loader's counters.
func (l *Loader) Stats() stage.LoaderStats {
	l.mu.Lock()
	depth := len(l.ready)
	l.mu.Unlock()
	hits, misses := l.low.counts()
	l.planMu.Lock()
	hits, misses = hits+l.store.hits, misses+l.store.misses
	l.planMu.Unlock()
	// Workers fill any free buffer, so the pool bounds the ready queue.
	s := l.st.snapshot(time.Now(), l.cfg.Workers, l.cfg.Batch, depth, l.poolSize, hits, misses)
	s.Dataset = l.cfg.Dir
	return s
}

// orderCache keeps the sample order of the last few epochs.
type orderCache struct {
	mu      sync.Mutex
	sampler episodes.Shuffle
	epochs  map[int64][]int32
}

func (o *orderCache) get(epoch int64) []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ord, ok := o.epochs[epoch]; ok {
		return ord
	}
	if o.epochs == nil {
		o.epochs = map[int64][]int32{}
	}
	for e := range o.epochs {
		if e < epoch-1 {
			delete(o.epochs, e)
		}
	}
	ord := o.sampler.Order(epoch)
	o.epochs[epoch] = ord
	return ord
}
