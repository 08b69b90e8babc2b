package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipetop/pipetop/export/scrapetest"
	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// The real-Prometheus test: two synthetic publishers (examples/synthetic,
// ranks 0 and 1 of run "it", rank 1 planted slow with a wide step-time
// spread), one exporter each (as on two hosts), and two Prometheus servers
// scraping both every second: one reading the classic buckets (and
// evaluating rules.yml), one with native histograms enabled. Rates and
// quantiles are checked against what a third viewer of each publisher saw.
//
// Windows are 10 s instead of the docs' 1m so the test stays short: at a
// 1 s scrape interval that is ten samples per window, plenty for rate().
const (
	promScrape = time.Second
	promWindow = 10 * time.Second
)

type rankSetup struct {
	name, rank, rate, stages, jitter string
}

var ranks = []rankSetup{
	{"syn0", "0", "200", "data_wait=2ms,forward=3ms", "0.1"},
	{"syn1", "1", "100", "data_wait=12ms,forward=3ms", "0.6"}, // the straggler
}

func TestRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the test with a real Prometheus server")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (Debian package prometheus, see scripts/install-deps.sh): skipping the test with a real Prometheus server")
	}
	bin := testkit.BinDir(t)
	t.Setenv(ipc.DirEnv, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var targets []string
	truth := make([]*stepLog, len(ranks))
	pubs := make([]*exec.Cmd, len(ranks))
	for i, r := range ranks {
		pubs[i] = startRank(t, bin, r)
		truth[i] = watchSteps(ctx, t, r.name)
		targets = append(targets, serveExporter(ctx, t, r.name))
	}
	rules, err := filepath.Abs(filepath.Join("prometheus", "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	classic := startPrometheus(ctx, t, promBin, targets, rules)
	native := startPrometheus(ctx, t, promBin, targets, "", "--enable-feature=native-histograms")

	// Prometheus applies its targets a few seconds after it starts: wait
	// for the first samples, then for a whole window of them.
	for _, p := range []*promServer{classic, native} {
		p.await(t, `count(pipetop_trainer_steps_total) == 2`)
	}
	time.Sleep(promWindow + promScrape)
	at := time.Now().Add(-promScrape / 2) // the scrapes before it are in
	for i, r := range ranks {
		want := truth[i].rate(at.Add(-promWindow), at)
		got := classic.scalar(t, fmt.Sprintf(`rate(pipetop_trainer_steps_total{rank=%q}[10s])`, r.rank), at)
		if math.Abs(got/want-1) > 0.05 {
			t.Errorf("rank %s: rate(steps_total[10s]) = %.2f/s, the publisher's real rate %.2f/s: off by more than 5 %%", r.rank, got, want)
		}
		t.Logf("rank %s: rate %.2f/s, real %.2f/s", r.rank, got, want)
	}

	// The planted p99: rank 1's wall times spread from 8 to 23 ms.
	p99 := truth[1].quantile(0.99, at.Add(-promWindow), at)
	q := `histogram_quantile(0.99, sum by (le) (rate(pipetop_trainer_step_wall_seconds_bucket{rank="1"}[10s])))`
	checkBucket(t, "classic", classic.scalar(t, q, at), p99)
	q = `histogram_quantile(0.99, sum(rate(pipetop_trainer_step_wall_seconds{rank="1"}[10s])))`
	got := native.scalar(t, q, at)
	checkBucket(t, "native", got, p99)
	// Native buckets are 9 % wide: the estimate is in the planted p99's
	// native bucket or a neighbour.
	if gi, wi := stage.NativeIndex(got), stage.NativeIndex(p99.Seconds()); gi < wi-1 || gi > wi+1 {
		t.Errorf("native histogram_quantile(0.99) = %v s in native bucket %d, the planted p99 %v in %d", got, gi, p99, wi)
	}

	// The straggler rule names rank 1.
	res := classic.query(t, `run:pipetop_straggler_rank:top1m{run="it"}`, time.Now())
	if len(res) != 1 || res[0].Metric["rank"] != "1" {
		t.Errorf("run:pipetop_straggler_rank:top1m = %v, want rank 1 alone", res)
	} else {
		t.Logf("straggler: rank %s, gap %s", res[0].Metric["rank"], res[0].Value[1])
	}

	// Every query of the Grafana dashboard works; all but the GPU ones
	// (the synthetic ranks publish no GPU times) have data.
	for _, q := range dashboardQueries(t, "10s") {
		if res := classic.query(t, q.expr, time.Now()); len(res) == 0 && !strings.Contains(q.expr, "gpu") {
			t.Errorf("dashboard panel %q: %s: no data", q.panel, q.expr)
		}
	}

	// Rank 0 restarts: the same series start again from zero (a counter
	// reset to Prometheus) with a new start time.
	testkit.Stop(pubs[0])
	pubs[0] = startRank(t, bin, ranks[0])
	scrapetest.Until(t, "http://"+targets[0]+"/metrics", "the restarted rank 0", func(m scrapetest.Families) bool {
		return m.Has("pipetop_trainer_info", L{"pid": strconv.Itoa(pubs[0].Process.Pid)})
	})
	time.Sleep(3 * promScrape)
	now := time.Now()
	if n := classic.scalar(t, `resets(pipetop_trainer_steps_total{rank="0"}[30s])`, now); n < 1 {
		t.Errorf("resets(steps_total{rank=0}[30s]) = %v after a restart, want 1", n)
	}
	if n := classic.scalar(t, `changes(pipetop_trainer_start_time_seconds{rank="0"}[30s])`, now); n < 1 {
		t.Errorf("changes(start_time_seconds{rank=0}[30s]) = %v after a restart, want 1", n)
	}
	if n := classic.scalar(t, `resets(pipetop_trainer_steps_total{rank="1"}[30s])`, now); n != 0 {
		t.Errorf("resets(steps_total{rank=1}[30s]) = %v, want 0: rank 1 did not restart", n)
	}
}

// checkBucket requires got to lie in the classic bucket of want or a
// neighbour.
func checkBucket(t *testing.T, what string, got float64, want time.Duration) {
	t.Helper()
	gb, wb := stage.ClassicBucket(time.Duration(got*1e9)), stage.ClassicBucket(want)
	t.Logf("%s: histogram_quantile(0.99) = %.2f ms, planted p99 %.2f ms", what, got*1e3, want.Seconds()*1e3)
	if math.IsNaN(got) || gb < wb-1 || gb > wb+1 {
		t.Errorf("%s histogram_quantile(0.99) = %v s, not within one bucket of the planted p99 %v", what, got, want)
	}
}

func startRank(t *testing.T, bin string, r rankSetup) *exec.Cmd {
	t.Helper()
	return testkit.Start(t, "", filepath.Join(bin, "synthetic"), "-name", r.name, "-rank", r.rank, "-world-size", "2",
		"-run", "it", "-rate", r.rate, "-stages", r.stages, "-jitter", r.jitter, "-quiet")
}

// serveExporter runs an exporter attached to the named trainer on a
// loopback port and returns its address.
func serveExporter(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var m *monitor.Monitor
	for {
		var err error
		// OneRank: the ranks share this machine's socket directory, and an
		// exporter attached to a rank serves every rank of its run here;
		// on two hosts each would see only its own.
		if m, err = monitor.Open(ctx, name, monitor.Options{Sources: []source.Source{}, OneRank: true}); err == nil {
			break
		} else if time.Now().After(deadline) {
			eps, lerr := ipc.List()
			t.Fatalf("%v (live: %v %v)", err, eps, lerr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(m.Close)
	e := New(m.Snapshotter, Options{Interval: 250 * time.Millisecond, Window: snapshot.Window{Label: "5s", Seconds: 5}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go e.Serve(ctx, ln)
	return ln.Addr().String()
}

// stepLog is what a viewer of its own saw of one publisher: the end time
// and wall time of every step.
type stepLog struct {
	mu   sync.Mutex
	end  []int64
	wall []int64
}

// watchSteps records the steps of the named trainer's first process.
func watchSteps(ctx context.Context, t *testing.T, name string) *stepLog {
	t.Helper()
	l := &stepLog{}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go ipc.Watch(ctx, ipc.ResolveSpec(name), func(m ipc.Message) {
		if m.Disconnected != nil {
			cancel()
		}
		if m.Frame == nil || m.Frame.Type != ipc.TypeSteps {
			return
		}
		l.mu.Lock()
		for i := range m.Frame.Steps {
			r := &m.Frame.Steps[i]
			l.end, l.wall = append(l.end, r.EndNs), append(l.wall, r.WallNs())
		}
		l.mu.Unlock()
	}, ipc.ViewOptions{})
	return l
}

// window returns the wall times of the steps that ended in (from, to].
func (l *stepLog) window(from, to time.Time) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var w []int64
	for i, e := range l.end {
		if e > from.UnixNano() && e <= to.UnixNano() {
			w = append(w, l.wall[i])
		}
	}
	return w
}

func (l *stepLog) rate(from, to time.Time) float64 {
	return float64(len(l.window(from, to))) / to.Sub(from).Seconds()
}

func (l *stepLog) quantile(q float64, from, to time.Time) time.Duration {
	w := l.window(from, to)
	slices.Sort(w)
	if len(w) == 0 {
		return -1
	}
	return time.Duration(w[min(len(w)-1, int(math.Ceil(q*float64(len(w))))-1)])
}

// promServer is a Prometheus server run by the test.
type promServer struct {
	base string
}

// startPrometheus starts Prometheus on a loopback port with a temporary
// TSDB, scraping targets every promScrape and evaluating rules (if not
// empty) as often, and waits until it is ready.
func startPrometheus(ctx context.Context, t *testing.T, bin string, targets []string, rules string, flags ...string) *promServer {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", promScrape, promScrape)
	if rules != "" {
		cfg += fmt.Sprintf("rule_files: [%q]\n", rules)
	}
	cfg += "scrape_configs:\n  - job_name: pipetop\n    static_configs:\n      - targets: ["
	for i, tg := range targets {
		if i > 0 {
			cfg += ", "
		}
		cfg += strconv.Quote(tg)
	}
	cfg += "]\n"
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var log bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"--config.file=" + cfgPath, "--storage.tsdb.path=" + filepath.Join(dir, "tsdb"),
		"--web.listen-address=" + addr, "--log.level=warn"}, flags...)...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p := &promServer{base: "http://" + addr}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(p.base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus %v not ready within 15 s: %v\n%s", flags, err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// await polls the query until it returns a sample, for at most 20 s.
func (p *promServer) await(t *testing.T, q string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(p.query(t, q, time.Now())) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("prometheus %s: no result for %s within 20 s", p.base, q)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sample is one element of an instant vector from the HTTP API.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query evaluates an instant query at the given time.
func (p *promServer) query(t *testing.T, q string, at time.Time) []sample {
	t.Helper()
	v := url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64)}}
	resp, err := http.Get(p.base + "/api/v1/query?" + v.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	if body.Status != "success" {
		t.Fatalf("query %s: %s", q, body.Error)
	}
	return body.Data.Result
}

// scalar evaluates a query that must give exactly one sample.
func (p *promServer) scalar(t *testing.T, q string, at time.Time) float64 {
	t.Helper()
	res := p.query(t, q, at)
	if len(res) != 1 {
		t.Fatalf("query %s: %d samples %v, want 1", q, len(res), res)
	}
	s, _ := res[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %s: value %v: %v", q, res[0].Value, err)
	}
	return v
}
