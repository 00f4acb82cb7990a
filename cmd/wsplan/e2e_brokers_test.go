package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
)

// TestBrokersPlan runs plans/brokers.yaml as the README says, scaled down
// (4 rooms × 25 at 2 msg/s for 2 s: 400 deliveries a row): mosquitto,
// RabbitMQ's Web STOMP and the socket.io app started by the plan's
// command:, and the gws preset's raw /broadcast, one table. It skips
// unless all three are installed. RabbitMQ boots here once more than in
// TestSTOMP (the plan's command: is what it checks), never beside it:
// the package's tests run one at a time.
func TestBrokersPlan(t *testing.T) {
	testenv.Slow(t, "boots a RabbitMQ node and runs three brokers: 13 s")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	needRabbitMQ(t)
	needNodeExample(t, root, "socketio", "socket.io")
	out := t.TempDir()
	mosquitto, conf, mqttPort := mosquittoConf(t, out, "allow_anonymous true")
	r := startWsplan(t, root, "run", "plans/brokers.yaml",
		"--set", "mosquitto="+mosquitto, "--set", "mqtt_conf="+conf, "--set", "mqtt_port="+strconv.Itoa(mqttPort),
		"--set", "stomp_port="+strconv.Itoa(freeBasePort(t, 3)), "--set", "sio_port="+strconv.Itoa(freeBasePort(t, 1)),
		"--set", "gws_port="+strconv.Itoa(freeBasePort(t, 4)),
		"--set", "rooms=4", "--set", "room_size=25", "--set", "rate=2", "--set", "duration=2s",
		"--progress", "off", "--json", filepath.Join(out, "r.json"), "--out", filepath.Join(out, "logs"))
	// Exit 1 is an assertion: at this scale opening the connections is
	// most of each side's CPU, and the client may cost more than an idle
	// server; nothing may be lost, whatever the exit.
	if code := r.wait(t, 4*time.Minute); code != 0 && code != 1 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, r.stderrText(), r.stdout.String())
	}
	res := readJSON(t, filepath.Join(out, "r.json"))
	want := []string{"mosquitto", "rabbitmq", "socketio", "gws"}
	if len(res.Results) != len(want) {
		t.Fatalf("got %d results, want a broadcast row for each of %v; stdout:\n%s", len(res.Results), want, r.stdout.String())
	}
	for i, x := range res.Results {
		m := x.Metrics
		if x.Server != want[i] || x.Phase != "broadcast" || !x.OK {
			t.Errorf("row %d: %s %s ok=%v error %q, want %s's broadcast", i, x.Server, x.Phase, x.OK, x.Error, want[i])
			continue
		}
		// 4 rooms × 1 publisher × 2/s × 2 s × 25 members (the publisher too).
		if m["deliveries"] != 400.0 || m["delivered"] != 400.0 || m["lost"] != 0.0 || m["duplicated"] != 0.0 || m["failed"] != 0.0 {
			t.Errorf("%s: deliveries=%v delivered=%v lost=%v duplicated=%v failed=%v, want 400 delivered intact",
				x.Server, m["deliveries"], m["delivered"], m["lost"], m["duplicated"], m["failed"])
		}
		for _, k := range []string{"delivery_rate", "fanout_p50", "fanout_p99", "server_cpu_per_1m", "client_cpu_per_1m", "mem_per_conn"} {
			if v, ok := m[k].(float64); !ok || v <= 0 {
				t.Errorf("%s: %s = %v, want a figure", x.Server, k, m[k])
			}
		}
		if x.Resources != "tree" {
			t.Errorf("%s: server resources %q, want its process tree", x.Server, x.Resources)
		}
	}
	for _, col := range []string{"Fanout P50", "Fanout P99", "Mem/Sub", "Srv CPU-s/1M", "Cli CPU-s/1M"} {
		if !strings.Contains(r.stdout.String(), col) {
			t.Errorf("the table has no %s column:\n%s", col, r.stdout.String())
		}
	}
	var asserts struct {
		Assertions []struct {
			Server, Expr string
			Pass         bool
		} `json:"assertions"`
	}
	b, err := os.ReadFile(filepath.Join(out, "r.json"))
	if err == nil {
		err = json.Unmarshal(b, &asserts)
	}
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, a := range asserts.Assertions {
		if strings.Contains(a.Expr, "lost == 0") {
			lost++
			if !a.Pass {
				t.Errorf("%s: %s failed", a.Server, a.Expr)
			}
		}
	}
	if lost != len(want) {
		t.Errorf("%d lost == 0 assertions, want one a row", lost)
	}
}
