package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wsplan/wsplan/internal/testenv"
)

// STOMP against RabbitMQ's Web STOMP plugin (Debian's rabbitmq-server),
// one broker for every test here: an Erlang node takes seconds to boot.
// examples/stomp/rabbitmq.sh starts it apart from any system instance
// (its own node name, ports, epmd and data directory) and the plans
// reach it by url: with its pid, as a running server.

// rabbitMQ is a Web STOMP broker the test started.
type rabbitMQ struct {
	url string
	pid int
}

// needRabbitMQ skips unless RabbitMQ with its Web STOMP plugin is
// installed, and returns the directory of its scripts ($RABBITMQ_BIN,
// else Debian's), which examples/stomp/rabbitmq.sh reads as RABBITMQ_BIN.
func needRabbitMQ(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("RABBITMQ_BIN")
	if bin == "" {
		bin = "/usr/lib/rabbitmq/bin"
	}
	if _, err := os.Stat(filepath.Join(bin, "rabbitmq-server")); err != nil {
		t.Skipf("no %s/rabbitmq-server: install RabbitMQ (Debian: apt-get install rabbitmq-server) or set RABBITMQ_BIN", bin)
	}
	if _, err := exec.LookPath("epmd"); err != nil {
		t.Skip("no epmd on PATH: RabbitMQ's Erlang is incomplete (Debian: apt-get install rabbitmq-server)")
	}
	if m, _ := filepath.Glob("/usr/lib/rabbitmq/lib/rabbitmq_server-*/plugins/rabbitmq_web_stomp-*"); len(m) == 0 && bin == "/usr/lib/rabbitmq/bin" {
		t.Skip("RabbitMQ has no rabbitmq_web_stomp plugin")
	}
	return bin
}

// startRabbitMQ starts examples/stomp/rabbitmq.sh and waits until a STOMP
// CONNECT is answered; it is stopped at the test's end. The test skips
// when RabbitMQ is not installed.
func startRabbitMQ(t *testing.T, root string) *rabbitMQ {
	t.Helper()
	bin := needRabbitMQ(t)
	port := freeBasePort(t, 3)
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "examples/stomp/rabbitmq.sh"), strconv.Itoa(port), dir)
	cmd.Env = append(os.Environ(), "RABBITMQ_BIN="+bin)
	log, err := os.Create(filepath.Join(dir, "rabbitmq.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM} // a killed test stops it too
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // the script stops the node and its epmd
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Error("RabbitMQ did not stop within 60 s of SIGTERM: killed")
		}
	})
	r := &rabbitMQ{url: "ws://127.0.0.1:" + strconv.Itoa(port) + "/ws", pid: cmd.Process.Pid}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := r.connect()
		if err == nil {
			return r
		}
		select {
		case <-done:
			out, _ := os.ReadFile(filepath.Join(dir, "rabbitmq.out"))
			t.Fatalf("RabbitMQ exited before it was ready (%v):\n%s", err, out)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("RabbitMQ's Web STOMP not ready within 2 min: %v", err)
		}
	}
}

// connect opens a STOMP session on r, the readiness check.
func (r *rabbitMQ) connect() error {
	d := websocket.Dialer{Subprotocols: []string{"v12.stomp"}, HandshakeTimeout: 2 * time.Second}
	c, _, err := d.Dial(r.url, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.WriteMessage(websocket.TextMessage, []byte("CONNECT\naccept-version:1.2\nhost:/\nlogin:guest\npasscode:guest\n\n\x00")); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, msg, err := c.ReadMessage()
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(msg), "CONNECTED\n") {
		return errors.New("answered " + strconv.Quote(string(msg)))
	}
	return nil
}

// silent opens a STOMP session with heart-beats every beat both ways,
// never sends one, and returns nil once RabbitMQ closed it (within
// limit, else an error).
func (r *rabbitMQ) silent(beat, limit time.Duration) error {
	d := websocket.Dialer{Subprotocols: []string{"v12.stomp"}, HandshakeTimeout: 2 * time.Second}
	c, _, err := d.Dial(r.url, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	ms := strconv.FormatInt(beat.Milliseconds(), 10)
	if err := c.WriteMessage(websocket.TextMessage, []byte("CONNECT\naccept-version:1.2\nhost:/\nheart-beat:"+ms+","+ms+"\n\n\x00")); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(limit))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				return errors.New("RabbitMQ kept a connection without heart-beats open for " + limit.String())
			}
			return nil // closed by the broker
		}
	}
}

// server is a plan's servers: entry for r, with a protocol mapping.
func (r *rabbitMQ) server(protocol string) string {
	return "servers:\n  - name: rabbitmq\n    url: " + r.url + "\n    pid: " + strconv.Itoa(r.pid) + "\n    protocol: " + protocol + "\n"
}

// runSTOMPPlan runs a plan's text and returns its exit code, stdout and JSON.
func runSTOMPPlan(t *testing.T, root, body string, args ...string) (int, string, jsonRun) {
	t.Helper()
	dir := t.TempDir()
	plan := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"run", plan, "--progress", "off", "--json", filepath.Join(dir, "r.json"), "--out", filepath.Join(dir, "logs")}, args...)
	r := startWsplan(t, root, args...)
	code := r.wait(t, 3*time.Minute)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, r.stderrText(), r.stdout.String())
	}
	return code, r.stdout.String(), readJSON(t, filepath.Join(dir, "r.json"))
}

