package stage

// BatchTrip is what a PyTorch DataLoader's batches carry from its worker
// processes to the main process, counted there by the automatic
// instrumentation since the loader's first batch.
type BatchTrip struct {
	// Batches counts the batches received from the workers.
	Batches int64 `json:"batches"`
	// BytesPerBatch is the mean bytes of a batch: its tensors and arrays
	// (shared memory and pickled alike), str and bytes by length.
	BytesPerBatch int64 `json:"bytes_per_batch"`
	// TensorsPerBatch is the mean number of tensors and arrays in a batch
	// (each travels on its own: a shared-memory handle to rebuild).
	TensorsPerBatch int64 `json:"tensors_per_batch"`
	// ReceiveNs is the mean time to receive a batch: from the moment the
	// result queue's reader saw it waiting to the queue handing it over
	// (reading and rebuilding it); 0 when not measured.
	ReceiveNs int64 `json:"receive_ns"`
	// Tensors describes the latest batch's tensors and arrays, most bytes
	// first.
	Tensors []TripTensor `json:"tensors,omitempty"`
}

// TripTensor is one tensor or array of a batch, by its place in the batch.
type TripTensor struct {
	// Key is where it sits in the batch, as Python indexes it: "['image']",
	// "[0]", "['obs']['cam0']"; empty for a batch that is one tensor. A
	// long list, sampled rather than walked, ends in "[*]".
	Key string `json:"key"`
	// DType, Shape and Bytes describe it as the batch holds it (a long
	// list's Shape is its length).
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	Bytes int64  `json:"bytes"`
	// Estimated says Bytes were scaled from the first items of a long list.
	Estimated bool `json:"estimated,omitempty"`
	// Uint8Factor, when not 0, says these are floating-point images whose
	// values uint8 holds exactly: sending uint8 would cut their bytes by
	// this factor (4 for float32).
	Uint8Factor int `json:"uint8_factor,omitempty"`
	// Uint8Scale is 1 for values that are integers in 0..255, 255 for
	// multiples of 1/255 in [0, 1].
	Uint8Scale int `json:"uint8_scale,omitempty"`
}

// Uint8 lists the tensors that could be sent as uint8.
func (t *BatchTrip) Uint8() []TripTensor {
	var out []TripTensor
	for _, x := range t.Tensors {
		if x.Uint8Factor > 1 {
			out = append(out, x)
		}
	}
	return out
}

// Uint8Saved is the bytes a batch would carry fewer if every tensor that
// could be uint8 were sent as uint8.
func (t *BatchTrip) Uint8Saved() int64 {
	var saved int64
	for _, x := range t.Uint8() {
		saved += x.Bytes - x.Bytes/int64(x.Uint8Factor)
	}
	return saved
}
