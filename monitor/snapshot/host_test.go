package snapshot

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/gpumetric"
)

// TestDeviceJSON: a device is one flat object whose readings sit under
// their keys between its head and its throttle reasons, as --json and the
// recordings have always had it, and reads back the same.
func TestDeviceJSON(t *testing.T) {
	v := func(x float64) Reading { return Reading{Value: &x, Source: "NVML", State: "ok"} }
	d := Device{Index: 2, MIGIndex: -1, Name: "H100", UUID: "GPU-2", Throttle: []string{"power cap"}, TrainerMem: v(1 << 30)}
	d.Readings[gpumetric.SMActivity], d.Readings[gpumetric.SMClock] = v(63), v(1980)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	order := []string{`"index":2`, `"mig_index":-1`, `"uuid":"GPU-2"`, `"kernel_active":{"value":null,"state":""}`,
		`"sm_activity":{"value":63,"source":"NVML","state":"ok"}`, `"sm_clock":{"value":1980`, `"pcie_tx":`, `"throttle":["power cap"]`, `"trainer_mem":`}
	at := 0
	for _, want := range order {
		i := strings.Index(s[at:], want)
		if i < 0 {
			t.Fatalf("%s lacks %s after byte %d", s, want, at)
		}
		at += i
	}
	var back Device
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d) {
		t.Errorf("read back %+v, want %+v", back, d)
	}
	if err := json.Unmarshal([]byte(`{"index":1,"sm_activity":7}`), &back); err == nil {
		t.Error("a reading that is no object read")
	}
}

func FuzzDeviceJSON(f *testing.F) {
	f.Add([]byte(`{"index":0,"mig":false,"mig_index":-1,"name":"g","uuid":"u","sm_activity":{"value":1,"state":"ok"},"throttle":[],"trainer_mem":{"value":null,"state":"missing"}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Device
		if json.Unmarshal(b, &d) != nil {
			return
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("%s read but does not write: %v", b, err)
		}
		var again Device
		if err := json.Unmarshal(out, &again); err != nil || !reflect.DeepEqual(again, d) {
			t.Fatalf("%s: written %s reads back %+v (%v), want %+v", b, out, again, err, d)
		}
	})
}
