package sysctl

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadHostFacts(t *testing.T) {
	h, err := ReadHostFacts(FS{Root: "testdata/proc/sys"}, "testdata/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := HostFacts{
		NoFileHard:    20000,
		PortRangeLow:  32768,
		PortRangeHigh: 60999,
		MemAvailable:  24406656 * 1024,
		OnlineCPUs:    []int{0, 1, 2, 3, 6},
		FileMax:       2466112,
		NrOpen:        1048576,
		Somaxconn:     4096,
		ReservedPorts: Ranges{{8080, 8080}},
		ReservedKnown: true,
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("ReadHostFacts =\n%+v\nwant\n%+v", h, want)
	}
}

// Whatever cannot be read stays zero, and the error names every failure.
func TestReadHostFactsPartial(t *testing.T) {
	proc := t.TempDir()
	if err := os.WriteFile(filepath.Join(proc, "meminfo"), []byte("MemTotal: 100 kB\nMemAvailable:      7 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newRoot(t, map[string]string{
		"net.ipv4.ip_local_port_range":     "60999 32768\n",
		"fs.file-max":                      "9223372036854775807\n",
		"net.core.somaxconn":               "lots\n",
		"net.ipv4.ip_local_reserved_ports": "9000-8000\n",
	}, nil)
	h, err := ReadHostFacts(f, proc)
	want := HostFacts{MemAvailable: 7 * 1024, FileMax: math.MaxInt64}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("ReadHostFacts =\n%+v\nwant\n%+v", h, want)
	}
	if err == nil {
		t.Fatal("no error")
	}
	wantErr := []string{
		"RLIMIT_NOFILE: open " + proc + "/self/limits: no such file or directory",
		"online CPUs: open " + proc + "/self/status: no such file or directory",
		`net.ipv4.ip_local_port_range: bad range "60999 32768"`,
		`net.ipv4.ip_local_reserved_ports: bad port list "9000-8000": range 9000-8000 goes down`,
		"sysctl fs.nr_open: no such sysctl: no such file or directory",
		`sysctl net.core.somaxconn: not an integer: "lots"`,
	}
	if got := err.Error(); got != strings.Join(wantErr, "\n") {
		t.Errorf("err:\n%s\nwant:\n%s", got, strings.Join(wantErr, "\n"))
	}
}

// The real host: everything reads, and the limit is this process's.
func TestReadHostFactsHere(t *testing.T) {
	if _, err := os.Stat("/proc/self/limits"); err != nil {
		t.Skip("no /proc")
	}
	h, err := ReadHostFacts(FS{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, hard := NoFile(); h.NoFileHard != hard {
		t.Errorf("NoFileHard = %d, getrlimit says %d", h.NoFileHard, hard)
	}
	if !reflect.DeepEqual(h.OnlineCPUs, OnlineCPUs()) {
		t.Errorf("OnlineCPUs = %v, sched_getaffinity says %v", h.OnlineCPUs, OnlineCPUs())
	}
	if h.PortRangeLow == 0 || h.MemAvailable == 0 || h.FileMax == 0 || h.NrOpen == 0 || h.Somaxconn == 0 || !h.ReservedKnown {
		t.Errorf("missing facts: %+v", h)
	}
}

func TestParseNoFileLimits(t *testing.T) {
	for _, tc := range []struct {
		in         string
		soft, hard uint64
		err        string
	}{
		{in: "Max open files            1024                 20000                files     \n", soft: 1024, hard: 20000},
		{in: "Max open files            unlimited            unlimited            files\n", soft: math.MaxUint64, hard: math.MaxUint64},
		{in: "Max processes 10 10 processes\n", err: `no "Max open files" line`},
		{in: "Max open files            many                 20000                files\n", err: `bad limit "many"`},
	} {
		soft, hard, err := parseNoFileLimits([]byte(tc.in))
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: err = %v, want %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || soft != tc.soft || hard != tc.hard {
			t.Errorf("%q = %d, %d, %v", tc.in, soft, hard, err)
		}
	}
}

func TestParsePortRange(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi int
		err    string
	}{
		{in: "32768\t60999", lo: 32768, hi: 60999},
		{in: "1024 65535", lo: 1024, hi: 65535},
		{in: "1024", err: `want two ports, got "1024"`},
		{in: "0 100", err: `bad range "0 100"`},
		{in: "1024 65536", err: `bad range "1024 65536"`},
		{in: "a 2", err: `bad port "a"`},
	} {
		lo, hi, err := ParsePortRange(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: err = %v, want %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || lo != tc.lo || hi != tc.hi {
			t.Errorf("%q = %d, %d, %v", tc.in, lo, hi, err)
		}
	}
}

func TestParseMemAvailable(t *testing.T) {
	if _, err := parseMemAvailable([]byte("MemTotal: 1 kB\n")); err == nil || err.Error() != "no MemAvailable line (kernel older than 3.14?)" {
		t.Errorf("err = %v", err)
	}
	if _, err := parseMemAvailable([]byte("MemAvailable: 12 MB\n")); err == nil || err.Error() != `bad MemAvailable line "MemAvailable: 12 MB"` {
		t.Errorf("err = %v", err)
	}
}

func TestAssume(t *testing.T) {
	h := HostFacts{PortRangeLow: 32768, PortRangeHigh: 60999, FileMax: 100, NrOpen: 200, Somaxconn: 4096, NoFileHard: 20000}
	got := h.Assume(map[string]string{
		"net.ipv4.ip_local_port_range":     "1024\t65535",
		"fs.nr_open":                       "2097152",
		"net.core.somaxconn":               "bad",
		"net.ipv4.tcp_tw_reuse":            "1",
		"net.ipv4.ip_local_reserved_ports": "9000-9009,8080",
	})
	want := HostFacts{PortRangeLow: 1024, PortRangeHigh: 65535, FileMax: 100, NrOpen: 2097152, Somaxconn: 4096, NoFileHard: 20000,
		ReservedPorts: Ranges{{8080, 8080}, {9000, 9009}}, ReservedKnown: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Assume = %+v, want %+v", got, want)
	}
	if h.PortRangeLow != 32768 {
		t.Error("Assume changed its receiver")
	}
}
