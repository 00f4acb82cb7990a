package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/internal/wstls"
)

// childCPU is the CPU time a child process has used (/proc/<pid>/stat
// utime+stime, clock ticks of 10 ms).
func childCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// TestMeasureHandshakeStorm measures a connection storm against a gws
// child over TLS: client and server CPU per handshake, handshakes/s and
// tls_p50/p99, for ECDSA P-256 and RSA-2048 certificates, TLS 1.3 and
// 1.2, full and resumed. WSPLAN_STORM_CONNS (default 2000) and
// WSPLAN_STORM_CONC (1000) shape it, WSPLAN_STORM_REPS repeats it;
// WSPLAN_STORM_ONLY=ecdsa-p256/1.3/full keeps one case (any of the
// three parts may be left out). Run the client on one CPU and the server
// on another:
//
//	WSPLAN_MEASURE=1 WSPLAN_MEASURE_SERVER_CPUS=0 taskset -c 1 go test ./internal/client -run MeasureHandshakeStorm -v -count=1
func TestMeasureHandshakeStorm(t *testing.T) {
	if os.Getenv(measureEnv) == "" {
		t.Skip("set " + measureEnv + "=1 to measure")
	}
	conns := envInt("WSPLAN_STORM_CONNS", 2000)
	conc := envInt("WSPLAN_STORM_CONC", 1000)
	reps := envInt("WSPLAN_STORM_REPS", 1)
	only := os.Getenv("WSPLAN_STORM_ONLY")
	type server struct {
		addr, ca string
		pid      int
	}
	servers := map[wstls.Key]server{}
	for _, key := range wstls.Keys {
		dir := t.TempDir()
		addr, pid := startChild(t, dir, key)
		servers[key] = server{addr, dir + "/ca.pem", pid}
	}
	for rep := 0; rep < reps; rep++ {
		for _, key := range wstls.Keys {
			for _, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
				for _, resume := range []bool{false, true} {
					mode := "full"
					if resume {
						mode = "resumed"
					}
					name := fmt.Sprintf("%s/%s/%s", key, strings.TrimPrefix(tls.VersionName(v), "TLS "), mode)
					if only != "" && !strings.Contains(name, only) {
						continue
					}
					srv := servers[key]
					line := stormOnce(t, srv.addr, srv.pid, &TLSOptions{CAFile: srv.ca, SessionResumption: resume, MaxVersion: v}, conns, conc)
					t.Logf("rep %d %-24s %s", rep, name, line)
				}
			}
		}
	}
}

// stormOnce opens conns connections at concurrency conc with a fresh
// client and describes what they cost.
func stormOnce(t *testing.T, addr string, pid int, o *TLSOptions, conns, conc int) string {
	c, err := New(Options{Targets: []string{addr}, Loops: envInt("WSPLAN_STORM_LOOPS", 1), NoDelay: true, TLS: o})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if o.SessionResumption { // a first connection fills the session cache
		if r, err := c.Connect(context.Background(), ConnectParams{Connections: 1, Concurrency: 1, Timeout: units.Duration(10 * time.Second)}, nil); err != nil || r.Success != 1 {
			t.Fatalf("prime: %+v %v", r.Errors, err)
		}
	}
	cpu0, srv0 := processCPU(t), childCPU(t, pid)
	cr, err := c.Connect(context.Background(), ConnectParams{Connections: conns, Concurrency: conc, Timeout: units.Duration(30 * time.Second)}, nil)
	cpu1, srv1 := processCPU(t), childCPU(t, pid)
	if err != nil || cr.Success != int64(conns) {
		t.Fatalf("connect: %+v %v", cr.Errors, err)
	}
	cli, srv := (cpu1-cpu0).Seconds()*1e6/float64(conns), (srv1-srv0).Seconds()*1e6/float64(conns)
	return fmt.Sprintf("%6.0f hs/s  client %4.0f µs/hs  server %4.0f µs/hs  (%.2f×)  tls p50 %v p99 %v  resumed %d",
		float64(conns)/cr.Used.Seconds(), cli, srv, cli/srv,
		time.Duration(cr.TLS.ValueAtQuantile(50)).Round(time.Millisecond), time.Duration(cr.TLS.ValueAtQuantile(99)).Round(time.Millisecond), cr.TLSResumed)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// selfRSS is this process's resident set size (/proc/self/statm).
func selfRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestMeasureStormMemory measures the client's RSS per connection after
// a storm (WSPLAN_STORM_CONNS, default 10,000), plain and over TLS, with
// the handshakes' garbage returned (a GC and debug.FreeOSMemory after the
// phase):
//
//	WSPLAN_MEASURE=1 go test ./internal/client -run MeasureStormMemory -v -count=1
func TestMeasureStormMemory(t *testing.T) {
	if os.Getenv(measureEnv) == "" {
		t.Skip("set " + measureEnv + "=1 to measure")
	}
	conns := envInt("WSPLAN_STORM_CONNS", 10000)
	dir := t.TempDir()
	plain, _ := startChild(t, "", "")
	secure, _ := startChild(t, dir, "")
	for rep := 0; rep < envInt("WSPLAN_STORM_REPS", 1); rep++ {
		per := map[string]int64{}
		for _, tc := range []struct {
			name string
			addr string
			tls  *TLSOptions
		}{
			{"plain", plain, nil},
			{"tls", secure, &TLSOptions{CAFile: dir + "/ca.pem"}},
			{"tls-resumed", secure, &TLSOptions{CAFile: dir + "/ca.pem", SessionResumption: true}},
		} {
			c, err := New(Options{Targets: []string{tc.addr}, Loops: 1, NoDelay: true, TLS: tc.tls})
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			debug.FreeOSMemory()
			before := selfRSS(t)
			cr, err := c.Connect(context.Background(), ConnectParams{Connections: conns, Concurrency: 1000, Timeout: units.Duration(30 * time.Second)}, nil)
			if err != nil || cr.Success != int64(conns) {
				c.Close()
				t.Fatalf("%s: %+v %v", tc.name, cr.Errors, err)
			}
			runtime.GC()
			debug.FreeOSMemory()
			after := selfRSS(t)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			per[tc.name] = (after - before) / int64(conns)
			if dir := os.Getenv("WSPLAN_STORM_HEAPDIR"); dir != "" { // where the retained memory is
				if f, err := os.Create(dir + "/heap-" + tc.name + ".prof"); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
			}
			t.Logf("rep %d %-12s RSS %d B/conn (heap in use %d MiB)", rep, tc.name, per[tc.name], ms.HeapInuse>>20)
			c.Close()
		}
		t.Logf("rep %d TLS − plain: %d B/conn (resumed: %d)", rep, per["tls"]-per["plain"], per["tls-resumed"]-per["plain"])
	}
}
