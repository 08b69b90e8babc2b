package export

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/pipetop/pipetop/export/scrapetest"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

var update = flag.Bool("update", false, "rewrite testdata/*.prom from the collector's output")

// fixtures are JSON snapshots (the --json format) in testdata, each with
// the exposition text it must give in testdata/NAME.prom.
var fixtures = []string{
	"connected",    // a trainer with GPU times and a counting loader; H200, A4500 and a MIG device
	"disconnected", // the trainer went away; first CPU sample; no GPU driver
	"python",       // a young Python loop: no samples, loss, loader or GPU times
	"monitor",      // no trainer at all
}

func load(t *testing.T, name string) *snapshot.Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("testdata/%s.json: %v", name, err)
	}
	s.Totals = fixtureTotals(s.Trainer)
	return &s
}

// fixtureTotals are the counts behind a fixture's trainer (the JSON
// snapshot does not carry them): for the connected trainer, three 100 ms
// steps with GPU times and one of 150 ms; for the Python loop two 2 ms
// steps without samples.
func fixtureTotals(t *snapshot.Trainer) *stage.Totals {
	if t == nil {
		return nil
	}
	tot := stage.NewTotals(t.Stages)
	add := func(samples int32, cpu, gpu []int64) {
		var wall int64
		for _, c := range cpu {
			wall += c
		}
		r := stage.RecordOf(0, 0, wall, samples, cpu, gpu)
		tot.Add(&r)
	}
	switch len(t.Stages) {
	case 4: // data_wait, h2d, forward, other
		for range 3 {
			add(64, []int64{70e6, 5e6, 20e6, 5e6}, []int64{-1, 4e6, 18e6, -1})
		}
		add(64, []int64{120e6, 5e6, 20e6, 5e6}, []int64{-1, 4e6, 18e6, -1})
	case 2: // forward, other (python)
		add(0, []int64{15e5, 5e5}, nil)
		add(0, []int64{15e5, 5e5}, nil)
	}
	return tot
}

// sourceNames are the names of the registered sources of the fixtures' time;
// their metrics read only the snapshot, so no sampler is behind them.
func sourceNames() []string { return []string{"cpu", "process", "gpu"} }

func collectorOf(t *testing.T, name string) *Collector {
	c := NewCollector(sourceNames())
	c.SetHost("node1")
	c.Update(load(t, name))
	return c
}

func TestExpositionGolden(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			c := collectorOf(t, name)
			path := filepath.Join("testdata", name+".prom")
			if *update {
				if err := os.WriteFile(path, format(t, gather(t, c)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := testutil.CollectAndCompare(c, f); err != nil {
				t.Errorf("%s (rerun with -update after checking the change): %v", path, err)
			}
		})
	}
}

