// Command gpusample prints what pipetop's GPU sampler reads from the real
// NVIDIA driver: every device, every value with its source, or one line
// saying why there is no GPU. GPM metrics need two samples, so it samples
// at least twice. Given a command after "--", it runs it, watches its pid,
// and samples until it exits:
//
//	gpusample                       # two samples, 1 s apart
//	gpusample -n 5 -interval 500ms
//	gpusample -- python3 train.py   # sample while the command runs
//
// Exit status: 0 with readings, 2 when there is no GPU to monitor, 1 on
// other errors.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/pipetop/pipetop/metrics"
	"github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/gpumetric"
)

func main() {
	n := flag.Int("n", 2, "samples to take (at least 2 so GPM metrics show)")
	interval := flag.Duration("interval", time.Second, "time between samples")
	pid := flag.Int("pid", 0, "host pid whose GPU use to report")
	timeout := flag.Duration("timeout", gpu.DefaultTimeout, "bound on one sample's NVML calls")
	flag.Parse()
	if *n < 1 || *interval <= 0 {
		fmt.Fprintln(os.Stderr, "gpusample: -n must be >= 1 and -interval > 0")
		os.Exit(1)
	}
	os.Exit(run(os.Stdout, *n, *interval, *pid, *timeout, flag.Args()))
}

// run samples and prints; it returns the exit status.
func run(w io.Writer, n int, interval time.Duration, pid int, timeout time.Duration, cmdArgs []string) int {
	s := gpu.Open(nvml.New(), gpu.Options{Timeout: timeout})
	defer s.Close()
	var done chan error
	if len(cmdArgs) > 0 {
		cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "gpusample: start %s: %v\n", cmdArgs[0], err)
			return 1
		}
		pid = cmd.Process.Pid
		done = make(chan error, 1)
		go func() { done <- cmd.Wait() }()
	}
	if pid > 0 {
		s.SetPIDs(pid)
	}
	var err error
	for i := 0; ; i++ {
		err = s.Sample(time.Now())
		print(w, i+1, s.Snapshot())
		if errors.Is(err, gpu.ErrUnavailable) {
			if done != nil {
				fmt.Fprintf(w, "command exited: %v\n", <-done)
			}
			return 2
		}
		if done == nil && i+1 >= n {
			break
		}
		select {
		case <-time.After(interval):
		case werr := <-done:
			fmt.Fprintf(w, "command exited: %v\n", werr)
			done = nil
			n = 0
		}
	}
	if err != nil {
		return 1
	}
	return 0
}

// print writes one snapshot as text.
func print(w io.Writer, i int, snap gpu.Snapshot) {
	fmt.Fprintf(w, "--- sample %d at %s driver %q\n", i, snap.Time.Format("15:04:05.000"), snap.DriverVersion)
	if snap.Status != "" {
		fmt.Fprintf(w, "status: %s\n", snap.Status)
	}
	for _, d := range snap.Devices {
		label := fmt.Sprintf("GPU %d", d.Index)
		if d.MIG {
			label += fmt.Sprintf(" MIG %d (GI %d CI %d)", d.MIGIndex, d.GPUInstance, d.ComputeInstance)
		}
		fmt.Fprintf(w, "%s: %s %s\n", label, d.Name, d.UUID)
		if d.Err != "" {
			fmt.Fprintf(w, "  error: %s\n", d.Err)
		}
		rows := []struct {
			name string
			v    metrics.Value
			unit string
		}{
			{"kernel-active", d.Readings[gpumetric.KernelActive], "%"}, {"memory-active", d.Readings[gpumetric.MemActive], "%"},
			{"SM activity", d.Readings[gpumetric.SMActivity], "%"}, {"SM occupancy", d.Readings[gpumetric.SMOccupancy], "%"},
			{"tensor active", d.Readings[gpumetric.TensorActive], "%"}, {"DRAM bandwidth", d.Readings[gpumetric.DRAMActive], "%"},
			{"memory used", scale(d.Readings[gpumetric.MemUsed], 1<<20), "MiB"}, {"memory total", scale(d.Readings[gpumetric.MemTotal], 1<<20), "MiB"},
			{"power", d.Readings[gpumetric.Power], "W"}, {"power limit", d.Readings[gpumetric.PowerLimit], "W"},
			{"temperature", d.Readings[gpumetric.Temperature], "C"}, {"SM clock", d.Readings[gpumetric.SMClock], "MHz"}, {"memory clock", d.Readings[gpumetric.MemClock], "MHz"},
			{"PCIe rx", scale(d.Readings[gpumetric.PCIeRx], 1<<20), "MiB/s"}, {"PCIe tx", scale(d.Readings[gpumetric.PCIeTx], 1<<20), "MiB/s"},
		}
		for _, r := range rows {
			fmt.Fprintf(w, "  %-15s %s\n", r.name, format(r.v, r.unit))
		}
		fmt.Fprintf(w, "  %-15s %s [%s, %s]\n", "throttle", d.Throttle.Reasons, d.Throttle.Source, d.Throttle.State)
		for _, p := range d.Processes {
			fmt.Fprintf(w, "  pid %d on GPU %v: memory %s, SM %s, mem %s\n", p.PID, p.OnGPU,
				format(scale(p.Memory, 1<<20), "MiB"), format(p.SMUtil, "%"), format(p.MemUtil, "%"))
		}
	}
}

// scale divides a valid value by div.
func scale(v metrics.Value, div float64) metrics.Value {
	v.V /= div
	return v
}

// format prints "63.0 % [GPM]" or "not supported [GPM]".
func format(v metrics.Value, unit string) string {
	if v.State != metrics.OK {
		return fmt.Sprintf("%s [%s]", v.State, v.Source)
	}
	return strings.TrimSpace(fmt.Sprintf("%.1f %s [%s]", v.V, unit, v.Source))
}