func TestSTOMP(t *testing.T) {
	testenv.Slow(t, "boots a RabbitMQ node: 15 s")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mq := startRabbitMQ(t, root)

	// plans/stomp.yaml scaled down, its broker the test's: SENDs with
	// receipts (matched by id), each user's own MESSAGEs by destination,
	// and topic fan-out with nothing lost.
	t.Run("plan", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(root, "plans/stomp.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		plan := string(b)
		for _, cut := range []string{"    command: [examples/stomp/rabbitmq.sh, \"${port}\"]\n", "    addrs: [\"127.0.0.1:${port}\"]\n", "    path: /ws\n"} {
			if !strings.Contains(plan, cut) {
				t.Fatalf("plans/stomp.yaml has no %q: update this test", cut)
			}
			plan = strings.Replace(plan, cut, "", 1)
		}
		plan = strings.Replace(plan, "  - name: rabbitmq\n", "  - name: rabbitmq\n    url: "+mq.url+"\n    pid: "+strconv.Itoa(mq.pid)+"\n", 1)
		code, out, res := runSTOMPPlan(t, root, plan, "--set", "users=100", "--set", "sends=5",
			"--set", "rooms=4", "--set", "room_size=25", "--set", "rate=2", "--set", "duration=2s")
		if code != 0 || len(res.Results) != 2 {
			t.Fatalf("exit %d, %d results; stdout:\n%s", code, len(res.Results), out)
		}
		s, b2 := res.Results[0].Metrics, res.Results[1].Metrics
		if s["subscribe_count"] != 100.0 || s["send_count"] != 500.0 || s["message_count"] != 500.0 || s["message_mismatched"] != 0.0 || s["unexpected"] != 0.0 {
			t.Errorf("script: subscribe_count=%v send_count=%v message_count=%v mismatched=%v unexpected=%v, want 100, 500, 500 and none wrong",
				s["subscribe_count"], s["send_count"], s["message_count"], s["message_mismatched"], s["unexpected"])
		}
		if p99, ok := s["send_p99"].(float64); !ok || p99 <= 0 {
			t.Errorf("script: send_p99=%v, want the receipts' latency", s["send_p99"])
		}
		// 4 rooms × 1 publisher × 2/s × 2 s × 25 members (the publisher too).
		if b2["deliveries"] != 400.0 || b2["delivered"] != 400.0 || b2["lost"] != 0.0 || b2["duplicated"] != 0.0 {
			t.Errorf("broadcast: deliveries=%v delivered=%v lost=%v duplicated=%v, want 400 delivered", b2["deliveries"], b2["delivered"], b2["lost"], b2["duplicated"])
		}
		if cpu, ok := b2["server_cpu_s"].(float64); !ok || cpu <= 0 {
			t.Errorf("broadcast: server_cpu_s=%v, want the broker's CPU (pid %d)", b2["server_cpu_s"], mq.pid)
		}
	})

	// RabbitMQ closes a connection that sends no heart-beat for about
	// two of the negotiated intervals (1 s here; a connection that sends
	// none, beside, shows it): idle connections stay open over a hold of
	// 4 intervals because the loop sends them.
	t.Run("heart-beats", func(t *testing.T) {
		mute := make(chan error, 1)
		go func() { mute <- mq.silent(time.Second, 8*time.Second) }()
		code, out, res := runSTOMPPlan(t, root, mq.server("{name: stomp, keepalive: 1s}")+`phases:
  - connect: {connections: 50}
  - hold: {duration: 4s}
`)
		if err := <-mute; err != nil {
			t.Errorf("the control connection: %v", err)
		}
		h := res.Results[1].Metrics
		if code != 0 || res.Results[0].Metrics["success"] != 50.0 || h["alive"] != 50.0 || res.Results[1].Error != "" {
			t.Errorf("exit %d, connect success=%v, hold alive=%v error %q; stdout:\n%s", code, res.Results[0].Metrics["success"], h["alive"], res.Results[1].Error, out)
		}
	})

	// A bad login: RabbitMQ's ERROR frame fails every connection with its
	// own message, in the table and the JSON.
	t.Run("error frame", func(t *testing.T) {
		code, out, res := runSTOMPPlan(t, root, mq.server("{name: stomp, username: guest, password: wrong}")+`phases:
  - connect: {connections: 20, timeout: 2s, retries: -1}
`)
		const why = "stomp: ERROR: Bad CONNECT (Access refused for user 'guest')"
		if code != 1 || !strings.Contains(out, why) {
			t.Errorf("exit %d (want 1); the table does not name %q:\n%s", code, why, out)
		}
		if e := res.Results[0].Error; !strings.Contains(e, why+" ×20") {
			t.Errorf("JSON error %q, want %q ×20", e, why)
		}
	})

	// A SEND the broker refuses: RabbitMQ's ERROR names no receipt-id, so
	// it answers no request; the connection ends with its message, and
	// the awaited receipt fails with it (nothing counted unexpected).
	t.Run("refused send", func(t *testing.T) {
		code, out, res := runSTOMPPlan(t, root, mq.server("stomp")+`phases:
  - script:
      users: 5
      steps:
        - publish: {topic: /nowhere/x, payload: x, receipt: true, as: send}
`)
		s := res.Results[0]
		const why = "stomp: ERROR: Unknown destination ('/nowhere/x' is not a valid destination.) ×5"
		if code != 1 || s.Metrics["send_count"] != 0.0 || s.Metrics["send_failed"] != 5.0 || s.Metrics["unexpected"] != 0.0 || !strings.Contains(s.Error, why) {
			t.Errorf("exit %d, send_count=%v send_failed=%v unexpected=%v, error %q (want %q); stdout:\n%s",
				code, s.Metrics["send_count"], s.Metrics["send_failed"], s.Metrics["unexpected"], s.Error, why, out)
		}
	})
}
