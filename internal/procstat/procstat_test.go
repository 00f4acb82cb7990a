package procstat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var fixtures = FS{Root: "testdata/proc", PageSize: 4096}

func TestParseStatFixtures(t *testing.T) {
	tests := []struct {
		pid  int
		want Stat
	}{
		{1234, Stat{
			PID: 1234, Comm: "wsplan serve", State: 'S', PPID: 1200,
			UTime: 45210 * time.Millisecond, STime: 18730 * time.Millisecond,
			NumThreads: 9, StartTime: 321 * time.Second, VSize: 1263566848, RSSPages: 17563,
		}},
		// comm "ws) R 1 (x y": spaces, a ')' and fields that look like the
		// real ones; only parsing from the last ')' gets state R, ppid 4100.
		{4242, Stat{
			PID: 4242, Comm: "ws) R 1 (x y", State: 'R', PPID: 4100,
			UTime: 70 * time.Millisecond, STime: 20 * time.Millisecond,
			NumThreads: 1, StartTime: 987650 * time.Millisecond, VSize: 3133440, RSSPages: 425,
		}},
		{999, Stat{
			PID: 999, Comm: "(sd-pam)", State: 'Z', PPID: 1200,
			UTime: 120 * time.Millisecond, STime: 50 * time.Millisecond,
			NumThreads: 1, StartTime: 41 * time.Second,
		}},
	}
	for _, tt := range tests {
		got, err := fixtures.ReadStat(tt.pid)
		if err != nil {
			t.Fatalf("ReadStat(%d): %v", tt.pid, err)
		}
		if got != tt.want {
			t.Errorf("ReadStat(%d) =\n  %+v\nwant\n  %+v", tt.pid, got, tt.want)
		}
	}

	st, _ := fixtures.ReadStat(1234)
	if got, want := st.CPU(), 63940*time.Millisecond; got != want {
		t.Errorf("CPU() = %v, want %v", got, want)
	}
	if got, want := st.RSS(4096), int64(71938048); got != want {
		t.Errorf("RSS(4096) = %d, want %d", got, want)
	}
	if st.Exited() {
		t.Errorf("pid 1234 (state S) reported as exited")
	}
	if zombie, _ := fixtures.ReadStat(999); !zombie.Exited() {
		t.Errorf("pid 999 (state Z) not reported as exited")
	}
}

func TestParseStatErrors(t *testing.T) {
	full := "1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 9 10 11 12"
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty", "", "no (comm)"},
		{"no parens", "1 init S 0", "no (comm)"},
		{"bad pid", "x (init) S 0", "pid"},
		{"short", "1 (init) S 0 1 1", "fields after comm"},
		{"bad state", strings.Replace(full, " S ", " SS ", 1), "state"},
		{"bad utime", strings.Replace(full, " 5 6 ", " x 6 ", 1), "utime (field 14)"},
		{"bad rss", strings.Replace(full, " 11 12", " -x 12", 1), "rss (field 24)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseStat([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseStat(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
	if _, err := ParseStat([]byte(full + "\n")); err != nil {
		t.Fatalf("ParseStat(valid): %v", err)
	}
}

func TestReadStatMissingIsExited(t *testing.T) {
	_, err := fixtures.ReadStat(5555)
	if !errors.Is(err, ErrExited) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadStat(missing) = %v, want ErrExited and ErrNotExist", err)
	}
}

func TestParseStatus(t *testing.T) {
	got, err := fixtures.ReadStatus(1234)
	if err != nil {
		t.Fatal(err)
	}
	want := Status{
		Name: "wsplan serve", State: 'S', Threads: 9,
		VmPeak: 1302472 * 1024, VmSize: 1233952 * 1024,
		VmHWM: 81236 * 1024, VmRSS: 70252 * 1024,
	}
	if got != want {
		t.Errorf("ReadStatus(1234) =\n  %+v\nwant\n  %+v", got, want)
	}
	if _, err := ParseStatus([]byte("VmRSS:\t12 MB\n")); err == nil {
		t.Errorf("ParseStatus accepted an unknown unit")
	}
}

