package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lxzan/gws"

	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/internal/wstls"
)

// Environment of the measurement (TestMeasureTLSCost) and of the echo
// server child it starts.
const (
	measureEnv  = "WSPLAN_MEASURE"     // set to 1 to run the measurement
	childEnv    = "WSPLAN_TEST_SERVER" // child: serve gws echo on this address
	childTLSEnv = "WSPLAN_TEST_SERVER_CA_DIR"
	childKeyEnv = "WSPLAN_TEST_SERVER_KEY" // the certificate's key type (wstls.Key); "" = ECDSA P-256
)

// serveChild is the test binary run as a gws echo server (TLS when a CA
// dir is given): the measurement's server runs in its own process, so the
// client's CPU is the test process's.
func serveChild(addr, caDir string) int {
	up := gws.NewUpgrader(gwsEcho{}, &gws.ServerOption{})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if caDir != "" {
		ca, err := wstls.NewRunCAKey(caDir, wstls.Key(os.Getenv(childKeyEnv)))
		if err == nil {
			var cfg *tls.Config
			if cfg, err = ca.ServerConfig(); err == nil {
				ln = tls.NewListener(ln, cfg)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r)
		if err != nil {
			return
		}
		c.ReadLoop()
	})}
	_ = srv.Serve(ln) // until killed
	return 0
}

// startChild starts the echo server child (TLS with a key of type key
// when caDir is given) and waits until it accepts; it returns its address
// and pid. With WSPLAN_MEASURE_SERVER_CPUS set (a taskset CPU list) the
// child runs on those CPUs.
func startChild(t *testing.T, caDir string, key wstls.Key) (string, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if cpus := os.Getenv("WSPLAN_MEASURE_SERVER_CPUS"); cpus != "" {
		cmd = exec.Command("taskset", "-c", cpus, os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), childEnv+"="+addr, childTLSEnv+"="+caDir, childKeyEnv+"="+string(key))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the child serves until killed
		_ = cmd.Wait()
	})
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			if caDir != "" {
				for j := 0; j < 100; j++ {
					if _, err := os.Stat(caDir + "/ca.pem"); err == nil {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			return addr, cmd.Process.Pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("echo server child did not start")
	return "", 0
}

// TestMeasureTLSCost measures client CPU seconds per million echoes
// (2,000 connections, 200,000 echoes of 1 KiB) against gws, plain and
// behind TLS, in one run, alternating; and the TLS connect figures.
// WSPLAN_MEASURE=1 go test ./internal/client -run MeasureTLSCost -v -count=1
func TestMeasureTLSCost(t *testing.T) {
	if os.Getenv(measureEnv) == "" {
		t.Skip("set " + measureEnv + "=1 to measure")
	}
	caDir := t.TempDir()
	plain, _ := startChild(t, "", "")
	secure, _ := startChild(t, caDir, "")
	const conns, echoes = 2000, 200000
	for rep := 0; rep < 3; rep++ {
		for _, tc := range []struct {
			name string
			addr string
			tls  *TLSOptions
		}{
			{"plain", plain, nil},
			{"tls", secure, &TLSOptions{CAFile: caDir + "/ca.pem"}},
			{"tls resumed", secure, &TLSOptions{CAFile: caDir + "/ca.pem", SessionResumption: true}},
		} {
			c, err := New(Options{Targets: []string{tc.addr}, Loops: 1, NoDelay: true, TLS: tc.tls})
			if err != nil {
				t.Fatal(err)
			}
			cpu0 := processCPU(t)
			cr, err := c.Connect(context.Background(), ConnectParams{Connections: conns, Concurrency: 1000, Timeout: units.Duration(10 * time.Second)}, nil)
			cpu1 := processCPU(t)
			if err != nil || cr.Success != conns {
				c.Close()
				t.Fatalf("%s connect: %+v %v", tc.name, cr.Errors, err)
			}
			// Whole messages both ways, as the echo kind's, without its
			// latencies (a phase of no kind: rounds_test.go).
			er, err := rounds(context.Background(), c, roundsParams{Rounds: echoes / conns, Payload: payloadOf(t, "random", 1024)})
			cpu2 := processCPU(t)
			c.Close()
			if err != nil || er.Failed != 0 {
				t.Fatalf("%s echo: %+v %v", tc.name, er.Errors, err)
			}
			line := fmt.Sprintf("rep %d %-11s connect: %6.0f conns/s, client CPU %5.2f ms/conn", rep, tc.name, float64(conns)/cr.Used.Seconds(), float64(cpu1-cpu0)/1e6/conns)
			if cr.TLS.TotalCount() > 0 {
				line += fmt.Sprintf(", tls p50 %v p99 %v, %.0f handshakes/s, resumed %d", time.Duration(cr.TLS.ValueAtQuantile(50)), time.Duration(cr.TLS.ValueAtQuantile(99)), float64(cr.TLS.TotalCount())/cr.Used.Seconds(), cr.TLSResumed)
			}
			line += fmt.Sprintf("; echo: %6.0f echoes/s, client %5.2f CPU-s per million echoes",
				float64(er.Success)/(cpu2-cpu1).Seconds(), (cpu2-cpu1).Seconds()*1e6/float64(echoes))
			t.Log(strings.TrimSpace(line))
		}
	}
}
