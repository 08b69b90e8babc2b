package remote

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseVector(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []float64
		err        string
	}{
		{"vector", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"rank":"1"},"value":[1700000000.5,"2.5"]},{"metric":{},"value":[1700000000.5,"NaN"]}]}}`, []float64{2.5, math.NaN()}, ""},
		{"empty", `{"status":"success","data":{"resultType":"vector","result":[]}}`, nil, ""},
		{"inf", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"+Inf"]}]}}`, []float64{math.Inf(1)}, ""},
		{"error", `{"status":"error","errorType":"bad_data","error":"parse error at char 3"}`, nil, "prometheus says bad_data: parse error at char 3"},
		{"matrix", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, nil, `result type "matrix", want vector`},
		{"scalar", `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`, nil, `result type "scalar", want vector`},
		{"not json", `<html>`, nil, "not a Prometheus API response"},
		{"no status", `{"data":{}}`, nil, `status ""`},
		{"short value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}`, nil, "result 0: value has 1 elements"},
		{"number value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`, nil, "want a number in a string"},
		{"word value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"many"]}]}}`, nil, `value "many": not a number`},
		{"bad time", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":["x","1"]}]}}`, nil, "want Unix seconds"},
		{"bad labels", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"1"]}]}}`, nil, "result 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseVector([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d samples, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				if g := got[i].V; g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
					t.Errorf("sample %d = %v, want %v", i, g, w)
				}
			}
		})
	}
	got, _ := ParseVector([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"rank":"1"},"value":[1700000000.5,"2.5"]}]}}`))
	if got[0].Labels["rank"] != "1" || !got[0].T.Equal(time.Unix(1700000000, 5e8)) {
		t.Errorf("sample = %+v, want rank 1 at 1700000000.5", got[0])
	}
}

func FuzzParseVector(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"rank":"1"},"value":[1700000000.5,"2.5"]}]}}`))
	f.Add([]byte(`{"status":"error","errorType":"bad_data","error":"x"}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1e300,"-Inf"]}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		vec, err := ParseVector(body)
		if err != nil {
			if vec != nil {
				t.Fatalf("error %v with %d samples", err, len(vec))
			}
			return
		}
		for _, s := range vec {
			if s.Labels == nil {
				t.Fatal("a sample without a label map")
			}
		}
	})
}

func TestNewClientRefusesBadURLs(t *testing.T) {
	for _, raw := range []string{"", "prometheus:9090", "ftp://x", "http://", "::"} {
		if _, err := NewClient(raw); err == nil || !strings.Contains(err.Error(), "--prometheus") {
			t.Errorf("NewClient(%q) = %v, want an error naming --prometheus", raw, err)
		}
	}
	c, err := NewClient("http://prom.example:9090/proxy/?x=1")
	if err != nil || c.URL() != "http://prom.example:9090/proxy" {
		t.Errorf("NewClient = %v, %v; want http://prom.example:9090/proxy", c, err)
	}
}

// TestQueryErrors: a server that is not there, and a FAKE HTTP server
// that answers as something other than Prometheus, give errors naming the
// URL and what is wrong. Real Prometheus answers are tested in
// cmd/pipetop (TestPrometheusView).
func TestQueryErrors(t *testing.T) {
	gone := "http://" + refusingAddr(t)
	fakeNotPrometheus := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		http.Error(w, "<html>404</html>", http.StatusNotFound)
	}))
	defer fakeNotPrometheus.Close()
	for _, tc := range []struct{ url, want string }{
		{gone, "prometheus " + gone + " unreachable: dial tcp"},
		{fakeNotPrometheus.URL, "not a Prometheus API"},
	} {
		c, err := NewClient(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Query(context.Background(), "up", time.Now())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Query(%s) = %v, want an error containing %q", tc.url, err, tc.want)
		}
		if _, err := Open(context.Background(), c, "r", -1); err == nil || !strings.Contains(err.Error(), tc.url) {
			t.Errorf("Open(%s) = %v, want an error naming the URL", tc.url, err)
		}
	}
}

// refusingAddr returns a loopback address whose port stays bound for the
// test but never listens, so connecting to it is refused. A port taken
// by a listener and closed again can be handed straight to the next
// server (another test's, or this one's own fake), which then answers.
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
