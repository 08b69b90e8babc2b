package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestRunRealDriver runs the program's body against the real NVML: without
// a driver it prints the one-line status and exits 2; with one it prints
// every device and exits 0.
func TestRunRealDriver(t *testing.T) {
	var out bytes.Buffer
	code := run(&out, 2, 10*time.Millisecond, 0, time.Second, []string{"true"})
	text := out.String()
	if strings.Contains(text, "status: no NVIDIA") {
		if code != 2 || !strings.Contains(text, "command exited: <nil>") {
			t.Fatalf("exit %d, output:\n%s", code, text)
		}
		return
	}
	if code != 0 || !strings.Contains(text, "GPU 0: ") || !strings.Contains(text, "[NVML kernel-active]") {
		t.Fatalf("exit %d, output:\n%s", code, text)
	}
}
