package main

import (
	"reflect"
	"testing"

	"github.com/pipetop/pipetop/monitor/sources/host"
)

// TestHostSourcesAreTheTable: pipetrain --record samples every source of
// the table that needs no NVML, in its order, so a new one is recorded
// without a line here.
func TestHostSourcesAreTheTable(t *testing.T) {
	var got, want []string
	for _, src := range hostSources() {
		got = append(got, src.Name())
		src.Close()
	}
	for _, p := range host.Parts() {
		want = append(want, p.Name())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pipetrain records %v, the sources without NVML are %v", got, want)
	}
}
