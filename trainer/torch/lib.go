// Package torch binds libpipetorch, the libtorch side of pipetrain: a frozen
// ResNet18 encoder, a DiT noise-prediction policy, DDPM loss and AdamW
// behind a small C ABI (pipetorch.h) whose calls map one-to-one onto the
// training stages.
//
// The library is loaded at run time with dlopen, so building this package
// never needs libtorch; the same binary runs against a CPU or a CUDA build
// of the shim. Build the shim with scripts/build-shim.sh.
package torch

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "binding.h"
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unsafe"
)

// ABIVersion is the pipetorch.h ABI this package speaks; Open refuses a
// library built from another version.
const ABIVersion = C.PT_ABI_VERSION

// ShimName is the file name of the built library.
const ShimName = "libpipetorch.so"

// errBufSize bounds error messages copied out of the library.
const errBufSize = 4096

// Lib is a loaded libpipetorch. A Lib stays loaded for the life of the
// process (unloading libtorch is not safe), so it has no Close.
type Lib struct {
	path string
	api  *C.pt_api
}

// Path is the file the library was loaded from.
func (l *Lib) Path() string { return l.path }

// Open loads the shim at path and checks its entry points and ABI version.
func Open(path string) (*Lib, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open torch shim %s: no such file; build it with scripts/build-shim.sh", path)
		}
		return nil, fmt.Errorf("open torch shim: %w", err)
	}
	if err := passiveOpenMP(); err != nil {
		return nil, fmt.Errorf("open torch shim %s: %w", path, err)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	errBuf := (*C.char)(C.calloc(errBufSize, 1))
	defer C.free(unsafe.Pointer(errBuf))
	h := C.pt_open(cpath, errBuf, errBufSize)
	if h == nil {
		return nil, fmt.Errorf("open torch shim %s: dlopen: %s (is libtorch installed and on the loader path?)", path, C.GoString(errBuf))
	}
	// On any failure below the handle is deliberately not closed: the
	// library may already have loaded libtorch, which does not unload.
	api := (*C.pt_api)(C.calloc(1, C.sizeof_pt_api))
	api.handle = h
	if err := resolve(api, h); err != nil {
		C.free(unsafe.Pointer(api))
		return nil, fmt.Errorf("open torch shim %s: %w; rebuild it with scripts/build-shim.sh", path, err)
	}
	if v := int(C.pt_call_abi_version(api)); v != ABIVersion {
		C.free(unsafe.Pointer(api))
		return nil, fmt.Errorf("open torch shim %s: ABI version %d, this program needs %d; rebuild it with scripts/build-shim.sh", path, v, ABIVersion)
	}
	return &Lib{path: path, api: api}, nil
}

// WaitPolicyEnv is the OpenMP setting of what libtorch's intra-op threads
// do between parallel regions: spin (ACTIVE) or sleep (PASSIVE).
const WaitPolicyEnv = "OMP_WAIT_POLICY"

// passiveOpenMP sets OMP_WAIT_POLICY=PASSIVE, unless the user set it,
// before libtorch's OpenMP runtime starts (it reads the environment once,
// when dlopen loads it; with cgo, os.Setenv reaches the C environment).
// Between parallel regions OpenMP's threads spin by default while they are
// no more than the cores; beside the Go runtime and the loader's
// goroutines that spinning takes the cores the step's serial parts need:
// the small preset with 2 intra-op threads on 2 cores ran 2.02 steps/s
// spinning and 3.09 sleeping (docs/training.md).
func passiveOpenMP() error {
	if _, ok := os.LookupEnv(WaitPolicyEnv); ok {
		return nil
	}
	if err := os.Setenv(WaitPolicyEnv, "PASSIVE"); err != nil {
		return fmt.Errorf("set %s: %w", WaitPolicyEnv, err)
	}
	return nil
}

// ResolveConfig returns cfg with the preset's defaults filled in, as the
// library would use it, without building a model. Device and precision
// stay as given ("auto" is resolved only by NewPolicy).
func (l *Lib) ResolveConfig(cfg Config) (Config, error) {
	js, err := configJSON(cfg)
	if err != nil {
		return Config{}, fmt.Errorf("torch: encode config: %w", err)
	}
	out, err := l.resolveJSON(string(js))
	if err != nil {
		return Config{}, err
	}
	var resolved Config
	if err := json.Unmarshal([]byte(out), &resolved); err != nil {
		return Config{}, fmt.Errorf("torch: resolved config: %w", err)
	}
	return resolved, nil
}

// resolveJSON passes a raw JSON config through pt_config_resolve.
func (l *Lib) resolveJSON(js string) (string, error) {
	cjs := C.CString(js)
	defer C.free(unsafe.Pointer(cjs))
	errBuf := (*C.char)(C.calloc(errBufSize, 1))
	defer C.free(unsafe.Pointer(errBuf))
	out, ok := callJSON(func(buf *C.char, capacity C.size_t, need *C.size_t) C.int {
		return C.pt_call_config_resolve(l.api, cjs, buf, capacity, need, errBuf, errBufSize)
	})
	if !ok {
		return "", fmt.Errorf("torch: %s", C.GoString(errBuf))
	}
	return string(out), nil
}

