package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/testenv"
)

// MQTT as a user runs it: plans/mqtt.yaml starts Debian's mosquitto by its
// command: (measured as a process tree) and runs the script; a broker that
// refuses anonymous clients fails the connect phase with MQTT's reason in
// the table and the JSON. Without mosquitto the tests skip.

// mosquittoConf finds mosquitto (the test skips without it) and writes a
// configuration for it in dir (prototest's, as the broker tests run it)
// with a websockets listener on a free loopback port (returned), its
// extra lines after; the plan's command: starts it.
func mosquittoConf(t *testing.T, dir string, extra ...string) (bin, conf string, port int) {
	t.Helper()
	bin = prototest.MosquittoBin(t)
	conf, addr, err := prototest.WriteMosquittoConf(dir, prototest.MosquittoConf{Lines: extra})
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(addr)
	port, err = strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return bin, conf, port
}

// TestMQTTPlan runs plans/mqtt.yaml as the README says, scaled down (200
// users, 20 QoS 1 publishes each; 4 topics × 25 subscribers for 2 s), in
// MQTT 5 and 3.1.1.
func TestMQTTPlan(t *testing.T) {
	testenv.Slow(t, "plans/mqtt.yaml against mosquitto: 6 s; TestInitMQTT and the fault matrix run mosquitto every run")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"5", "3.1.1"} {
		t.Run(version, func(t *testing.T) {
			out := t.TempDir()
			bin, conf, port := mosquittoConf(t, out, "allow_anonymous true")
			r := startWsplan(t, root, "run", "plans/mqtt.yaml", "--set", "version="+version,
				"--set", "mosquitto="+bin, "--set", "conf="+conf, "--set", "port="+strconv.Itoa(port),
				"--set", "users=200", "--set", "publishes=20", "--set", "rooms=4", "--set", "room_size=25", "--set", "duration=2s",
				"--progress", "off", "--json", filepath.Join(out, "r.json"), "--out", filepath.Join(out, "logs"))
			if code := r.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, r.stderrText(), r.stdout.String())
			}
			res := readJSON(t, filepath.Join(out, "r.json"))
			if len(res.Results) != 2 {
				t.Fatalf("got %d results, want the script's and the broadcast's", len(res.Results))
			}
			x := res.Results[0]
			m := x.Metrics
			if !x.OK || x.Resources != "tree" || m["suback_count"] != 200.0 || m["delivery_count"] != 200.0 || m["puback_count"] != 4000.0 ||
				m["timeouts"] != 0.0 || m["mismatched"] != 0.0 || m["unexpected"] != 0.0 {
				t.Errorf("ok=%v error=%q resources=%q metrics %v", x.OK, x.Error, x.Resources, m)
			}
			if p99, ok := m["puback_p99"].(float64); !ok || p99 <= 0 {
				t.Errorf("puback_p99 = %v, want the PUBACKs' latency", m["puback_p99"])
			}
			b := res.Results[1]
			if m := b.Metrics; !b.OK || b.Phase != "broadcast" || m["lost"] != 0.0 || m["deliveries"] != m["delivered"] || m["delivered"].(float64) < 2000 {
				t.Errorf("broadcast: ok=%v error=%q metrics %v, want every delivery of 4 topics × 25 at 10/s for 2 s", b.OK, b.Error, b.Metrics)
			}
			if !strings.Contains(r.stdout.String(), "| puback ") {
				t.Errorf("no puback row in the exchanges table:\n%s", r.stdout.String())
			}
		})
	}
}

// TestMQTTRefusedPlan: mosquitto without anonymous clients answers CONNECT
// with a refusal; the connect phase fails with MQTT's own reason, by
// version, in the table and the JSON (exit 1, a failed row).
func TestMQTTRefusedPlan(t *testing.T) {
	testenv.Slow(t, "3 s: refusals by a fake broker, per MQTT version")
	t.Parallel()
	for _, tc := range []struct{ version, reason string }{
		{"5", "mqtt: connack: not authorized (135)"},
		{"3.1.1", "mqtt: connack: not authorized (5)"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			dir := t.TempDir()
			bin, conf, port := mosquittoConf(t, dir, "allow_anonymous false")
			plan := fmt.Sprintf(`name: refused
servers:
  - name: mosquitto
    command: [%q, -c, %q]
    addrs: ["127.0.0.1:%d"]
    path: /mqtt
    protocol: {name: mqtt, version: %q}
phases:
  - connect: {connections: 50, retries: -1}
`, bin, conf, port, tc.version)
			if err := os.WriteFile(filepath.Join(dir, "refused.yaml"), []byte(plan), 0o644); err != nil {
				t.Fatal(err)
			}
			r := startWsplan(t, dir, "run", "refused.yaml", "--progress", "off", "--json", "r.json", "--out", "logs")
			if code := r.wait(t, time.Minute); code != 1 {
				t.Fatalf("exit %d, want 1 (a failed phase); stderr:\n%s\nstdout:\n%s", code, r.stderrText(), r.stdout.String())
			}
			want := "50 of 50 connections failed: " + tc.reason + " ×50"
			res := readJSON(t, filepath.Join(dir, "r.json"))
			if len(res.Results) != 1 || res.Results[0].OK || res.Results[0].Error != want {
				t.Fatalf("results %+v, want a failed connect with %q", res.Results, want)
			}
			if !strings.Contains(r.stdout.String(), "FAIL: 50 of 50 connections failed") || !strings.Contains(r.stdout.String(), want) {
				t.Errorf("the table does not say why:\n%s", r.stdout.String())
			}
		})
	}
}