func TestParseMeminfo(t *testing.T) {
	got, err := fixtures.ReadMeminfo()
	if err != nil {
		t.Fatal(err)
	}
	want := Meminfo{MemTotal: 24683548 * 1024, MemFree: 24131040 * 1024, MemAvailable: 24269640 * 1024}
	if got != want {
		t.Errorf("ReadMeminfo() = %+v, want %+v", got, want)
	}
	if _, err := ParseMeminfo([]byte("MemFree: 1 kB\n")); err == nil {
		t.Errorf("ParseMeminfo without MemTotal: no error")
	}
	if _, err := ParseMeminfo([]byte("MemTotal: lots kB\n")); err == nil {
		t.Errorf("ParseMeminfo with a bad number: no error")
	}
}

func TestParseCPUInfo(t *testing.T) {
	got, err := fixtures.ReadCPUInfo()
	if err != nil {
		t.Fatal(err)
	}
	if want := (CPUInfo{Model: "AMD EPYC 7B13 64-Core Processor", CPUs: 2}); got != want {
		t.Errorf("ReadCPUInfo() = %+v, want %+v", got, want)
	}
	arm := "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n"
	got, err = ParseCPUInfo([]byte(arm))
	if err != nil {
		t.Fatal(err)
	}
	if want := (CPUInfo{Model: "BCM2835", CPUs: 2}); got != want {
		t.Errorf("ParseCPUInfo(arm) = %+v, want %+v", got, want)
	}
	if _, err := ParseCPUInfo(nil); err == nil {
		t.Errorf("ParseCPUInfo(empty): no error")
	}
}

func TestHostInfo(t *testing.T) {
	got, err := HostInfo(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	want := Host{Kernel: "6.8.0-49-generic", CPUModel: "AMD EPYC 7B13 64-Core Processor", Cores: 2, MemTotal: 24683548 * 1024}
	if got != want {
		t.Errorf("HostInfo() = %+v, want %+v", got, want)
	}

	// A root with only cpuinfo: the rest is reported, not fatal.
	dir := t.TempDir()
	b, _ := os.ReadFile("testdata/proc/cpuinfo")
	if err := os.WriteFile(filepath.Join(dir, "cpuinfo"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = HostInfo(FS{Root: dir})
	if err == nil || !strings.Contains(err.Error(), "osrelease") || !strings.Contains(err.Error(), "meminfo") {
		t.Errorf("HostInfo(partial) error = %v, want one naming osrelease and meminfo", err)
	}
	if got.Cores != 2 || got.Kernel != "" {
		t.Errorf("HostInfo(partial) = %+v, want Cores 2 and no kernel", got)
	}
}

func TestHostInfoLive(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	h, err := HostInfo(FS{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Kernel == "" || h.Cores < 1 || h.MemTotal < 1<<20 {
		t.Errorf("HostInfo(/proc) = %+v: implausible", h)
	}
}

func TestParseSoftirq(t *testing.T) {
	stat := []byte(`cpu  100 0 200 3000 0 0 77 0 0 0
cpu0 50 0 100 1500 0 0 12 0 0 0
cpu1 50 0 100 1500 0 0 65 0 0 0
cpu10 1 0 1 1 0 0 1000 0 0 0
intr 1 2 3
`)
	for _, c := range []struct {
		cpus []int
		want time.Duration
	}{{[]int{0}, 120 * time.Millisecond}, {[]int{1}, 650 * time.Millisecond}, {[]int{0, 1}, 770 * time.Millisecond}, {[]int{10}, 10 * time.Second}} {
		got, err := ParseSoftirq(stat, c.cpus)
		if err != nil || got != c.want {
			t.Errorf("ParseSoftirq(%v) = %v, %v; want %v", c.cpus, got, err, c.want)
		}
	}
	if _, err := ParseSoftirq(stat, []int{2}); err == nil {
		t.Error("a missing CPU gave no error")
	}
	if _, err := ParseSoftirq([]byte("cpu0 1 2 3 4 5 6 x 8\n"), []int{0}); err == nil {
		t.Error("a bad figure gave no error")
	}
}

func TestParseSchedstat(t *testing.T) {
	run, wait, err := ParseSchedstat([]byte("4641630 140937 3\n"))
	if err != nil || run != 4641630 || wait != 140937 {
		t.Errorf("got %v %v %v, want 4.64163ms 140.937µs", run, wait, err)
	}
	for _, bad := range []string{"", "12", "a b c"} {
		if _, _, err := ParseSchedstat([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if w, err := (FS{}).RunQueueWait(0); err != nil || w < 0 {
		t.Errorf("RunQueueWait(self): %v, %v", w, err)
	}
}
