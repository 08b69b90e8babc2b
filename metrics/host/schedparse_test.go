package host

import (
	"strings"
	"testing"
)

func TestParseSchedstatAndStatus(t *testing.T) {
	s, err := parseSchedstat([]byte("4600194 5830689 3\n"))
	if err != nil || s != (schedStat{4600194, 5830689, 3}) {
		t.Fatalf("schedstat = %+v, %v", s, err)
	}
	if _, err := parseSchedstat([]byte("1 x 3")); err == nil || !strings.Contains(err.Error(), "field 2") {
		t.Fatalf("bad schedstat err = %v", err)
	}
	st, err := parseThreadStatus([]byte("Name:\tpt main (1)\nThreads:\t12\nCpus_allowed_list:\t0-3,8,10-11\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t9\n"))
	if err != nil || string(st.name) != "pt main (1)" || st.threads != 12 || st.cpus != 7 || st.nvcsw != 9 {
		t.Fatalf("status = %+v (name %q), %v", st, st.name, err)
	}
	for _, bad := range []string{"Name:\tx\n", "nonvoluntary_ctxt_switches:\t1\n", "Name:\tx\nnonvoluntary_ctxt_switches:\t-1\n",
		"Name:\tx\nnonvoluntary_ctxt_switches:\t1\nCpus_allowed_list:\t3-1\n"} {
		if _, err := parseThreadStatus([]byte(bad)); err == nil {
			t.Errorf("status %q accepted", bad)
		}
	}
}

func TestParsePressure(t *testing.T) {
	some, full, err := parsePressure([]byte("some avg10=91.57 avg60=79.09 avg300=54.64 total=584755616\nfull avg10=1.50 avg60=0.00 avg300=0.00 total=7\n"))
	if err != nil || some != (Pressure{91.57, 584755616}) || full != (Pressure{1.5, 7}) {
		t.Fatalf("pressure = %+v %+v, %v", some, full, err)
	}
	// Before 5.13 there is no full line for the CPU.
	if some, _, err := parsePressure([]byte("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")); err != nil || some.Total != 0 {
		t.Fatalf("some only: %+v, %v", some, err)
	}
	for _, bad := range []string{"", "full avg10=1 total=2\n", "some avg10=x total=1\n", "some avg60=1 total=1\n"} {
		if _, _, err := parsePressure([]byte(bad)); err == nil {
			t.Errorf("pressure %q accepted", bad)
		}
	}
}

func TestParseCgroupFiles(t *testing.T) {
	v1, v2, err := parseProcCgroup([]byte("9:name=systemd:/\n2:cpuacct:/\n1:cpu,cpuacct:/job/7\n0::/user.slice\n"))
	if err != nil || string(v1.path) != "/job/7" || string(v2.path) != "/user.slice" || !v2.v2 {
		t.Fatalf("cgroup = %+v %+v, %v", v1, v2, err)
	}
	if _, _, err := parseProcCgroup([]byte("1:cpu:relative\n")); err == nil {
		t.Error("relative path accepted")
	}
	m1, m2 := parseMountinfo([]byte("30 25 0:26 / /sys/fs/cgroup/unified rw,relatime shared:4 - cgroup2 cgroup2 rw\n" +
		"31 25 0:27 /kube /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:5 - cgroup cgroup rw,cpu,cpuacct\n" +
		"32 25 0:28 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"))
	if string(m1.point) != "/sys/fs/cgroup/cpu,cpuacct" || string(m1.root) != "/kube" || string(m2.point) != "/sys/fs/cgroup/unified" {
		t.Fatalf("mounts = %+v %+v", m1, m2)
	}
	if m, err := parseCPUMax([]byte("200000 100000\n")); err != nil || m != (cpuMax{200000, 100000}) {
		t.Fatalf("cpu.max = %+v, %v", m, err)
	}
	if m, err := parseCPUMax([]byte("max 100000\n")); err != nil || m.quota != -1 {
		t.Fatalf("cpu.max max = %+v, %v", m, err)
	}
	if _, err := parseCPUMax([]byte("100 0")); err == nil {
		t.Error("zero period accepted")
	}
	v2stat := "usage_usec 10\nuser_usec 5\nsystem_usec 5\nnr_periods 50\nnr_throttled 40\nthrottled_usec 1500000\n"
	if th, err := parseCPUStat([]byte(v2stat)); err != nil || th != (throttling{50, 40, 1500000000}) {
		t.Fatalf("v2 cpu.stat = %+v, %v", th, err)
	}
	if th, err := parseCPUStat([]byte("nr_periods 5\nnr_throttled 2\nthrottled_time 99\n")); err != nil || th != (throttling{5, 2, 99}) {
		t.Fatalf("v1 cpu.stat = %+v, %v", th, err)
	}
	if _, err := parseCPUStat([]byte("nr_periods 1\nnr_throttled 2\n")); err == nil {
		t.Error("more throttled than periods accepted")
	}
	if v, ok := parseInt([]byte("-1\n")); !ok || v != -1 {
		t.Errorf("parseInt(-1) = %d, %v", v, ok)
	}
}

// The fuzz targets check that no input panics and that accepted input is
// self-consistent.

func FuzzParseSchedstat(f *testing.F) {
	f.Add([]byte("4600194 5830689 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseSchedstat(b)
	})
}

func FuzzParseThreadStatus(f *testing.F) {
	f.Add([]byte("Name:\tx\nThreads:\t2\nCpus_allowed_list:\t0-3,8\nnonvoluntary_ctxt_switches:\t9\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseThreadStatus(b)
		if err == nil && (len(st.name) > len(b) || st.cpus < 0 || st.cpus > maxCPU) {
			t.Fatalf("status %+v from %d bytes", st, len(b))
		}
	})
}

func FuzzParsePressure(f *testing.F) {
	f.Add([]byte("some avg10=91.57 avg60=79.09 avg300=54.64 total=584755616\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		some, _, err := parsePressure(b)
		if err == nil && some.Avg10 < 0 {
			t.Fatalf("negative pressure %v", some.Avg10)
		}
	})
}

func FuzzParseCgroup(f *testing.F) {
	f.Add([]byte("1:cpu,cpuacct:/job/7\n0::/user.slice\n"))
	f.Add([]byte("31 25 0:27 /kube /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"))
	f.Add([]byte("nr_periods 50\nnr_throttled 40\nthrottled_usec 1500000\n"))
	f.Add([]byte("200000 100000\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v1, v2, err := parseProcCgroup(b); err == nil && len(v1.path)+len(v2.path) == 0 {
			t.Fatal("cgroup accepted without a path")
		}
		parseMountinfo(b)
		if m, err := parseCPUMax(b); err == nil && m.period <= 0 {
			t.Fatalf("cpu.max period %d", m.period)
		}
		if th, err := parseCPUStat(b); err == nil && th.throttled > th.periods {
			t.Fatalf("cpu.stat %+v", th)
		}
		parseInt(b)
	})
}
