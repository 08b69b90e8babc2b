package stage

// LoaderStats is a snapshot of the data loader's own work. The loader's
// phases (read, decode, collate) run in parallel workers, off the training
// thread's critical path, so they are reported here rather than as stages.
type LoaderStats struct {
	// TimeNs is when the snapshot was taken (Unix nanoseconds).
	TimeNs int64 `json:"t"`
	// Dataset is the path of the dataset the loader reads, when known.
	Dataset string `json:"dataset,omitempty"`
	// Workers is the number of decode workers (0 means inline decoding).
	Workers int `json:"workers"`
	// Batch is the batch size the loader assembles.
	Batch int `json:"batch"`
	// SamplesPerSec is the rate delivered to the loop over the last interval.
	SamplesPerSec float64 `json:"samples_per_sec"`
	// WorkerBusy is the mean fraction of time (0..1) workers spent working.
	WorkerBusy float64 `json:"worker_busy"`
	// QueueDepth is the number of ready batches; QueueCap its capacity.
	QueueDepth int `json:"queue_depth"`
	// QueueCap is the capacity of the ready-batch queue.
	QueueCap int `json:"queue_cap"`
	// CacheHitRate is the decoded-chunk cache hit rate (0..1).
	CacheHitRate float64 `json:"cache_hit_rate"`
	// ReadAmp is bytes decompressed divided by bytes used.
	ReadAmp float64 `json:"read_amp"`
	// BytesRead is the cumulative number of compressed bytes read.
	BytesRead int64 `json:"bytes_read"`
	// BytesDecoded is the cumulative number of bytes decompressed.
	BytesDecoded int64 `json:"bytes_decoded"`
	// BytesUsed is the cumulative number of bytes copied into batches.
	BytesUsed int64 `json:"bytes_used"`
	// ReadNs is cumulative worker time spent reading chunk files.
	ReadNs int64 `json:"read_ns"`
	// DecodeNs is cumulative worker time spent decompressing.
	DecodeNs int64 `json:"decode_ns"`
	// CollateNs is cumulative worker time spent copying into batches.
	CollateNs int64 `json:"collate_ns"`
	// Errors counts failed reads or decodes.
	Errors int64 `json:"errors"`

	// The fields below come from a Python torch DataLoader (Source "torch"),
	// measured by pipetop_publish.auto; they are zero for pipetrain's loader.

	// Source names the loader: "" for pipetrain's, "torch" for a PyTorch DataLoader.
	Source string `json:"source,omitempty"`
	// BatchesPerSec is the rate of batches delivered to the loop.
	BatchesPerSec float64 `json:"batches_per_sec,omitempty"`
	// WorkerBusyEach is each worker's busy fraction (0..1), measured inside it.
	WorkerBusyEach []float64 `json:"worker_busy_each,omitempty"`
	// Prefetch is the DataLoader's prefetch_factor (batches queued per worker).
	Prefetch int `json:"prefetch_factor,omitempty"`
	// PinMemory is the DataLoader's pin_memory setting.
	PinMemory bool `json:"pin_memory,omitempty"`
	// Cores is the number of CPUs of the machine the loader runs on.
	Cores int `json:"cores,omitempty"`
	// Zarr lists the Zarr arrays the Python loader read, most bytes
	// decoded first; BytesRead, BytesDecoded, BytesUsed, DecodeNs and
	// ReadAmp then sum them.
	Zarr []ZarrArray `json:"zarr,omitempty"`
	// HDF5 lists the HDF5 datasets the Python loader read through h5py,
	// most bytes decoded first; they are in the sums above with Zarr's
	// (BytesRead and DecodeNs add nothing for them).
	HDF5 []HDF5Dataset `json:"hdf5,omitempty"`
	// Trip is what the DataLoader's batches carry from its workers to the
	// main process; nil without workers.
	Trip *BatchTrip `json:"batch_trip,omitempty"`
	// Video lists the video streams the Python loader decoded (PyAV),
	// most frames decoded first; the sums above count their bytes too.
	Video []VideoStream `json:"video,omitempty"`
	// CountedShare is the share of the time (0..1) the HDF5 and video
	// reads were counted in, when they were cheap enough to be counted in
	// shares of the time; their counts and times are then scaled to the
	// whole time (ratios are the counted reads'). 0 when counted in full.
	CountedShare float64 `json:"counted_share,omitempty"`
	// Length is the DataLoader's length, len(loader): the batches of one
	// pass over the data (an epoch); 0 when unknown.
	Length int `json:"length,omitempty"`
	// PersistentWorkers is the DataLoader's persistent_workers setting.
	PersistentWorkers bool `json:"persistent_workers,omitempty"`
	// WorkerStarts counts the worker processes the DataLoader started so
	// far: its workers times the iterators that started them (one per
	// epoch without persistent workers).
	WorkerStarts int `json:"worker_starts,omitempty"`
	// WorkerStartNs is what the newest start of the workers cost: from
	// the creation of the iterator that started them to its first batch.
	WorkerStartNs int64 `json:"worker_start_ns,omitempty"`
	// Site is where the user's code made the DataLoader (FILE:LINE, the
	// file's base name); empty when unknown.
	Site string `json:"site,omitempty"`
}
