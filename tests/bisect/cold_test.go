package bisect

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// The planted slow storage: files of coldFileSize read through a cgroup
// that lets coldBPS bytes a second from the disk.
const (
	coldFiles    = 300
	coldFileSize = 128 << 10
	coldBPS      = 1 << 20
)

// The cold phase tells the storage from the decode: the same files, read
// by a loader that decodes each for ~15 ms, through a blkio throttle of 1
// MiB/s on the disk that holds them, read storage-bound from a cold cache
// (the warm loader phase, the files in the page cache, reads next to
// nothing from the disk); without the throttle, not storage-bound. The
// run without the throttle comes first: its start-up brings what Python
// imports into the page cache, where the throttled run reads it without a
// limit.
func TestColdPhaseTellsStorageFromDecode(t *testing.T) {
	testkit.Serial(t)
	requireTorch(t)
	dir := coldData(t)
	cg := testkit.BlkioReadCgroup(t, dir, coldBPS)
	for _, tc := range []struct {
		name    string
		cgroup  string
		storage bool
	}{
		{"no limit", "", false},
		{"1 MiB/s", cg, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runIn(t, tc.cgroup, "--seconds-per-phase", "3", "--phases", "cold,loader", "--", python, script("files.py"), "--dir", dir)
			var table bytes.Buffer
			r.rep.WriteTable(&table)
			t.Logf("\n%s", table.String())
			if names := []string{r.rep.Phases[0].Name, r.rep.Phases[1].Name}; names[0] != verdict.PhaseLoader || names[1] != verdict.PhaseCold {
				t.Errorf("phases %v: the cold phase runs after the loader phase", names)
			}
			ld, cold := phaseOf(t, r, verdict.PhaseLoader), phaseOf(t, r, verdict.PhaseCold)
			c, ok := verdict.ColdFinding(r.rep.Phases)
			if !ok || c.Storage != tc.storage {
				t.Fatalf("cold finding %v (ok %v): loader %.1f samples/s, cold %.1f, want storage-bound %v", c.Storage, ok, ld.SamplesPerSec, cold.SamplesPerSec, tc.storage)
			}
			if e := cold.Eviction; e == nil || e.Files < coldFiles {
				t.Errorf("eviction %+v: want the %d files", e, coldFiles)
			}
			if ld.DiskReadPerSec > coldBPS/4 {
				t.Errorf("the warm loader phase read %.0f bytes/s from the disk", ld.DiskReadPerSec)
			}
			v := r.rep.Verdict
			if tc.storage {
				if v.Kind != verdict.StorageBound || cold.DiskReadPerSec <= 0 || cold.DiskReadPerSec > 1.5*coldBPS {
					t.Errorf("verdict %s (%s); the cold phase read %.0f bytes/s", v.Kind, v, cold.DiskReadPerSec)
				}
			} else if !containsAny(v.Headline, []string{"not storage-bound"}) {
				t.Errorf("verdict: %s", v)
			}
		})
	}
}

// coldData writes the planted files (random bytes, synced) to a fresh
// directory on the root disk, removed when the test ends.
func coldData(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(os.TempDir(), "pipetop-cold-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	buf := make([]byte, coldFileSize)
	for i := range coldFiles {
		rand.Read(buf)
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%04d.bin", i)))
		if err == nil {
			_, err = f.Write(buf)
		}
		if err == nil {
			err = f.Sync()
		}
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runIn is run with pipetop started inside cgroup (its processes, the
// script's included, inherit it); "" runs it as run does.
func runIn(t *testing.T, cgroup string, args ...string) result {
	t.Helper()
	if cgroup == "" {
		return run(t, args...)
	}
	argv := append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cgroup, pipetop, "bisect", "--no-tui", "--json", "--grace", "2s"}, args...)
	return runBisect(t, exec.Command("sh", argv...), fmt.Sprintf("in %s %v", cgroup, args))
}
