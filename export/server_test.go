package export

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/export/scrapetest"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// publisher is a trainer socket served in-process: steps of 10 ms of which
// data_wait takes 7 (input-bound), with GPU times for forward and backward,
// and loader statistics.
type publisher struct {
	srv  *ipc.Server
	stop chan struct{}
	done chan struct{}
}

var testStages = []string{stage.DataWait, stage.Forward, stage.Backward, stage.Other}

func startPublisher(t *testing.T, name string) *publisher {
	t.Helper()
	srv, err := ipc.Listen(name, ipc.Hello{Stages: testStages}, ipc.ServerOptions{Flush: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := &publisher{srv: srv, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	t.Cleanup(p.close)
	return p
}

func (p *publisher) run() {
	defer close(p.done)
	for i := int64(0); ; i++ {
		select {
		case <-p.stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
		r := stage.Record{Step: i, NumStages: len(testStages), Samples: 8, HasLoss: true, Loss: 0.25}
		r.ClearGPU()
		r.EndNs = time.Now().UnixNano()
		r.StartNs = r.EndNs - 10e6
		r.CPU[0], r.CPU[1], r.CPU[2], r.CPU[3] = 7e6, 1e6, 15e5, 5e5
		r.GPU[1], r.GPU[2] = 8e5, 12e5
		p.srv.Publish(&r)
		if i%50 == 0 {
			p.srv.PublishLoader(stage.LoaderStats{TimeNs: r.EndNs, Workers: 2, Batch: 8,
				SamplesPerSec: 800, WorkerBusy: 0.95, QueueDepth: 0, QueueCap: 4, ReadAmp: 5})
		}
	}
}

func (p *publisher) close() {
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	<-p.done
	p.srv.Close()
}

// TestServeScrape runs the exporter over the real feed, collector and CPU
// sampler, attached to a trainer socket, and scrapes it over HTTP; the
// trainer then goes away and comes back.
func TestServeScrape(t *testing.T) {
	t.Setenv(ipc.DirEnv, t.TempDir())
	p := startPublisher(t, "exporttest")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := monitor.Open(ctx, "", monitor.Options{NoGPU: true}) // the only live trainer, as pipetop export without a spec
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e := New(m.Collector, Options{Interval: 50 * time.Millisecond, Window: snapshot.Window{Label: "5s", Seconds: 5}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	id := L{"trainer": "exporttest"}
	verdict := L{"trainer": "exporttest", "kind": string(stage.InputBound), "stage": stage.DataWait}
	mfs := scrapetest.Until(t, base+"/metrics", "input-bound verdict", func(m scrapetest.Families) bool {
		return m.Is("pipetop_verdict", verdict, 1) && len(m.Series("pipetop_loader_samples_per_second", id)) == 1
	})
	for _, st := range testStages {
		l := L{"trainer": "exporttest", "stage": st}
		for _, name := range []string{"pipetop_trainer_stage_mean_seconds", "pipetop_trainer_stage_p50_seconds",
			"pipetop_trainer_stage_p99_seconds", "pipetop_trainer_stage_share_ratio"} {
			if len(mfs.Series(name, l)) != 1 {
				t.Errorf("%s%v missing", name, l)
			}
		}
	}
	checks := []struct {
		name   string
		labels L
		lo, hi float64
	}{
		{"pipetop_trainer_stage_mean_seconds", L{"stage": stage.DataWait}, 0.007, 0.007},
		{"pipetop_trainer_stage_share_ratio", L{"stage": stage.DataWait}, 0.7, 0.7},
		{"pipetop_trainer_stage_gpu_mean_seconds", L{"stage": stage.Backward, "source": "cuda_events"}, 0.0012, 0.0012},
		{"pipetop_trainer_gpu_busy_ratio", L{"source": "cuda_events"}, 0.2, 0.2},
		{"pipetop_trainer_step_wall_mean_seconds", nil, 0.01, 0.01},
		{"pipetop_trainer_steps_per_second", nil, 1, 1000},
		{"pipetop_trainer_loss", nil, 0.25, 0.25},
		{"pipetop_trainer_connected", nil, 1, 1},
		{"pipetop_loader_read_amplification_ratio", nil, 5, 5},
		{"pipetop_host_cpu_busy_ratio", L{"cpu": "0", "source": "proc_stat"}, 0, 1},
		{"pipetop_host_memory_total_bytes", L{"source": "proc_meminfo"}, 1, 1 << 50},
	}
	for _, c := range checks {
		s := mfs.Series(c.name, c.labels)
		if len(s) != 1 {
			t.Errorf("%s%v: %d series, want 1", c.name, c.labels, len(s))
			continue
		}
		if v := scrapetest.Value(s[0]); v < c.lo-1e-9 || v > c.hi+1e-9 {
			t.Errorf("%s%v = %v, want %v..%v", c.name, c.labels, v, c.lo, c.hi)
		}
	}
	for name := range mfs {
		if strings.HasPrefix(name, "pipetop_gpu_") {
			t.Errorf("%s exported without a GPU source", name)
		}
	}
	// The synthetic loader counts no bytes: no made-up zero counters.
	if _, ok := mfs["pipetop_loader_bytes_total"]; ok {
		t.Error("pipetop_loader_bytes_total exported for a loader that counts no bytes")
	}

	checkIndex(t, base)

	// The trainer goes away: connected 0, its window withdrawn.
	p.close()
	scrapetest.Until(t, base+"/metrics", "connected 0", func(m scrapetest.Families) bool {
		return m.Is("pipetop_trainer_connected", id, 0) && m.Series("pipetop_trainer_stage_mean_seconds", nil) == nil &&
			m.Series("pipetop_verdict", nil) == nil
	})
	// It restarts under the same name: the exporter follows.
	startPublisher(t, "exporttest")
	scrapetest.Until(t, base+"/metrics", "reconnected", func(m scrapetest.Families) bool {
		return m.Is("pipetop_trainer_connected", id, 1) && m.Is("pipetop_verdict", verdict, 1)
	})

	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}

func checkIndex(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `href="/metrics"`) {
		t.Errorf("GET /: %s %q, want a page linking to /metrics", resp.Status, b)
	}
	resp, err = http.Get(base + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %s, want 404", resp.Status)
	}
}
