package script

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto/mqtt"
	"github.com/wsplan/wsplan/internal/prototest"
	lang "github.com/wsplan/wsplan/internal/script"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/units"
)

// MQTT through script phases against mosquitto, started by
// prototest.StartMosquitto as internal/client's tests start it.

// mqttClient makes a client of the MQTT protocol.
func mqttClient(t testing.TB, addr string, o mqtt.Settings) *client.Client {
	t.Helper()
	return clienttest.NewClient(t, client.Options{Targets: []string{addr}, Path: "/mqtt", Loops: 2, NoDelay: true, Protocol: client.ProtocolOptions{Name: mqtt.Name, Settings: &o}})
}

// runMQTTScript runs a script phase of users users on c.
func runMQTTScript(t *testing.T, c *client.Client, users int, doc string) *Result {
	t.Helper()
	var p Params
	p.Steps = steps(t, doc)
	p.Users, p.Iterations = users, 1
	p.Timeout, p.ConnectTimeout = units.Duration(5*time.Second), units.Duration(5*time.Second)
	if strings.Contains(doc, "ignore_events") {
		p.Ignore = []lang.Match{{Type: "event"}}
	}
	res, err := c.Run(t.Context(), &p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.(*Result)
}

// exchange returns the script's exchange named name.
func exchange(t *testing.T, r *Result, name string) *Exchange {
	t.Helper()
	e := r.Exchanges[name]
	if e == nil {
		t.Fatalf("no exchange %q in %v", name, r.Exchanges)
	}
	return e
}

// wantExchange checks an exchange completed n times without failures, with
// latencies recorded.
func wantExchange(t *testing.T, r *Result, name string, n int64) {
	t.Helper()
	e := exchange(t, r, name)
	if e.Count != n || e.Timeouts != 0 || e.Mismatched != 0 || e.Failed != 0 || e.Errors != 0 {
		t.Errorf("%s: count %d timeouts %d mismatched %d failed %d errors %d, want %d completed, no failure",
			name, e.Count, e.Timeouts, e.Mismatched, e.Failed, e.Errors, n)
	}
	if got := e.Latency.TotalCount(); got != n || e.Latency.ValueAtQuantile(99) <= 0 {
		t.Errorf("%s: %d latencies, p99 %d ns, want %d recorded", name, got, e.Latency.ValueAtQuantile(99), n)
	}
}

// TestMQTTScriptMosquitto: users subscribe (SUBACK), publish at QoS 0 and
// get their message back by topic, publish at QoS 1 (PUBACK) and QoS 2
// (PUBCOMP), and unsubscribe (UNSUBACK), on mosquitto, in 3.1.1 and 5.
func TestMQTTScriptMosquitto(t *testing.T) {
	addr := prototest.StartMosquitto(t)
	const users, n = 20, 50
	doc := fmt.Sprintf(`
steps:
  - subscribe: {topic: "wsplan/u/{{.conn}}", as: suback}
  - publish: {topic: "wsplan/u/{{.conn}}", payload: 'hello {{.conn}}'}
  - expect: {type: event, topic: "wsplan/u/{{.conn}}", prefix: "hello {{.conn}}", as: delivery}
  - loop:
      count: %d
      inflight: 4
      steps:
        - publish: {topic: "wsplan/none/{{.conn}}", payload: '{"n":{{.seq}}}', qos: 1, as: puback}
  - loop:
      count: %d
      steps:
        - publish: {topic: "wsplan/none/{{.conn}}", payload: '{"n":{{.seq}}}', qos: 2, as: pubcomp}
  - unsubscribe: {topic: "wsplan/u/{{.conn}}", as: unsuback}
`, n, n)
	for _, v := range prototest.MQTTVersions {
		t.Run("v"+v, func(t *testing.T) {
			r := runMQTTScript(t, mqttClient(t, addr, mqtt.Settings{Version: v}), users, doc)
			if r.Finished != users || r.Aborted != 0 || r.Unexpected != 0 || len(r.Errors) != 0 || len(r.Failures) != 0 {
				t.Fatalf("finished %d aborted %d unexpected %d errors %v failures %v (open: %v), want %d users through",
					r.Finished, r.Aborted, r.Unexpected, r.Errors, r.Failures, r.OpenErrors, users)
			}
			wantExchange(t, r, "suback", users)
			wantExchange(t, r, "delivery", users)
			wantExchange(t, r, "puback", users*n)
			wantExchange(t, r, "pubcomp", users*n)
			wantExchange(t, r, "unsuback", users)
		})
	}
}

// TestMQTTQoSDeliveriesMosquitto: the broker's own QoS 1 and 2 deliveries
// are acknowledged by the protocol (PUBACK; PUBREC, then PUBCOMP to its
// PUBREL): every user gets every message it published to its own topic.
// Without those answers mosquitto stops at its 20 messages in flight per
// client, and the count falls short.
func TestMQTTQoSDeliveriesMosquitto(t *testing.T) {
	testenv.Slow(t, "1 s: QoS deliveries through mosquitto")
	addr := prototest.StartMosquitto(t)
	const users, n = 10, 100
	doc := fmt.Sprintf(`
# ignore_events
steps:
  - subscribe: {topic: "wsplan/self/{{.conn}}", qos: 2, as: suback}
  - loop:
      count: %d
      steps:
        - publish: {topic: "wsplan/self/{{.conn}}", payload: 'one {{.seq}}', qos: 1, as: puback}
        - publish: {topic: "wsplan/self/{{.conn}}", payload: 'two {{.seq}}', qos: 2, as: pubcomp}
  - think: 200ms
`, n)
	for _, v := range prototest.MQTTVersions {
		t.Run("v"+v, func(t *testing.T) {
			r := runMQTTScript(t, mqttClient(t, addr, mqtt.Settings{Version: v}), users, doc)
			if r.Finished != users || r.Unexpected != 0 || len(r.Failures) != 0 {
				t.Fatalf("finished %d unexpected %d failures %v, want %d users through", r.Finished, r.Unexpected, r.Failures, users)
			}
			wantExchange(t, r, "puback", users*n)
			wantExchange(t, r, "pubcomp", users*n)
			if r.Ignored != 2*users*n {
				t.Errorf("deliveries %d, want %d: every QoS 1 and 2 message back to its publisher", r.Ignored, 2*users*n)
			}
		})
	}
}

// TestMQTTAnswersMosquitto: mosquitto with max_inflight_messages 4
// announces a Receive Maximum of 4 to MQTT 5 clients and refuses QoS 2
// publishes past it (PUBREC 0x97): a loop with inflight 16 is held to 4
// and none is refused. Its ACL refuses a publish it does not allow with
// PUBACK 0x87, an error answer counted by code.
func TestMQTTAnswersMosquitto(t *testing.T) {
	dir := t.TempDir()
	acl := filepath.Join(dir, "acl")
	if err := os.WriteFile(acl, []byte("topic readwrite wsplan/ok/#\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := prototest.StartMosquitto(t, "allow_anonymous true", "max_inflight_messages 4", "acl_file "+acl)
	const users, n = 10, 100
	c := mqttClient(t, addr, mqtt.Settings{Version: mqtt.Version5})
	r := runMQTTScript(t, c, users, fmt.Sprintf(`
steps:
  - loop:
      count: %d
      inflight: 16
      steps:
        - publish: {topic: "wsplan/ok/{{.conn}}", payload: 'n {{.seq}}', qos: 2, as: pub}
  - loop:
      count: 3
      steps:
        - publish: {topic: "wsplan/denied/{{.conn}}", payload: x, qos: 1, as: denied}
`, n))
	wantExchange(t, r, "pub", users*n)
	if r.ReceiveMax != 4 || r.Throttled != users || len(r.ErrorAnswers) != 1 {
		t.Errorf("receive maximum %d, throttled %d, error answers %v: want 4, %d, only the denied", r.ReceiveMax, r.Throttled, r.ErrorAnswers, users)
	}
	if e := exchange(t, r, "denied"); e.Errors != 3*users || e.Count != 0 || r.ErrorAnswers["mqtt 0x87 not authorized"] != 3*users {
		t.Errorf("denied: %+v, error answers %v: want %d × mqtt 0x87 not authorized", e, r.ErrorAnswers, 3*users)
	}
}
