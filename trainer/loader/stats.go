package loader

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
)

// counters are the loader's cumulative statistics, updated by workers.
type counters struct {
	bytesRead, bytesDecoded, bytesUsed atomic.Int64
	readNs, decodeNs, collateNs        atomic.Int64
	busyNs                             atomic.Int64
	errors, delivered                  atomic.Int64

	mu        sync.Mutex
	t0        time.Time
	lastT     time.Time
	lastDel   int64
	lastBusy  int64
	rate      float64
	busyFrac  float64
	hasSample bool
}

func (c *counters) start(now time.Time) {
	c.t0, c.lastT = now, now
}

// minInterval is the shortest interval rates are computed over; snapshots
// closer together than this repeat the previous rates.
const minInterval = 100 * time.Millisecond

func (c *counters) snapshot(now time.Time, workers, batch, depth, qcap int, hits, misses int64) stage.LoaderStats {
	s := stage.LoaderStats{
		TimeNs: now.UnixNano(), Workers: workers, Batch: batch, QueueDepth: depth, QueueCap: qcap,
		BytesRead: c.bytesRead.Load(), BytesDecoded: c.bytesDecoded.Load(), BytesUsed: c.bytesUsed.Load(),
		ReadNs: c.readNs.Load(), DecodeNs: c.decodeNs.Load(), CollateNs: c.collateNs.Load(),
		Errors: c.errors.Load(),
	}
	if hits+misses > 0 {
		s.CacheHitRate = float64(hits) / float64(hits+misses)
	}
	if s.BytesUsed > 0 {
		s.ReadAmp = float64(s.BytesDecoded) / float64(s.BytesUsed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if dt := now.Sub(c.lastT); dt >= minInterval || !c.hasSample {
		del, busy := c.delivered.Load(), c.busyNs.Load()
		if dt > 0 {
			c.rate = float64(del-c.lastDel) / dt.Seconds()
			c.busyFrac = float64(busy-c.lastBusy) / float64(dt.Nanoseconds()*int64(max(1, workers)))
		}
		c.busyFrac = min(1, max(0, c.busyFrac))
		c.lastT, c.lastDel, c.lastBusy, c.hasSample = now, del, busy, true
	}
	s.SamplesPerSec, s.WorkerBusy = c.rate, c.busyFrac
	return s
}
