package host

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A file kept open on the real /proc reads what the file holds now, and
// fails once its process has exited rather than answering with what it
// held.
func TestProcFSKeptFilesFollowTheProcess(t *testing.T) {
	fs := newProcFS("")
	if fs.open == nil {
		t.Skip("/proc is not a procfs mount here")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	first, err := fs.readPID(pid, "stat")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(first, []byte(strconv.Itoa(pid)+" (sleep)")) {
		t.Fatalf("stat = %q", first)
	}
	if len(fs.open) != 1 {
		t.Fatalf("%d files kept open, want 1", len(fs.open))
	}
	cmd.Process.Kill()
	cmd.Wait()
	if b, err := fs.readPID(pid, "stat"); err == nil {
		t.Fatalf("stat of an exited process read %q", b)
	}
	if len(fs.open) != 0 {
		t.Errorf("%d files kept open after the process exited, want 0", len(fs.open))
	}
}

// The files kept open are bounded, and each read answers fresh content.
func TestProcFSKeepsAtMostMaxOpenFiles(t *testing.T) {
	fs := newProcFS("")
	if fs.open == nil {
		t.Skip("/proc is not a procfs mount here")
	}
	defer fs.Close()
	for i := 0; i < 2*maxOpenFiles; i++ {
		name := strings.Repeat("./", i) + "loadavg" // another path to the same file
		if _, err := fs.read(name); err != nil {
			t.Fatal(err)
		}
		if len(fs.open) > maxOpenFiles {
			t.Fatalf("%d files open, more than %d", len(fs.open), maxOpenFiles)
		}
	}
	a, _ := fs.read("self/stat")
	a = bytes.Clone(a)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		_ = strconv.Itoa(int(time.Now().UnixNano())) // burn CPU so utime moves
		if b, _ := fs.read("self/stat"); !bytes.Equal(a, b) {
			return
		}
	}
	t.Errorf("a kept file read the same content for 5 s of CPU work: %q", a)
}
