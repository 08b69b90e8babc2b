// Package remote reads a run back from a Prometheus server (pipetop
// --prometheus URL RUN): the series every host's `pipetop export` serves,
// through Prometheus' HTTP API, turned into the same snapshot parts the
// local sockets give (every rank's window summary, the chosen rank's
// trainer and its host's CPU and GPU readings). Prometheus is the engine
// across hosts; this package only asks it questions. It speaks the HTTP
// API with the standard library, not the Prometheus client library.
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxBody bounds a query's response: a run of 64 ranks with 8 stages is a
// few hundred series, far below it.
const maxBody = 32 << 20

// Client asks one Prometheus server's HTTP API for instant queries.
type Client struct {
	base *url.URL
	http *http.Client
}

// NewClient checks raw (http or https, with a host; a path prefix such as
// a reverse proxy's is kept) and returns a Client for it.
func NewClient(raw string) (*Client, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("--prometheus %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--prometheus %q: want an http:// or https:// URL with a host, e.g. http://prometheus:9090", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return &Client{base: u, http: &http.Client{}}, nil
}

// URL is the server's address as given.
func (c *Client) URL() string { return c.base.String() }

// Sample is one series of an instant vector: its labels (the metric name
// under __name__ when the query keeps it), the evaluation time and value.
type Sample struct {
	Labels map[string]string
	T      time.Time
	V      float64
}

// Query evaluates expr at t (/api/v1/query) and returns its instant
// vector. Errors name the server and the query: unreachable, an HTTP
// error, Prometheus' own error, or a response that is not the API's.
func (c *Client) Query(ctx context.Context, expr string, t time.Time) ([]Sample, error) {
	u := *c.base
	u.Path += "/api/v1/query"
	q := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(t.UnixMilli())/1e3, 'f', 3, 64)}}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: query %s: %w", c.URL(), expr, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s unreachable: %w", c.URL(), unwrapURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: query %s: read response: %w", c.URL(), expr, err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("prometheus %s: query %s: response over %d MiB", c.URL(), expr, maxBody>>20)
	}
	if ct := resp.Header.Get("Content-Type"); !isJSON(ct) {
		return nil, fmt.Errorf("prometheus %s: query %s: HTTP %s with content type %q: not a Prometheus API (is the URL the server's, e.g. http://host:9090?)",
			c.URL(), expr, resp.Status, ct)
	}
	vec, err := ParseVector(body)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: query %s (HTTP %s): %w", c.URL(), expr, resp.Status, err)
	}
	return vec, nil
}

// unwrapURL drops net/url's "Get URL:" prefix, which repeats the query.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// response is the envelope of every API answer.
type response struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

// vectorData is the data of an instant query.
type vectorData struct {
	ResultType string            `json:"resultType"`
	Result     []json.RawMessage `json:"result"`
}

// series is one element of a vector result.
type series struct {
	Metric map[string]string `json:"metric"`
	Value  []json.RawMessage `json:"value"`
}

// ParseVector reads an /api/v1/query response whose result is an instant
// vector. An error response is returned as Prometheus' error; a scalar,
// matrix or string result, a malformed sample or a value that is not a
// number is an error saying which.
func ParseVector(body []byte) ([]Sample, error) {
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("not a Prometheus API response: %w", err)
	}
	switch r.Status {
	case "success":
	case "error":
		return nil, fmt.Errorf("prometheus says %s: %s", r.ErrorType, r.Error)
	default:
		return nil, fmt.Errorf("not a Prometheus API response: status %q", r.Status)
	}
	var d vectorData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return nil, fmt.Errorf("bad data: %w", err)
	}
	if d.ResultType != "vector" {
		return nil, fmt.Errorf("result type %q, want vector", d.ResultType)
	}
	out := make([]Sample, 0, len(d.Result))
	for i, raw := range d.Result {
		s, err := parseSample(raw)
		if err != nil {
			return nil, fmt.Errorf("result %d: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// parseSample reads {"metric": {...}, "value": [unix seconds, "value"]}.
func parseSample(raw json.RawMessage) (Sample, error) {
	var s series
	if err := json.Unmarshal(raw, &s); err != nil {
		return Sample{}, err
	}
	if len(s.Value) != 2 {
		return Sample{}, fmt.Errorf("value has %d elements, want [time, \"value\"]", len(s.Value))
	}
	var ts float64
	if err := json.Unmarshal(s.Value[0], &ts); err != nil || math.IsNaN(ts) || math.IsInf(ts, 0) || math.Abs(ts) > 1e11 {
		return Sample{}, fmt.Errorf("time %s: want Unix seconds", s.Value[0])
	}
	var text string
	if err := json.Unmarshal(s.Value[1], &text); err != nil {
		return Sample{}, fmt.Errorf("value %s: want a number in a string", s.Value[1])
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return Sample{}, fmt.Errorf("value %q: not a number", text)
	}
	if s.Metric == nil {
		s.Metric = map[string]string{}
	}
	sec, frac := math.Modf(ts)
	return Sample{Labels: s.Metric, T: time.Unix(int64(sec), int64(frac*1e9)).UTC(), V: v}, nil
}
