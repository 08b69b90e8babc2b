package child

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
)

// TestAwaitSocket serves a trainer socket from the test's process: it is
// found for that process and for an ancestor of it, not for an unrelated
// one.
func TestAwaitSocket(t *testing.T) {
	t.Setenv(ipc.DirEnv, testkit.SocketDir(t))
	stop := make(chan struct{})
	close(stop)
	if path, ok := AwaitSocket(os.Getpid(), stop); ok {
		t.Fatalf("found %s before any socket was served", path)
	}
	srv, err := ipc.Listen("childtest", ipc.Hello{}, ipc.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, pid := range []int{os.Getpid(), os.Getppid()} {
		if path, ok := AwaitSocket(pid, nil); !ok || path == "" {
			t.Errorf("AwaitSocket(%d) = %q, %v; want the test's socket", pid, path, ok)
		}
	}
	other := exec.Command("sleep", "10")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	timeout := make(chan struct{})
	time.AfterFunc(3*pollEvery, func() { close(timeout) })
	if path, ok := AwaitSocket(other.Process.Pid, timeout); ok {
		t.Errorf("AwaitSocket of an unrelated process found %s", path)
	}
}
