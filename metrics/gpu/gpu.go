// Package gpu samples NVIDIA GPUs through NVML (github.com/NVIDIA/go-nvml):
// kernel-active utilisation, GPM SM activity/occupancy where the device
// supports it, memory, power, temperature, clocks, PCIe throughput, clock
// throttle reasons, MIG devices and per-process use for watched pids.
//
// Every number is a metrics.Value labelled with its NVML source, and a
// metric the device lacks reads NotSupported rather than zero. A machine
// without a driver or GPU is a normal case: Sample returns an error wrapping
// ErrUnavailable and Snapshot().Status holds one line saying why. NVML calls
// run on a helper goroutine bounded by Options.Timeout, so a hung driver
// costs one status line, not a frozen view.
package gpu

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/pipetop/pipetop/metrics"
)

// DefaultTimeout bounds the NVML work of one Sample.
const DefaultTimeout = 2 * time.Second

// Options configures a Sampler.
type Options struct {
	// Timeout bounds one Sample's NVML calls; 0 means DefaultTimeout.
	Timeout time.Duration
	// AllProcesses lists every compute and graphics process on every
	// device (Device.Running), not only the watched pids.
	AllProcesses bool
}

// Sampler reads all NVIDIA devices once per Sample. It implements
// metrics.Sampler. Sample must be called from one goroutine at a time;
// Snapshot may be called from any.
type Sampler struct {
	lib     nvml.Interface
	timeout time.Duration
	all     bool

	// Touched only by the collecting goroutine, of which at most one runs.
	inited  bool
	failed  string // permanent status (init failed), empty otherwise
	devices []*devState
	driver  string
	work    Snapshot

	inflight chan struct{} // closed when the running collection ends
	pids     []int         // guarded by mu, copied at each collection

	mu      sync.Mutex
	op      string // NVML call in progress, for the timeout message
	opDev   int
	snap    Snapshot
	lastErr error
}

var _ metrics.Sampler = (*Sampler)(nil)

// Open returns a Sampler over lib (nvml.New() in production, a mock in
// tests) and initialises NVML, once for the sampler's life, within
// Options.Timeout. It never fails: problems show in Snapshot().Status and
// in Sample's error.
func Open(lib nvml.Interface, opts Options) *Sampler {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	s := &Sampler{lib: lib, timeout: opts.Timeout, all: opts.AllProcesses}
	s.run(time.Time{}, false)
	return s
}

// Name implements metrics.Sampler.
func (s *Sampler) Name() string { return "gpu" }

// SetPIDs sets the host pids whose per-process GPU use is reported (the
// trainer's host pid, as NVML sees pids of the host namespace).
func (s *Sampler) SetPIDs(pids ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pids = append(s.pids[:0], pids...)
}

// Sample implements metrics.Sampler: it reads every device, or returns at
// once with the timeout status when a previous NVML call is still stuck.
func (s *Sampler) Sample(now time.Time) error {
	return s.run(now, true)
}

// Snapshot returns a deep copy of the latest reading.
func (s *Sampler) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap.clone()
}

// Close frees GPM samples and shuts NVML down. When an NVML call is stuck it
// leaves NVML alone and returns ErrTimeout.
func (s *Sampler) Close() error {
	if s.inflight != nil {
		select {
		case <-s.inflight:
		default:
			return fmt.Errorf("close NVML: %w", ErrTimeout)
		}
	}
	if !s.inited {
		return nil
	}
	for _, d := range s.devices {
		d.gpm.free()
	}
	s.inited = false
	if r := s.lib.Shutdown(); r != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %s", describe(r))
	}
	return nil
}

// run starts one collection on a helper goroutine and waits for it at most
// s.timeout. Only one collection runs at a time: while a timed-out one is
// still stuck in NVML, run returns the timeout error without starting more.
func (s *Sampler) run(now time.Time, sample bool) error {
	if s.inflight != nil {
		select {
		case <-s.inflight:
		default:
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.lastErr
		}
	}
	if s.failed != "" {
		// NVML never loaded: nothing can get stuck, so no helper
		// goroutine and timer (two wake-ups a refresh on a GPU-less box).
		s.collect(now, sample, nil)
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.lastErr
	}
	done := make(chan struct{})
	s.inflight = done
	s.mu.Lock()
	pids := append([]int(nil), s.pids...)
	s.mu.Unlock()
	go func() {
		defer close(done)
		s.collect(now, sample, pids)
	}()
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case <-done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.lastErr
	case <-timer.C:
		return s.timedOut(now)
	}
}

