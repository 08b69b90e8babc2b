package torch

/*
#include <stdlib.h>
#include "binding.h"
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/pipetop/pipetop/metrics/stage"
)

// Config configures a policy. Zero values take the preset's default.
type Config struct {
	Preset         string  `json:"preset,omitempty"`     // "seed", "small" (default) or "tiny"
	Cams           int     `json:"cams,omitempty"`       // camera views per observation step
	H              int     `json:"height,omitempty"`     // image height in pixels
	W              int     `json:"width,omitempty"`      // image width in pixels
	NObs           int     `json:"n_obs,omitempty"`      // observation steps
	Horizon        int     `json:"horizon,omitempty"`    // predicted action steps
	StateDim       int     `json:"state_dim,omitempty"`  // proprioceptive state size
	ActionDim      int     `json:"action_dim,omitempty"` // action size
	EncoderWidth   int     `json:"encoder_width,omitempty"`
	DModel         int     `json:"d_model,omitempty"`
	Depth          int     `json:"depth,omitempty"`
	Heads          int     `json:"heads,omitempty"`
	MLPRatio       int     `json:"mlp_ratio,omitempty"`
	DiffusionSteps int     `json:"diffusion_steps,omitempty"`
	Device         string  `json:"device,omitempty"`    // "auto" (default), "cpu", "cuda", "cuda:N"
	Precision      string  `json:"precision,omitempty"` // "auto" (default), "fp32", "bf16"
	Threads        int     `json:"threads,omitempty"`   // libtorch intra-op threads; 0: half the cores
	Seed           int64   `json:"seed,omitempty"`
	LR             float64 `json:"lr,omitempty"`           // default 1e-4
	WeightDecay    float64 `json:"weight_decay,omitempty"` // default 1e-2; negative: none
	GradClip       float64 `json:"grad_clip,omitempty"`    // max grad norm, default 1; negative: off
	EncoderWeights string  `json:"encoder_weights,omitempty"`
}

// configJSON renders cfg for pt_policy_create, mapping the negative
// "off" values to zero.
func configJSON(cfg Config) ([]byte, error) {
	if cfg.WeightDecay < 0 || cfg.GradClip < 0 {
		m := map[string]any{}
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		if cfg.WeightDecay < 0 {
			m["weight_decay"] = 0
		}
		if cfg.GradClip < 0 {
			m["grad_clip"] = 0
		}
		return json.Marshal(m)
	}
	return json.Marshal(cfg)
}

// Info describes a created policy.
type Info struct {
	Device            string `json:"device"`              // e.g. "cpu", "cuda:0"
	Precision         string `json:"precision"`           // "fp32" or "bf16"
	EncoderRandomInit bool   `json:"encoder_random_init"` // no encoder weights file was given
	EncoderParams     int64  `json:"encoder_params"`
	PolicyParams      int64  `json:"policy_params"`
	TorchVersion      string `json:"torch_version"`
	CUDABuild         bool   `json:"cuda_build"` // the shim was built against a CUDA libtorch
	Threads           int    `json:"threads"`    // libtorch intra-op threads in effect
	Config            Config `json:"config"`     // the resolved configuration
}

// StageTiming is one GPU stage interval measured with CUDA events.
type StageTiming struct {
	Step  int64 // the step passed to BeginStep
	Stage int   // index in the policy's stage list (SetStageList) of h2d, forward, backward, comm or optim; -1 unknown
	Ns    int64 // GPU nanoseconds
}

// stageIndex maps PT_STAGE_* indices to indices in names, the stage list
// of the trainer's records (-1 for a stage names lacks).
func stageIndex(names []string) [5]int {
	return [...]int{
		slices.Index(names, stage.H2D), slices.Index(names, stage.Forward),
		slices.Index(names, stage.Backward), slices.Index(names, stage.Optim),
		slices.Index(names, stage.Comm),
	}
}

// ErrClosed is returned by methods of a closed Policy.
var ErrClosed = errors.New("torch: policy is closed")

// pollCap is the size of the C buffer PollGPUTimings drains through.
const pollCap = 64

// Policy is a model + optimizer living in libtorch. Its methods are the
// training stages and are safe to call from one goroutine at a time (a
// mutex serializes them).
type Policy struct {
	mu   sync.Mutex
	lib  *Lib
	h    *C.pt_policy
	err  *C.char      // C buffer for error messages
	poll *C.pt_timing // C buffer of pollCap timings
	out  *C.float     // C buffer for Sync's loss and grad norm (no Go escape)
	info Info
	idx  [5]int // PT_STAGE_* -> index in the records' stage list
}

// NewPolicy creates a policy; the error names the offending config key.
func (l *Lib) NewPolicy(cfg Config) (*Policy, error) {
	js, err := configJSON(cfg)
	if err != nil {
		return nil, fmt.Errorf("torch: encode config: %w", err)
	}
	ccfg := C.CString(string(js))
	defer C.free(unsafe.Pointer(ccfg))
	p := &Policy{
		lib:  l,
		err:  (*C.char)(C.calloc(errBufSize, 1)),
		poll: (*C.pt_timing)(C.calloc(pollCap, C.sizeof_pt_timing)),
		out:  (*C.float)(C.calloc(2, C.sizeof_float)),
		idx:  stageIndex(stage.Canonical),
	}
	if C.pt_call_create(l.api, ccfg, &p.h, p.err, errBufSize) != 0 {
		e := p.lastErr("create policy")
		p.free()
		return nil, e
	}
	if err := p.loadInfo(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Policy) lastErr(op string) error {
	return fmt.Errorf("torch: %s: %s", op, C.GoString(p.err))
}

func (p *Policy) free() {
	C.free(unsafe.Pointer(p.err))
	C.free(unsafe.Pointer(p.poll))
	C.free(unsafe.Pointer(p.out))
	p.err, p.poll, p.out = nil, nil, nil
}

func (p *Policy) loadInfo() error {
	out, ok := callJSON(func(buf *C.char, capacity C.size_t, need *C.size_t) C.int {
		return C.pt_call_info(p.lib.api, p.h, buf, capacity, need, p.err, errBufSize)
	})
	if !ok {
		return p.lastErr("policy info")
	}
	if err := json.Unmarshal(out, &p.info); err != nil {
		return fmt.Errorf("torch: policy info: %w", err)
	}
	return nil
}

// Info describes the policy: device, precision, encoder initialization,
// parameter counts, libtorch version and the resolved config.
func (p *Policy) Info() Info { return p.info }

// ParamCounts reports the parameter counts of the frozen encoder and of the
// trainable policy (observation projection + DiT). After Close it returns
// the counts recorded at creation.
func (p *Policy) ParamCounts() (encoder, policy int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return p.info.EncoderParams, p.info.PolicyParams
	}
	var e, q C.int64_t
	if C.pt_call_param_counts(p.lib.api, p.h, &e, &q, p.err, errBufSize) != 0 {
		return p.info.EncoderParams, p.info.PolicyParams
	}
	return int64(e), int64(q)
}

// BeginStep tags the GPU timings of the stages that follow with step.
func (p *Policy) BeginStep(step int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return ErrClosed
	}
	if C.pt_call_begin_step(p.lib.api, p.h, C.int64_t(step), p.err, errBufSize) != 0 {
		return p.lastErr("begin step")
	}
	return nil
}

// Upload copies one batch to the device. Layouts: images
// [batch][NObs][Cams][H][W][3], state [batch][NObs][StateDim], action
// [batch][Horizon][ActionDim]. The slices may be reused after it returns.
func (p *Policy) Upload(images []uint8, state, action []float32, batch int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return ErrClosed
	}
	var img *C.uint8_t
	var st, act *C.float
	if len(images) > 0 {
		img = (*C.uint8_t)(unsafe.Pointer(&images[0]))
	}
	if len(state) > 0 {
		st = (*C.float)(unsafe.Pointer(&state[0]))
	}
	if len(action) > 0 {
		act = (*C.float)(unsafe.Pointer(&action[0]))
	}
	if batch < 0 || batch > 1<<30 {
		return fmt.Errorf("torch: upload: batch %d out of range", batch)
	}
	rc := C.pt_call_upload(p.lib.api, p.h, img, C.size_t(len(images)), st, C.size_t(len(state)),
		act, C.size_t(len(action)), C.int32_t(batch), p.err, errBufSize)
	if rc != 0 {
		return p.lastErr("upload")
	}
	return nil
}

func (p *Policy) op(name string, fn C.pt_op_fn) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return ErrClosed
	}
	if C.pt_call_op(p.lib.api, fn, p.h, p.err, errBufSize) != 0 {
		return p.lastErr(name)
	}
	return nil
}

// Forward runs encoder, policy and DDPM loss on the last uploaded batch.
func (p *Policy) Forward() error { return p.op("forward", p.lib.api.forward) }

// Backward back-propagates the loss of the last Forward.
func (p *Policy) Backward() error { return p.op("backward", p.lib.api.backward) }

// OptimStep clips the gradient norm, takes an AdamW step and clears the
// gradients.
func (p *Policy) OptimStep() error { return p.op("optim step", p.lib.api.optim_step) }

// Sync waits for the device and returns the loss of the last Forward.
func (p *Policy) Sync() (loss float32, err error) {
	loss, _, err = p.SyncNorm()
	return loss, err
}

// SyncNorm is Sync that also returns the gradient norm before clipping of
// the last OptimStep (NaN if none followed the last Forward).
func (p *Policy) SyncNorm() (loss, gradNorm float32, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return 0, 0, ErrClosed
	}
	out := unsafe.Slice(p.out, 2)
	if C.pt_call_sync(p.lib.api, p.h, &out[0], &out[1], p.err, errBufSize) != 0 {
		return 0, 0, p.lastErr("sync")
	}
	return float32(out[0]), float32(out[1]), nil
}

// PollGPUTimings fills dst with finished GPU stage timings without
// blocking and returns how many it wrote. It always returns 0 on CPU.
func (p *Policy) PollGPUTimings(dst []StageTiming) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return 0
	}
	total := 0
	for total < len(dst) {
		want := min(len(dst)-total, pollCap)
		n := int(C.pt_call_poll(p.lib.api, p.h, p.poll, C.int32_t(want), p.err, errBufSize))
		if n <= 0 {
			break
		}
		src := unsafe.Slice(p.poll, n)
		for i := range src {
			dst[total+i] = StageTiming{Step: int64(src[i].step), Stage: p.stageIdx(int(src[i].stage)), Ns: int64(src[i].ns)}
		}
		total += n
		if n < want {
			break
		}
	}
	return total
}

// stageIdx is the stage-list index of PT_STAGE_* index i, -1 for an index
// this build does not know.
func (p *Policy) stageIdx(i int) int {
	if i >= 0 && i < len(p.idx) {
		return p.idx[i]
	}
	return -1
}

// SetStageList says which stage list the trainer's records use
// (stage.Canonical by default, stage.MultiRank on a multi-rank run), so
// that PollGPUTimings reports indices into it.
func (p *Policy) SetStageList(names []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idx = stageIndex(names)
}

// Save writes model, optimizer and noise-generator state plus extra to
// exactly path; the caller handles temp files, fsync and rename.
func (p *Policy) Save(path string, extra []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return ErrClosed
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var ex *C.uint8_t
	if len(extra) > 0 {
		ex = (*C.uint8_t)(unsafe.Pointer(&extra[0]))
	}
	if C.pt_call_save(p.lib.api, p.h, cpath, ex, C.size_t(len(extra)), p.err, errBufSize) != 0 {
		return p.lastErr("save checkpoint")
	}
	return nil
}

// Load restores a checkpoint written by Save for the same architecture and
// returns its extra bytes. A corrupt, truncated or mismatched file is
// refused and leaves the policy unchanged.
func (p *Policy) Load(path string) (extra []byte, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return nil, ErrClosed
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var ex *C.uint8_t
	var n C.size_t
	if C.pt_call_load(p.lib.api, p.h, cpath, &ex, &n, p.err, errBufSize) != 0 {
		return nil, p.lastErr("load checkpoint")
	}
	if ex == nil {
		return []byte{}, nil
	}
	defer C.pt_call_free(p.lib.api, unsafe.Pointer(ex))
	return C.GoBytes(unsafe.Pointer(ex), C.int(n)), nil
}

// SaveEncoder writes the frozen encoder's weights in a form that
// Config.EncoderWeights accepts.
func (p *Policy) SaveEncoder(path string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return ErrClosed
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if C.pt_call_save_encoder(p.lib.api, p.h, cpath, p.err, errBufSize) != 0 {
		return p.lastErr("save encoder")
	}
	return nil
}

// Close frees the policy; further calls return ErrClosed. It is safe to
// call more than once.
func (p *Policy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h != nil {
		C.pt_call_destroy(p.lib.api, p.h)
		p.h = nil
	}
	if p.err != nil {
		p.free()
	}
}
