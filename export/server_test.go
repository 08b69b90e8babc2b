package export

import (
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/export/scrapetest"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/sources"
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
	m, err := monitor.Open(ctx, "", monitor.Options{Sources: sources.Registered(true)}) // the only live trainer, as pipetop export without a spec
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e := New(m.Snapshotter, Options{Interval: 50 * time.Millisecond, Window: snapshot.Window{Label: "5s", Seconds: 5}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	id := L{"trainer": "exporttest"}
	verdictLabels := L{"trainer": "exporttest", "kind": string(verdict.InputBound), "stage": stage.DataWait}
	mfs := scrapetest.Until(t, base+"/metrics", "input-bound verdict and 50 steps", func(m scrapetest.Families) bool {
		v, _ := m.Value("pipetop_trainer_steps_total", id)
		return m.Is("pipetop_verdict", verdictLabels, 1) && v >= 50 && m.Has("pipetop_loader_worker_busy_ratio", id)
	})
	// One scrape reads one copy of the totals: per-step figures are exact.
	steps, _ := mfs.Value("pipetop_trainer_steps_total", id)
	perStep := []struct {
		name   string
		labels L
		want   float64
	}{
		{"pipetop_trainer_stage_seconds_total", L{"stage": stage.DataWait, "clock": "cpu"}, 0.007},
		{"pipetop_trainer_stage_seconds_total", L{"stage": stage.Other, "clock": "cpu"}, 0.0005},
		{"pipetop_trainer_stage_seconds_total", L{"stage": stage.Backward, "clock": "gpu"}, 0.0012},
		{"pipetop_trainer_samples_total", nil, 8},
	}
	for _, c := range perStep {
		v, ok := mfs.Value(c.name, c.labels)
		if !ok || math.Abs(v/steps-c.want) > 1e-9 {
			t.Errorf("%s%v = %v over %v steps, want %v per step", c.name, c.labels, v, steps, c.want)
		}
	}
	if mfs.Has("pipetop_trainer_stage_seconds_total", L{"stage": stage.DataWait, "clock": "gpu"}) {
		t.Error("GPU seconds for data_wait, which has no GPU times")
	}
	checkHistogram(t, mfs, "pipetop_trainer_step_wall_seconds", steps, 0.01)
	checkHistogram(t, mfs, "pipetop_trainer_data_wait_seconds", steps, 0.007)
	checks := []struct {
		name   string
		labels L
		lo, hi float64
	}{
		{"pipetop_trainer_loss", nil, 0.25, 0.25},
		{"pipetop_trainer_connected", nil, 1, 1},
		{"pipetop_trainer_info", L{"pid": strconv.Itoa(os.Getpid()), "world_size": ""}, 1, 1},
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
	if _, ok := mfs["pipetop_loader_bytes_decoded_total"]; ok {
		t.Error("pipetop_loader_bytes_decoded_total exported for a loader that counts no bytes")
	}

	checkIndex(t, base)

	// The trainer goes away: connected 0, its counters withdrawn.
	p.close()
	scrapetest.Until(t, base+"/metrics", "connected 0", func(m scrapetest.Families) bool {
		return m.Is("pipetop_trainer_connected", id, 0) && m.Series("pipetop_trainer_steps_total", nil) == nil &&
			m.Series("pipetop_verdict", nil) == nil
	})
	before := steps
	// A server under the same name comes back in the same process (same
	// pid and start time): the exporter follows and the counters go on
	// from where they were, as for a reconnection.
	startPublisher(t, "exporttest")
	scrapetest.Until(t, base+"/metrics", "reconnected, counting on", func(m scrapetest.Families) bool {
		v, _ := m.Value("pipetop_trainer_steps_total", id)
		return m.Is("pipetop_trainer_connected", id, 1) && m.Is("pipetop_verdict", verdictLabels, 1) && v > before+10
	})

	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}

// checkHistogram checks a histogram of steps observations of each the same
// value v: count, sum, and the classic bucket that holds v (bounds are
// inclusive) is the first to count them all.
func checkHistogram(t *testing.T, mfs scrapetest.Families, name string, steps, v float64) {
	t.Helper()
	s := mfs.Series(name, nil)
	if len(s) != 1 {
		t.Fatalf("%s: %d series, want 1", name, len(s))
	}
	h := s[0].GetHistogram()
	if float64(h.GetSampleCount()) != steps || math.Abs(h.GetSampleSum()-v*steps) > 1e-6 {
		t.Errorf("%s: count %d sum %v, want %v and %v", name, h.GetSampleCount(), h.GetSampleSum(), steps, v*steps)
	}
	for _, b := range h.GetBucket() {
		want := uint64(0)
		if b.GetUpperBound() >= v-1e-12 {
			want = h.GetSampleCount()
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("%s{le=%v} = %d, want %d", name, b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
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
