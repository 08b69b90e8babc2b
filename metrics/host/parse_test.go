package host

import (
	"strings"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    procStat
		wantErr string
	}{
		{
			name: "plain",
			in:   "7 (bash) S 1 7 7 0 -1 0 0 0 0 0 11 22 0 0 20 0 3 0 99 100 5 0\n",
			want: procStat{comm: []byte("bash"), ppid: 1, cpuTicks: 33, threads: 3, startTicks: 99, rssPages: 5},
		},
		{
			name: "comm with spaces and parens",
			in:   "7 (a) b (c) R 2 7 7 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 100 9 0",
			want: procStat{comm: []byte("a) b (c"), ppid: 2, cpuTicks: 2, threads: 1, startTicks: 5, rssPages: 9},
		},
		{name: "no comm", in: "7 bash S 1", wantErr: "no (comm) field"},
		{name: "truncated", in: "7 (x) S 1 7", wantErr: "only 5 fields"},
		{name: "bad number", in: "7 (x) S 1 7 7 0 -1 0 0 0 0 0 1x 1 0 0 20 0 1 0 5 100 9 0", wantErr: `field 14: bad value "1x"`},
		{name: "negative ppid", in: "7 (x) S -1 7 7 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 100 9 0", wantErr: `field 4: bad value "-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got.comm) != string(tt.want.comm) || got.ppid != tt.want.ppid || got.cpuTicks != tt.want.cpuTicks ||
				got.threads != tt.want.threads || got.startTicks != tt.want.startTicks || got.rssPages != tt.want.rssPages {
				t.Fatalf("got %+v (comm %q), want %+v", got, got.comm, tt.want)
			}
		})
	}
}

func TestParseLoadavgAndDecimal(t *testing.T) {
	tests := []struct {
		in      string
		want    [3]float64
		wantErr bool
	}{
		{"0.00 1.50 12.25 1/2 3", [3]float64{0, 1.5, 12.25}, false},
		{"3 4 5", [3]float64{3, 4, 5}, false},
		{"0.1 0.2", [3]float64{}, true},
		{"a b c", [3]float64{}, true},
		{"1.-2 0 0", [3]float64{}, true},
	}
	for _, tt := range tests {
		got, err := parseLoadavg([]byte(tt.in))
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("parseLoadavg(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestParseLastPID(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"0.00 1.50 12.25 1/2 3\n", 3},
		{"0.00 0.01 0.05 3/812 2147483647\n", 1<<31 - 1},
		{"0.00 0.01 0.05 3/812 2147483648\n", 0},
		{"0.00 0.01 0.05 3/812 0\n", 0},
		{"0.00 0.01 0.05 3/812\n", 0},
		{"0.00 0.01 0.05 3/812 x\n", 0},
	}
	for _, tt := range tests {
		got, err := parseLastPID([]byte(tt.in))
		if got != tt.want || (err != nil) != (tt.want == 0) {
			t.Errorf("parseLastPID(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseUint(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{"", 0, false},
		{"+1", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseUint([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseUint(%q) = %d,%v", tt.in, got, ok)
		}
	}
}

func TestParseProcIO(t *testing.T) {
	if _, err := parseProcIO([]byte("rchar: 1\nwchar: 2\n")); err == nil || !strings.Contains(err.Error(), "2 of 4") {
		t.Fatalf("partial io err = %v", err)
	}
	p, err := parseProcIO([]byte("rchar: 1\nwchar: 2\nsyscr: 9\nread_bytes: 3\nwrite_bytes: 4\n"))
	if err != nil || p != (procIO{1, 2, 3, 4}) {
		t.Fatalf("got %+v, %v", p, err)
	}
}

// The fuzz targets check that no input panics and that accepted input is
// self-consistent.

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1\n"))
	f.Add([]byte("cpu1 1 2 3 4\n"))
	f.Add([]byte("cpu99999 1 2 3 4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var all cpuTimes
		cores, online, err := parseStat(b, &all, nil, nil)
		if len(cores) != len(online) {
			t.Fatalf("cores %d online %d", len(cores), len(online))
		}
		if err != nil {
			return
		}
		for i, c := range cores {
			if online[i] && c.busy > c.total {
				t.Fatalf("core %d busy %d > total %d", i, c.busy, c.total)
			}
		}
	})
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("7 (bash) S 1 7 7 0 -1 0 0 0 0 0 11 22 0 0 20 0 3 0 99 100 5 0\n"))
	f.Add([]byte("7 ((() S"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseProcStat(b)
		if err == nil && len(s.comm) > len(b) {
			t.Fatal("comm longer than input")
		}
	})
}

func FuzzParseLastPID(f *testing.F) {
	f.Add([]byte("0.00 0.01 0.05 3/812 4242\n"))
	f.Add([]byte("1 2 3 4"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pid, err := parseLastPID(b)
		if (err == nil) != (pid > 0) {
			t.Fatalf("pid %d, err %v", pid, err)
		}
	})
}

func FuzzParseMeminfo(f *testing.F) {
	f.Add([]byte("MemTotal: 10 kB\nMemAvailable: 5 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMeminfo(b)
		if err == nil && m.total%1024 != 0 {
			t.Fatalf("total %d not a kB multiple", m.total)
		}
		parseLoadavg(b)
		parseProcIO(b)
	})
}
