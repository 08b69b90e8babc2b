package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// CPUQuotaCgroup creates a cgroup with a CPU quota of cpus CPUs (cgroup
// v2 where /sys/fs/cgroup is a v2 mount with the cpu controller, else the
// v1 cpu hierarchy at /sys/fs/cgroup/cpu) and returns its directory and a
// function that moves a process into it. It skips the test with a message
// when neither is writable, and removes the cgroup when the test ends
// (moving what is left in it back to the root first). The cgroup's weight
// is the highest there is, as a container's CPU request goes with its
// limit: the box's other load then cannot starve it below its quota, and
// the quota is what holds it back.
func CPUQuotaCgroup(t testing.TB, cpus float64) (dir string, add func(pid int)) {
	t.Helper()
	name := fmt.Sprintf("pipetop-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	const period = 100000
	quota := strconv.Itoa(int(cpus * period))
	v2 := "/sys/fs/cgroup"
	if b, err := os.ReadFile(v2 + "/cgroup.controllers"); err == nil && strings.Contains(string(b), "cpu") {
		dir = filepath.Join(v2, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Skipf("cgroup v2 at %s is not writable: %v", v2, err)
		}
		err := os.WriteFile(dir+"/cpu.max", []byte(quota+" "+strconv.Itoa(period)), 0o644)
		if err == nil {
			err = os.WriteFile(dir+"/cpu.weight", []byte("10000"), 0o644)
		}
		if err != nil {
			os.Remove(dir)
			t.Skipf("cgroup v2 cpu.max or cpu.weight not writable: %v", err)
		}
		return dir, cgroupAdder(t, dir, v2)
	}
	root := "/sys/fs/cgroup/cpu"
	dir = filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("neither cgroup v2 (with the cpu controller) nor the v1 cpu hierarchy at %s is writable: %v", root, err)
	}
	err := os.WriteFile(dir+"/cpu.cfs_period_us", []byte(strconv.Itoa(period)), 0o644)
	if err == nil {
		err = os.WriteFile(dir+"/cpu.cfs_quota_us", []byte(quota), 0o644)
	}
	if err == nil {
		err = os.WriteFile(dir+"/cpu.shares", []byte("262144"), 0o644)
	}
	if err != nil {
		os.Remove(dir)
		t.Skipf("cgroup v1 quota or shares not writable in %s: %v", dir, err)
	}
	return dir, cgroupAdder(t, dir, root)
}

// cgroupAdder returns the function that moves a pid into dir and
// registers the cleanup that empties and removes dir.
func cgroupAdder(t testing.TB, dir, root string) func(pid int) {
	t.Cleanup(func() {
		b, _ := os.ReadFile(dir + "/cgroup.procs")
		for _, p := range strings.Fields(string(b)) {
			os.WriteFile(root+"/cgroup.procs", []byte(p), 0o644)
		}
		for i := 0; i < 50; i++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("could not remove cgroup %s", dir)
	})
	return func(pid int) {
		t.Helper()
		if err := os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Fatalf("move pid %d into cgroup %s: %v", pid, dir, err)
		}
	}
}

// BlkioReadCgroup creates a cgroup v1 blkio cgroup that limits reads from
// the disk holding path to bps bytes a second
// (blkio.throttle.read_bps_device) and returns its directory: a process
// joins it by writing its pid to DIR/cgroup.procs (its children then
// inherit it). It skips the test with a message when the blkio hierarchy
// at /sys/fs/cgroup/blkio is not writable, and removes the cgroup when the
// test ends (moving what is left in it back to the root first).
func BlkioReadCgroup(t testing.TB, path string, bps int64) string {
	t.Helper()
	dev, err := DiskOf(path)
	if err != nil {
		t.Skipf("the disk of %s: %v", path, err)
	}
	root := "/sys/fs/cgroup/blkio"
	dir := filepath.Join(root, fmt.Sprintf("pipetop-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("the cgroup v1 blkio hierarchy at %s is not writable: %v", root, err)
	}
	limit := fmt.Sprintf("%s %d", dev, bps)
	if err := os.WriteFile(dir+"/blkio.throttle.read_bps_device", []byte(limit), 0o644); err != nil {
		os.Remove(dir)
		t.Skipf("blkio.throttle.read_bps_device %q not writable in %s: %v", limit, dir, err)
	}
	cgroupAdder(t, dir, root)
	return dir
}

// DiskOf is the MAJOR:MINOR of the whole disk holding path (the disk, not
// its partition: the blkio throttle is set on disks).
func DiskOf(path string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return "", err
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	sys := filepath.Join("/sys/dev/block", dev)
	if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
		b, err := os.ReadFile(filepath.Join(sys, "..", "dev"))
		if err != nil {
			return "", fmt.Errorf("the disk of partition %s: %w", dev, err)
		}
		dev = strings.TrimSpace(string(b))
	} else if _, err := os.Stat(sys); err != nil {
		return "", fmt.Errorf("%s is on device %s, not a block device: %w", path, dev, err)
	}
	return dev, nil
}
