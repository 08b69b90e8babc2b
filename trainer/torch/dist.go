package torch

/*
#include <stdlib.h>
#include "binding.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// DistOptions configures a process group (pt_dist_options).
type DistOptions struct {
	Backend     string        // "gloo", "nccl" or "" (auto: nccl with a CUDA device, else gloo)
	MasterAddr  string        // host of rank 0's TCPStore
	MasterPort  int           // its port
	Rank        int           // this rank
	WorldSize   int           // number of ranks
	DeviceIndex int           // this rank's CUDA device for NCCL; -1: CPU
	Timeout     time.Duration // rendezvous and collective timeout; 0: 5 minutes
	BucketBytes int64         // gradient bucket size; 0: 25 MiB
}

// DistInfo describes a joined process group.
type DistInfo struct {
	Backend     string `json:"backend"`
	Rank        int    `json:"rank"`
	WorldSize   int    `json:"world_size"`
	TimeoutMs   int64  `json:"timeout_ms"`
	BucketBytes int64  `json:"bucket_bytes"`
}

// Dist is this process's membership of a c10d process group (Gloo on CPU,
// NCCL on CUDA) with a TCPStore rendezvous.
type Dist struct {
	mu   sync.Mutex
	lib  *Lib
	h    *C.pt_dist
	err  *C.char
	info DistInfo
}

// NewDist joins the process group; it blocks until every rank has joined
// or the timeout passes (the error then names the missing ranks).
func (l *Lib) NewDist(o DistOptions) (*Dist, error) {
	backend := C.CString(o.Backend)
	defer C.free(unsafe.Pointer(backend))
	addr := C.CString(o.MasterAddr)
	defer C.free(unsafe.Pointer(addr))
	copts := (*C.pt_dist_options)(C.calloc(1, C.sizeof_pt_dist_options))
	defer C.free(unsafe.Pointer(copts))
	copts.backend, copts.master_addr = backend, addr
	copts.master_port = C.int32_t(o.MasterPort)
	copts.rank, copts.world_size = C.int32_t(o.Rank), C.int32_t(o.WorldSize)
	copts.device_index = C.int32_t(o.DeviceIndex)
	copts.timeout_ms = C.int64_t(o.Timeout.Milliseconds())
	copts.bucket_bytes = C.int64_t(o.BucketBytes)
	d := &Dist{lib: l, err: (*C.char)(C.calloc(errBufSize, 1))}
	if C.pt_call_dist_create(l.api, copts, &d.h, d.err, errBufSize) != 0 {
		e := fmt.Errorf("torch: join process group: %s", C.GoString(d.err))
		C.free(unsafe.Pointer(d.err))
		return nil, e
	}
	out, ok := callJSON(func(buf *C.char, capacity C.size_t, need *C.size_t) C.int {
		return C.pt_call_dist_info(l.api, d.h, buf, capacity, need, d.err, errBufSize)
	})
	if !ok {
		err := fmt.Errorf("torch: process group info: %s", C.GoString(d.err))
		d.Close()
		return nil, err
	}
	if err := json.Unmarshal(out, &d.info); err != nil {
		d.Close()
		return nil, fmt.Errorf("torch: process group info: %w", err)
	}
	return d, nil
}

// Info describes the group: backend, rank, world size, timeout, buckets.
func (d *Dist) Info() DistInfo { return d.info }

// Barrier waits until every rank calls it, or fails after the timeout.
func (d *Dist) Barrier() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.h == nil {
		return ErrClosed
	}
	if C.pt_call_dist_barrier(d.lib.api, d.h, d.err, errBufSize) != 0 {
		return fmt.Errorf("torch: barrier: %s", C.GoString(d.err))
	}
	return nil
}

// Close leaves the group. It is safe to call more than once.
func (d *Dist) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.h != nil {
		C.pt_call_dist_destroy(d.lib.api, d.h)
		d.h = nil
	}
	if d.err != nil {
		C.free(unsafe.Pointer(d.err))
		d.err = nil
	}
}

// Join makes p a replica of the group: parameters and buffers become rank
// 0's, and ranks other than 0 get their own noise stream derived from
// (seed, rank, step).
func (p *Policy) Join(d *Dist, step int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil || d.h == nil {
		return ErrClosed
	}
	if C.pt_call_join(p.lib.api, p.h, d.h, C.int64_t(step), p.err, errBufSize) != 0 {
		return p.lastErr("join")
	}
	return nil
}

// AllReduceGrads averages the gradients over the ranks (the comm stage).
// vote is this rank's wish to stop; votes is how many ranks voted so, the
// same number on every rank.
func (p *Policy) AllReduceGrads(d *Dist, vote bool) (votes int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil || d.h == nil {
		return 0, ErrClosed
	}
	var v C.int32_t
	if vote {
		v = 1
	}
	out := (*C.int32_t)(unsafe.Pointer(p.out)) // p.out has room for two floats
	if C.pt_call_allreduce_grads(p.lib.api, p.h, d.h, v, out, p.err, errBufSize) != 0 {
		return 0, fmt.Errorf("torch: %s", C.GoString(p.err))
	}
	return int(*out), nil
}

// Checksum hashes the bytes of every trainable parameter: replicas that
// are in step have equal checksums.
func (p *Policy) Checksum() (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		return 0, ErrClosed
	}
	sum := (*C.uint64_t)(C.malloc(C.sizeof_uint64_t))
	defer C.free(unsafe.Pointer(sum))
	if C.pt_call_checksum(p.lib.api, p.h, sum, p.err, errBufSize) != 0 {
		return 0, p.lastErr("checksum")
	}
	return uint64(*sum), nil
}