// timedOut publishes the status for a collection that exceeded the timeout.
func (s *Sampler) timedOut(now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	where := s.op
	if s.opDev >= 0 {
		where = fmt.Sprintf("%s on GPU %d", s.op, s.opDev)
	}
	s.snap.Time = now
	s.snap.Status = fmt.Sprintf("NVML did not answer within %v (%s); GPU readings paused", s.timeout, where)
	s.lastErr = fmt.Errorf("%s: %w", s.snap.Status, ErrTimeout)
	return s.lastErr
}

// enter records the NVML call about to be made, for the timeout message.
func (s *Sampler) enter(op string, dev int) {
	s.mu.Lock()
	s.op, s.opDev = op, dev
	s.mu.Unlock()
}

// collect runs on the helper goroutine: initialise once, then read devices.
func (s *Sampler) collect(now time.Time, sample bool, pids []int) {
	if !s.inited && s.failed == "" {
		s.initialise()
	}
	s.work.Time = now
	s.work.DriverVersion = s.driver
	s.work.Status = s.failed
	s.work.Devices = s.work.Devices[:0]
	var err error
	switch {
	case s.failed != "":
		err = fmt.Errorf("%s: %w", s.failed, ErrUnavailable)
	case sample:
		err = s.readDevices(now, pids)
	}
	s.publish(err)
}

// publish makes s.work the visible snapshot.
func (s *Sampler) publish(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap = s.work.clone()
	s.lastErr = err
}

// initialise runs nvmlInit and enumerates devices; a failure is permanent
// for this sampler (one init per run).
func (s *Sampler) initialise() {
	s.enter("nvmlInit", -1)
	if r := s.lib.Init(); r != nvml.SUCCESS {
		s.failed = initStatus(r)
		return
	}
	s.inited = true
	s.enter("nvmlSystemGetDriverVersion", -1)
	if v, r := s.lib.SystemGetDriverVersion(); r == nvml.SUCCESS {
		s.driver = v
	}
	s.enter("nvmlDeviceGetCount", -1)
	n, r := s.lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		s.failed = "cannot count GPUs: " + describe(r)
		return
	}
	if n == 0 {
		s.failed = "no NVIDIA GPU found"
		return
	}
	for i := range n {
		s.enter("nvmlDeviceGetHandleByIndex", i)
		h, r := s.lib.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			s.devices = append(s.devices, &devState{index: i, migIndex: -1, gi: -1, ci: -1,
				openErr: "cannot open: " + describe(r)})
			continue
		}
		d := s.openDevice(h, i)
		d.migs = s.openMIG(d)
		s.devices = append(s.devices, d)
		s.devices = append(s.devices, d.migs...)
	}
}

// readDevices reads every device into s.work and returns the status error.
func (s *Sampler) readDevices(now time.Time, pids []int) error {
	var first string
	failures := 0
	for _, d := range s.devices {
		dev := s.readDevice(d, now, pids)
		if dev.Err != "" {
			if failures == 0 {
				first = deviceLabel(dev) + ": " + dev.Err
			}
			failures++
		}
		s.work.Devices = append(s.work.Devices, dev)
	}
	if failures == 0 {
		return nil
	}
	if failures > 1 {
		first = fmt.Sprintf("%s (and %d more)", first, failures-1)
	}
	s.work.Status = first
	return errors.New(first)
}

// deviceLabel names a device in status lines: "GPU 0" or "GPU 0 MIG 1".
func deviceLabel(d Device) string {
	if d.MIG {
		return fmt.Sprintf("GPU %d MIG %d", d.Index, d.MIGIndex)
	}
	return fmt.Sprintf("GPU %d", d.Index)
}
