package gpu

import (
	"testing"
	"time"
)

// BenchmarkSampleMock measures the sampler's own cost per Sample (helper
// goroutine, timer, value assembly, GPM bookkeeping) for one GPM device and
// one watched pid, over go-nvml's mock. The mock records every call, so
// allocs/op is an upper bound; on real hardware the NVML calls dominate.
func BenchmarkSampleMock(b *testing.B) {
	s := Open(newFakeLib(hopper()), Options{})
	s.SetPIDs(4242)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		if err := s.Sample(now); err != nil {
			b.Fatal(err)
		}
	}
}
