package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"attach"}, "attach needs one trainer"},
		{[]string{"attach", "a", "b"}, "attach needs one trainer"},
		{[]string{"demo"}, `unexpected argument "demo"`},
		{[]string{"--interval", "1ms"}, "--interval 1ms"},
		{[]string{"--window", "7s"}, `--window "7s"`},
		{[]string{"--once", "--json"}, "pick one"},
		{[]string{"--width", "-4", "--once"}, "--width -4"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"attach", "x", "--prometheus", "http://p:9090"}, "--prometheus is for the view"},
		{[]string{"export", "--prometheus", "http://p:9090"}, "not for pipetop export"},
		{[]string{"--prometheus", "http://p:9090", "a", "b"}, "--prometheus reads one run, got 2: a b"},
		{[]string{"--rank", "1"}, "--rank is for --prometheus"},
	}
	for _, tt := range tests {
		_, err := parse(tt.args, io.Discard)
		var ue cli.UsageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parse(%q) = %v, want a usage error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestParseFlagsAfterSpec(t *testing.T) {
	c, err := parse([]string{"attach", "demo", "--once", "--interval", "200ms", "--window", "2m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec != "demo" || !c.Once || c.Interval != 200*time.Millisecond || c.Window != 2 {
		t.Errorf("parsed %+v", c)
	}
}

func TestBadSpecFails(t *testing.T) {
	t.Setenv(ipc.DirEnv, t.TempDir())
	var out bytes.Buffer
	err := run(context.Background(), []string{"attach", "ghost", "--once", "--no-gpu"}, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Errorf("attach ghost: %v, want an error naming the spec", err)
	}
	if out.Len() != 0 {
		t.Errorf("attach ghost printed %q", out.String())
	}
}

// TestJSONMonitorOnly takes a --json snapshot with no trainer: it is a
// plain host monitor snapshot.
func TestJSONMonitorOnly(t *testing.T) {
	t.Setenv(ipc.DirEnv, t.TempDir())
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--json", "--interval", "100ms", "--no-gpu"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("--json output is not a snapshot: %v\n%s", err, out.String())
	}
	if s.Version != snapshot.SchemaVersion || s.Link.State != snapshot.LinkNone || s.Trainer != nil || len(s.CPU.Cores) == 0 {
		t.Errorf("monitor-only snapshot: version %d link %q trainer %v cores %d", s.Version, s.Link.State, s.Trainer, len(s.CPU.Cores))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil || string(raw["gpu_processes"]) != "[]" {
		t.Errorf("gpu_processes = %s without GPUs, want [] (%v)", raw["gpu_processes"], err)
	}
}

// TestAttachOnceAndList serves a real trainer socket in-process and takes
// --json, --once and ls snapshots of it.
func TestAttachOnceAndList(t *testing.T) {
	t.Setenv(ipc.DirEnv, t.TempDir())
	t.Setenv("NO_COLOR", "1")
	names := []string{stage.DataWait, stage.Forward, stage.Other}
	srv, err := ipc.Listen("clitest", ipc.Hello{Stages: names}, ipc.ServerOptions{Flush: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			r := stage.Record{Step: i, NumStages: 3, Samples: 4}
			r.ClearGPU()
			r.EndNs = time.Now().UnixNano()
			r.StartNs = r.EndNs - 2e6
			r.CPU[0], r.CPU[1], r.CPU[2] = 15e5, 4e5, 1e5
			srv.Publish(&r)
		}
	}()

	var out bytes.Buffer
	if err := run(context.Background(), []string{"--json", "--interval", "300ms", "--no-gpu"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Trainer == nil || s.Trainer.Name != "clitest" || s.Summary == nil || s.Verdict == nil || s.Verdict.Kind != verdict.InputBound {
		t.Fatalf("attached snapshot: trainer %+v summary %v verdict %+v", s.Trainer, s.Summary != nil, s.Verdict)
	}

	out.Reset()
	if err := run(context.Background(), []string{"attach", "clitest", "--once", "--interval", "200ms", "--no-gpu", "--width", "90"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"clitest", "data_wait", "input-bound", "CPU"} {
		if !strings.Contains(text, want) {
			t.Errorf("--once text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b[") {
		t.Error("--once to a pipe wrote escape sequences")
	}

	out.Reset()
	if err := run(context.Background(), []string{"ls", "--json"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var eps []ipc.Endpoint
	if err := json.Unmarshal(out.Bytes(), &eps); err != nil || len(eps) != 1 || eps[0].Name != "clitest" {
		t.Errorf("ls --json = %s (%v)", out.String(), err)
	}
}

// TestParsePrometheus: the remote view's flags, and the settings file's
// prometheus key for plain pipetop only (a flag wins; attach stays local).
func TestParsePrometheus(t *testing.T) {
	c, err := parse([]string{"--prometheus", "http://p:9090", "run7", "--rank", "2", "--config", writeConfig(t, "")}, io.Discard)
	if err != nil || c.Prometheus != "http://p:9090" || c.Spec != "run7" || c.Rank != 2 {
		t.Fatalf("parse = %+v, %v; want prometheus http://p:9090, run run7, rank 2", c, err)
	}
	cfg := writeConfig(t, `prometheus = "http://from-settings:9090"`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", cfg}, "http://from-settings:9090"},
		{[]string{"--config", cfg, "--prometheus", "http://flag:9090"}, "http://flag:9090"},
		{[]string{"attach", "x", "--config", cfg}, ""},
	} {
		c, err := parse(tc.args, io.Discard)
		if err != nil || c.Prometheus != tc.want || c.Rank != -1 {
			t.Errorf("parse(%q) = prometheus %q rank %d, %v; want %q, -1", tc.args, c.Prometheus, c.Rank, err, tc.want)
		}
	}
	_, stderr, code := runBin(t, nil, []string{pipetopBin(t)}, "--prometheus", "prometheus:9090", "--json")
	if code != 2 || !strings.Contains(stderr, "want an http:// or https:// URL") {
		t.Errorf("--prometheus without a scheme: exit %d, %q; want 2 and what a URL needs", code, stderr)
	}
}