// gather collects c through a pedantic registry, which also checks every
// metric against the described descriptors.
func gather(t *testing.T, c prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// format writes mfs in the text exposition format.
func format(t *testing.T, mfs []*dto.MetricFamily) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

type L = map[string]string

// TestReadings checks readings one by one: present ones carry their value
// and source, and a reading that is missing, not supported or failed has
// no series at all, while a real 0 keeps its series.
func TestReadings(t *testing.T) {
	absent := -1.0
	tests := []struct {
		fixture, metric string
		labels          L
		want            float64 // absent: no series
	}{
		{"connected", "pipetop_gpu_sm_activity_ratio", L{"uuid": "GPU-aaaa", "gpu": "0", "name": "NVIDIA H200", "source": "gpm"}, 0.63},
		{"connected", "pipetop_gpu_sm_occupancy_ratio", L{"uuid": "GPU-aaaa", "source": "gpm"}, 0.25},
		{"connected", "pipetop_gpu_kernel_active_ratio", L{"uuid": "GPU-aaaa", "source": "nvml_kernel_active"}, 1},
		{"connected", "pipetop_gpu_sm_clock_hertz", L{"uuid": "GPU-aaaa", "source": "nvml"}, 1.98e9},
		{"connected", "pipetop_gpu_trainer_memory_used_bytes", L{"uuid": "GPU-aaaa", "trainer": "demo", "pid": "4242"}, 17179869184},
		{"connected", "pipetop_gpu_sm_activity_ratio", L{"uuid": "GPU-bbbb"}, absent}, // no GPM before Hopper
		{"connected", "pipetop_gpu_kernel_active_ratio", L{"uuid": "GPU-bbbb"}, 0},    // an idle GPU: a real 0
		{"connected", "pipetop_gpu_power_watts", L{"uuid": "GPU-bbbb"}, absent},       // failed
		{"connected", "pipetop_gpu_trainer_memory_used_bytes", L{"uuid": "GPU-bbbb"}, absent},
		{"connected", "pipetop_gpu_memory_used_bytes", L{"uuid": "MIG-cccc", "gpu": "2", "mig": "1"}, 1073741824},
		{"connected", "pipetop_gpu_sm_activity_ratio", L{"uuid": "MIG-cccc"}, absent},   // first GPM sample
		{"connected", "pipetop_gpu_temperature_celsius", L{"uuid": "MIG-cccc"}, absent}, // parent only
		{"connected", "pipetop_host_cpu_busy_ratio", L{"cpu": "0", "source": "proc_stat"}, 1},
		{"connected", "pipetop_host_cpu_busy_ratio", L{"cpu": "2"}, absent}, // offline core
		{"connected", "pipetop_trainer_steps_total", L{"trainer": "demo", "run": "exp7", "rank": "0"}, 4},
		{"connected", "pipetop_trainer_samples_total", L{"trainer": "demo"}, 256},
		{"connected", "pipetop_trainer_stage_seconds_total", L{"stage": "data_wait", "clock": "cpu"}, 0.33},
		{"connected", "pipetop_trainer_stage_seconds_total", L{"stage": "forward", "clock": "gpu"}, 0.072},
		{"connected", "pipetop_trainer_stage_seconds_total", L{"stage": "data_wait", "clock": "gpu"}, absent},
		{"connected", "pipetop_trainer_info", L{"trainer": "demo", "pid": "4242", "world_size": "2", "host": "node1"}, 1},
		{"connected", "pipetop_trainer_last_step_time_seconds", L{"trainer": "demo", "rank": "0"}, 0.15},
		{"connected", "pipetop_trainer_stage_mean_seconds", nil, absent}, // window gauges are gone
		{"connected", "pipetop_verdict", L{"kind": "input-bound", "stage": "data_wait", "trainer": "demo", "rank": "0"}, 1},
		{"connected", "pipetop_verdict_also", L{"kind": "untimed", "stage": "other", "trainer": "demo", "rank": "0"}, 0.14},
		{"connected", "pipetop_verdict_also", L{"kind": "memory-creep", "stage": ""}, 0},
		{"disconnected", "pipetop_verdict_also", nil, absent},
		{"connected", "pipetop_loader_cache_hit_ratio", nil, 0}, // chunks were read: a real 0
		{"connected", "pipetop_loader_bytes_decoded_total", L{"trainer": "demo"}, 6500000},
		{"disconnected", "pipetop_trainer_connected", L{"trainer": "demo", "run": "", "rank": ""}, 0},
		{"disconnected", "pipetop_trainer_steps_total", nil, absent},
		{"disconnected", "pipetop_verdict", nil, absent},
		{"disconnected", "pipetop_loader_workers", nil, absent},
		{"disconnected", "pipetop_host_cpu_busy_ratio", nil, absent}, // rates need two samples
		{"disconnected", "pipetop_host_load15", nil, absent},         // failed
		{"disconnected", "pipetop_host_swap_used_bytes", L{"source": "proc_meminfo"}, 0},
		{"python", "pipetop_trainer_steps_total", L{"trainer": "my-run", "rank": ""}, 2},
		{"python", "pipetop_trainer_samples_total", nil, absent}, // the loop counts no samples
		{"python", "pipetop_trainer_stage_seconds_total", L{"clock": "gpu"}, absent},
		{"python", "pipetop_trainer_data_wait_seconds", nil, absent}, // no data_wait stage
		{"python", "pipetop_trainer_loss", nil, absent},
		{"python", "pipetop_trainer_start_time_seconds", nil, absent},
		{"python", "pipetop_verdict", L{"kind": "warming-up", "stage": ""}, 1},
		{"monitor", "pipetop_trainer_connected", nil, absent},
		{"monitor", "pipetop_host_cpu_busy_ratio", L{"cpu": "1"}, 0.75},
	}
	gathered := map[string][]*dto.MetricFamily{}
	for _, name := range fixtures {
		gathered[name] = gather(t, collectorOf(t, name))
	}
	for _, tt := range tests {
		got := scrapetest.Index(gathered[tt.fixture]).Series(tt.metric, tt.labels)
		switch {
		case tt.want == absent && len(got) > 0:
			t.Errorf("%s: %s%v = %v, want no series", tt.fixture, tt.metric, tt.labels, scrapetest.Value(got[0]))
		case tt.want == absent:
		case len(got) != 1:
			t.Errorf("%s: %s%v: %d series, want 1", tt.fixture, tt.metric, tt.labels, len(got))
		case scrapetest.Value(got[0]) != tt.want:
			t.Errorf("%s: %s%v = %v, want %v", tt.fixture, tt.metric, tt.labels, scrapetest.Value(got[0]), tt.want)
		}
	}
}

func TestNoSnapshotNoMetrics(t *testing.T) {
	if n := testutil.CollectAndCount(NewCollector(sourceNames())); n != 0 {
		t.Errorf("a Collector without a snapshot exported %d metrics", n)
	}
}

// TestLint runs Prometheus's own naming lint over every fixture's output.
func TestLint(t *testing.T) {
	for _, name := range fixtures {
		problems, err := promlint.NewWithMetricFamilies(gather(t, collectorOf(t, name))).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s: %s", name, p.Metric, p.Text)
		}
	}
}

func TestSourceLabel(t *testing.T) {
	tests := []struct{ in, want string }{
		{"GPM", "gpm"},
		{"NVML kernel-active", "nvml_kernel_active"},
		{"NVML compute processes", "nvml_compute_processes"},
		{"/proc/stat", "proc_stat"},
		{"/proc/PID/io", "proc_pid_io"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Label(tt.in); got != tt.want {
			t.Errorf("sourceLabel(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSamplerMetrics checks that each source's sampling is served with its
// duration and success.
func TestSamplerMetrics(t *testing.T) {
	s := load(t, "monitor")
	s.Samplers = []snapshot.SamplerStat{{Name: "cpu", Seconds: 0.002, OK: true}, {Name: "gpu", Seconds: 0.5, OK: false}}
	c := NewCollector(sourceNames())
	c.Update(s)
	want := `# HELP pipetop_sampler_success 1 when the source's last sampling worked as a whole, else 0.
# TYPE pipetop_sampler_success gauge
pipetop_sampler_success{sampler="cpu"} 1
pipetop_sampler_success{sampler="gpu"} 0
# HELP pipetop_sampler_duration_seconds How long the source's last sampling took.
# TYPE pipetop_sampler_duration_seconds gauge
pipetop_sampler_duration_seconds{sampler="cpu"} 0.002
pipetop_sampler_duration_seconds{sampler="gpu"} 0.5
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "pipetop_sampler_success", "pipetop_sampler_duration_seconds"); err != nil {
		t.Error(err)
	}
}