// callJSON runs a call that writes NUL-terminated JSON into a buffer,
// growing the buffer until the text fits. ok is false if the call failed
// for another reason.
func callJSON(call func(buf *C.char, capacity C.size_t, need *C.size_t) C.int) (out []byte, ok bool) {
	size := 4096
	for {
		buf := (*C.char)(C.malloc(C.size_t(size)))
		var need C.size_t
		rc := call(buf, C.size_t(size), &need)
		if rc == 0 {
			out = []byte(C.GoString(buf))
		}
		C.free(unsafe.Pointer(buf))
		if rc == 0 {
			return out, true
		}
		if int(need) <= size {
			return nil, false
		}
		size = int(need)
	}
}

// resolve fills api's function pointers with dlsym.
func resolve(api *C.pt_api, h unsafe.Pointer) error {
	slots := []struct {
		name string
		dst  *unsafe.Pointer
	}{
		{"pt_abi_version", (*unsafe.Pointer)(unsafe.Pointer(&api.abi_version))},
		{"pt_last_error", (*unsafe.Pointer)(unsafe.Pointer(&api.last_error))},
		{"pt_policy_create", (*unsafe.Pointer)(unsafe.Pointer(&api.create))},
		{"pt_config_resolve", (*unsafe.Pointer)(unsafe.Pointer(&api.config_resolve))},
		{"pt_policy_destroy", (*unsafe.Pointer)(unsafe.Pointer(&api.destroy))},
		{"pt_policy_info", (*unsafe.Pointer)(unsafe.Pointer(&api.info))},
		{"pt_policy_param_counts", (*unsafe.Pointer)(unsafe.Pointer(&api.param_counts))},
		{"pt_policy_begin_step", (*unsafe.Pointer)(unsafe.Pointer(&api.begin_step))},
		{"pt_policy_upload", (*unsafe.Pointer)(unsafe.Pointer(&api.upload))},
		{"pt_policy_forward", (*unsafe.Pointer)(unsafe.Pointer(&api.forward))},
		{"pt_policy_backward", (*unsafe.Pointer)(unsafe.Pointer(&api.backward))},
		{"pt_policy_optim_step", (*unsafe.Pointer)(unsafe.Pointer(&api.optim_step))},
		{"pt_policy_sync", (*unsafe.Pointer)(unsafe.Pointer(&api.sync))},
		{"pt_policy_poll_timings", (*unsafe.Pointer)(unsafe.Pointer(&api.poll_timings))},
		{"pt_policy_save", (*unsafe.Pointer)(unsafe.Pointer(&api.save))},
		{"pt_policy_load", (*unsafe.Pointer)(unsafe.Pointer(&api.load))},
		{"pt_policy_save_encoder", (*unsafe.Pointer)(unsafe.Pointer(&api.save_encoder))},
		{"pt_free", (*unsafe.Pointer)(unsafe.Pointer(&api.free))},
		{"pt_dist_create", (*unsafe.Pointer)(unsafe.Pointer(&api.dist_create))},
		{"pt_dist_destroy", (*unsafe.Pointer)(unsafe.Pointer(&api.dist_destroy))},
		{"pt_dist_info", (*unsafe.Pointer)(unsafe.Pointer(&api.dist_info))},
		{"pt_dist_barrier", (*unsafe.Pointer)(unsafe.Pointer(&api.dist_barrier))},
		{"pt_policy_join", (*unsafe.Pointer)(unsafe.Pointer(&api.join))},
		{"pt_policy_allreduce_grads", (*unsafe.Pointer)(unsafe.Pointer(&api.allreduce_grads))},
		{"pt_policy_checksum", (*unsafe.Pointer)(unsafe.Pointer(&api.checksum))},
	}
	for _, s := range slots {
		cname := C.CString(s.name)
		p := C.pt_sym(h, cname)
		C.free(unsafe.Pointer(cname))
		if p == nil {
			return fmt.Errorf("missing symbol %s (built from another version?)", s.name)
		}
		*s.dst = p
	}
	return nil
}

// FindShim locates libpipetorch.so: $PIPETOP_SHIM if set; else
// build/torch/libpipetorch.so in the working directory or any parent up to
// the repository root; else next to the executable (../lib/ and the same
// directory).
func FindShim() (string, error) {
	if p := os.Getenv("PIPETOP_SHIM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("PIPETOP_SHIM=%s: %w", p, err)
		}
		return p, nil
	}
	var tried []string
	try := func(p string) bool {
		tried = append(tried, p)
		st, err := os.Stat(p)
		return err == nil && !st.IsDir()
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			if p := filepath.Join(dir, "build", "torch", ShimName); try(p) {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if fileExists(filepath.Join(dir, "go.mod")) || parent == dir {
				break
			}
			dir = parent
		}
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir := filepath.Dir(exe)
		for _, p := range []string{filepath.Join(dir, "..", "lib", ShimName), filepath.Join(dir, ShimName)} {
			if try(p) {
				return filepath.Clean(p), nil
			}
		}
	}
	return "", fmt.Errorf("%s not found (tried %s); build it with scripts/build-shim.sh or set PIPETOP_SHIM", ShimName, strings.Join(tried, ", "))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
