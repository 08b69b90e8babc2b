package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

var (
	loaderWorkersDesc = trainerDesc("pipetop_loader_workers",
		"Decode workers of the data loader (0: decoding inline).")
	loaderBusyDesc = trainerDesc("pipetop_loader_worker_busy_ratio",
		"Mean share of time the loader's workers spent working.")
	loaderQueueDesc = trainerDesc("pipetop_loader_queue_batches",
		"Batches ready in the loader's queue.")
	loaderQueueCapDesc = trainerDesc("pipetop_loader_queue_capacity_batches",
		"Capacity of the loader's ready-batch queue.")
	loaderCacheDesc = trainerDesc("pipetop_loader_cache_hit_ratio",
		"Hit rate of the loader's decoded-chunk cache; absent until chunks were read or the loader reports hits.")
	loaderReadDesc = trainerDesc("pipetop_loader_bytes_read_total",
		"Compressed bytes the loader read from storage.")
	loaderDecodedDesc = trainerDesc("pipetop_loader_bytes_decoded_total",
		"Bytes the loader decompressed; over pipetop_loader_bytes_used_total it is the read amplification.")
	loaderUsedDesc = trainerDesc("pipetop_loader_bytes_used_total",
		"Bytes the loader copied into batches.")
	loaderSecondsDesc = trainerDesc("pipetop_loader_worker_seconds_total",
		"Worker time spent per loader phase.", "phase")
	loaderErrorsDesc = trainerDesc("pipetop_loader_errors_total",
		"Failed reads or decodes.")
	loaderBatchBytesDesc = trainerDesc("pipetop_loader_batch_bytes",
		"Mean bytes a batch carries from the DataLoader workers to the main process.")
	loaderBatchReceiveDesc = trainerDesc("pipetop_loader_batch_receive_seconds",
		"Mean time the main process takes to receive a batch from the DataLoader workers.")
	loaderBatchUint8Desc = trainerDesc("pipetop_loader_batch_uint8_factor",
		"Factor by which float images that could be uint8 multiply their bytes in a batch (4 for float32); 0 when none is named.")
)

// loader sends the trainer's latest loader statistics. The protocol has no
// "unknown" marker, so a zero that can only mean "not counted" is left
// out: a cache hit rate before any read and the cumulative counters of a
// loader that counts no bytes. The loader's own rate and read
// amplification are not served: rate() over samples_total and the byte
// counters gives both over any window.
func (e Emitter) loader(l *stage.LoaderStats, id []string) {
	e.Gauge(loaderWorkersDesc, float64(l.Workers), id...)
	e.Gauge(loaderBusyDesc, l.WorkerBusy, id...)
	e.Gauge(loaderQueueDesc, float64(l.QueueDepth), id...)
	e.Gauge(loaderQueueCapDesc, float64(l.QueueCap), id...)
	if t := l.Trip; t != nil && t.Batches > 0 {
		e.Gauge(loaderBatchBytesDesc, float64(t.BytesPerBatch), id...)
		e.Gauge(loaderBatchReceiveDesc, Seconds(float64(t.ReceiveNs)), id...)
		e.Gauge(loaderBatchUint8Desc, float64(verdict.Uint8Factor(t)), id...)
	}
	if l.CacheHitRate > 0 || l.BytesRead > 0 {
		e.Gauge(loaderCacheDesc, l.CacheHitRate, id...)
	}
	counts := l.BytesRead > 0 || l.BytesDecoded > 0 || l.BytesUsed > 0
	if counts || l.Errors > 0 {
		e.Counter(loaderErrorsDesc, float64(l.Errors), id...)
	}
	if !counts {
		return
	}
	for _, c := range []struct {
		desc  *prometheus.Desc
		label string
		v     float64
	}{
		{loaderReadDesc, "", float64(l.BytesRead)},
		{loaderDecodedDesc, "", float64(l.BytesDecoded)},
		{loaderUsedDesc, "", float64(l.BytesUsed)},
		{loaderSecondsDesc, "read", Seconds(float64(l.ReadNs))},
		{loaderSecondsDesc, "decode", Seconds(float64(l.DecodeNs))},
		{loaderSecondsDesc, "collate", Seconds(float64(l.CollateNs))},
	} {
		labels := id
		if c.label != "" {
			labels = append(id[:len(id):len(id)], c.label)
		}
		e.Counter(c.desc, c.v, labels...)
	}
}
