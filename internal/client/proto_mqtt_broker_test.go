package client

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"

	"github.com/wsplan/wsplan/internal/proto/mqtt"
	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/units"
)

// The MQTT protocol against a real broker: Debian's mosquitto (2.x) with
// a websockets listener, started by the test on a free loopback port with
// its own configuration and stopped by its process group
// (prototest.StartMosquitto). Without mosquitto the tests skip, saying
// how to get it.

// mqttClient makes a client of the MQTT protocol.
func mqttClient(t testing.TB, addr string, o mqtt.Settings) *Client {
	t.Helper()
	return newClient(t, Options{Targets: []string{addr}, Path: "/mqtt", Loops: 2, NoDelay: true, Protocol: ProtocolOptions{Name: mqtt.Name, Settings: &o}})
}

// TestMQTTRefusedMosquitto: a broker that wants a login refuses anonymous
// clients in CONNACK; the attempts fail with MQTT's own reason, by version.
// With the right user and password they open.
func TestMQTTRefusedMosquitto(t *testing.T) {
	testenv.Slow(t, "a mosquitto of its own and six clients, 0.2 s each: over a second; TestMQTTGreetingFake checks refusals by version")
	dir := t.TempDir()
	pw := filepath.Join(dir, "passwd")
	if err := os.WriteFile(pw, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tool, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		tool = "/usr/bin/mosquitto_passwd"
	}
	if out, err := exec.Command(tool, "-b", pw, "bench", "s3cret").CombinedOutput(); err != nil {
		t.Skipf("mosquitto_passwd: %v: %s", err, out)
	}
	addr := prototest.StartMosquitto(t, "allow_anonymous false", "password_file "+pw)
	for _, tc := range []struct {
		version, user, pass string
		want                Reason
	}{
		{mqtt.Version311, "", "", "mqtt: connack: not authorized (5)"},
		{mqtt.Version5, "", "", "mqtt: connack: not authorized (135)"},
		{mqtt.Version311, "bench", "wrong", "mqtt: connack: not authorized (5)"},
		{mqtt.Version5, "bench", "wrong", "mqtt: connack: not authorized (135)"},
		{mqtt.Version311, "bench", "s3cret", ""},
		{mqtt.Version5, "bench", "s3cret", ""},
	} {
		t.Run(tc.version+"/"+tc.user+"/"+tc.pass, func(t *testing.T) {
			c := mqttClient(t, addr, mqtt.Settings{Version: tc.version, Username: tc.user, Password: tc.pass})
			res, err := c.Connect(t.Context(), ConnectParams{Connections: 10, Concurrency: 10, Timeout: units.Duration(5 * time.Second)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if res.Success != 10 || res.Greeting.TotalCount() != 10 {
					t.Fatalf("success %d greetings %d errors %v, want 10 open", res.Success, res.Greeting.TotalCount(), res.Errors)
				}
				return
			}
			if res.Success != 0 || res.Failed != 10 || res.Errors[tc.want] != 10+res.Retried {
				t.Fatalf("success %d failed %d errors %v, want every attempt failed with %q", res.Success, res.Failed, res.Errors, tc.want)
			}
		})
	}
}

// TestMQTTKeepaliveMosquitto: without PINGREQ (mqtt.NoPing), mosquitto
// drops every connection of a 2 s keepalive after 1.5 × keepalive, and
// when it does is measured here (a loaded host checks late); then, with
// PINGREQ when idle, connections held that long and a keepalive more stay
// open. So the test can fail on any host: a client that did not ping
// would be dropped within the hold.
func TestMQTTKeepaliveMosquitto(t *testing.T) {
	testenv.Slow(t, "20 s of idle connections: mosquitto drops the silent ones after 5 s here; TestMQTTKeepaliveFake checks the client's side")
	const keepalive = 2 * time.Second
	addr := prototest.StartMosquitto(t)
	mqtt.NoPing = true
	c := mqttClient(t, addr, mqtt.Settings{Version: mqtt.Version311, Keepalive: units.Duration(keepalive)})
	mustConnect(t, c, 20)
	start := time.Now()
	var dropped time.Duration
	for dropped == 0 && time.Since(start) < 10*keepalive {
		res, err := idle(t.Context(), c, keepalive/4, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Alive == 0 {
			dropped = time.Since(start)
		}
	}
	mqtt.NoPing = false
	switch {
	case dropped == 0:
		t.Fatalf("connections alive %v without PINGREQ: want mosquitto to drop them all (the test cannot fail otherwise)", 10*keepalive)
	case dropped < keepalive:
		t.Fatalf("connections dropped after %v, within a keepalive of silence: not for their silence", dropped)
	}
	hold := max(3*keepalive, dropped+keepalive)
	t.Logf("without PINGREQ dropped after %v; holding %v with them", dropped.Round(time.Millisecond), hold.Round(time.Millisecond))
	for _, v := range prototest.MQTTVersions {
		t.Run("v"+v, func(t *testing.T) {
			c := mqttClient(t, addr, mqtt.Settings{Version: v, Keepalive: units.Duration(keepalive)})
			mustConnect(t, c, 20)
			res, err := idle(t.Context(), c, hold, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Alive != 20 || len(res.Errors) != 0 {
				t.Fatalf("alive %d of %d, errors %v: want every connection kept by its PINGREQs", res.Alive, res.Conns, res.Errors)
			}
		})
	}
}
