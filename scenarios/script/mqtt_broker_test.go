package script

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto/mqtt"
	lang "github.com/wsplan/wsplan/internal/script"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// MQTT through script phases against mosquitto. mosquittoBin and
// startMosquitto are a copy of internal/client's (proto_mqtt_broker_test.go):
// a kind's tests cannot import the core's, and a package that tests share
// may not start processes (internal/layering).

// mosquittoBin finds mosquitto (Debian puts it in /usr/sbin).
func mosquittoBin(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto"
	}
	t.Skip("no mosquitto: install Debian's mosquitto (apt-get install mosquitto) to run the MQTT broker tests")
	return ""
}

// startMosquitto runs mosquitto with a websockets listener on a free
// 127.0.0.1 port and the extra configuration lines (default: anonymous
// clients allowed) until the test ends; it returns the listener's address.
func startMosquitto(t testing.TB, extra ...string) string {
	t.Helper()
	bin := mosquittoBin(t)
	addr := testserver.ClosedAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	_, plain, _ := net.SplitHostPort(testserver.ClosedAddr(t))
	// mosquitto 2.0.11 (Debian 12) will not start with websockets
	// listeners only: a plain MQTT listener, which the tests do not use,
	// comes first.
	conf := []string{"listener " + plain + " 127.0.0.1", "listener " + port + " 127.0.0.1", "protocol websockets",
		"persistence false", "log_dest stderr", "log_type error", "log_type warning"}
	if len(extra) == 0 {
		extra = []string{"allow_anonymous true"}
	}
	if u, err := osuser.Current(); err == nil {
		// Started as root, mosquitto becomes the user "mosquitto", who may
		// not read the test's files: it stays who the test is.
		conf = append(conf, "user "+u.Username)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(file, []byte(strings.Join(append(conf, extra...), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "mosquitto.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	log := func() string { b, _ := os.ReadFile(logf.Name()); return string(b) }
	cmd := exec.Command(bin, "-c", file)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mosquitto: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // its pid: ours to stop
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("mosquitto's log:\n%s", log())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp4", addr)
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case <-done:
			t.Fatalf("mosquitto exited; its log:\n%s", log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto does not listen on %s: %v; its log:\n%s", addr, err, log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mqttVersions are the versions every broker test runs with.
var mqttVersions = []string{mqtt.Version311, mqtt.Version5}

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
	addr := startMosquitto(t)
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
	for _, v := range mqttVersions {
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
	addr := startMosquitto(t)
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
	for _, v := range mqttVersions {
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
	addr := startMosquitto(t, "allow_anonymous true", "max_inflight_messages 4", "acl_file "+acl)
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
