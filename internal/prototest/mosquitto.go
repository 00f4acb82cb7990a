package prototest

import (
	"errors"
	"fmt"
	"net"
	"os"
	osuser "os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/launch"
	"github.com/wsplan/wsplan/internal/proto/mqtt"
	"github.com/wsplan/wsplan/internal/testserver"
)

// The MQTT protocol against a real broker: Debian's mosquitto (2.x) with
// a websockets listener, started by the test on a free loopback port with
// its own configuration through internal/launch (its own process group,
// SIGKILL should the test die), stopped by its process group. Without
// mosquitto the tests skip, saying how to get it.

// MQTTVersions are the versions every broker test runs with.
var MQTTVersions = []string{mqtt.Version311, mqtt.Version5}

// MosquittoBin finds mosquitto (Debian puts it in /usr/sbin), and skips
// the test when it is not installed.
func MosquittoBin(t testing.TB) string {
	t.Helper()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if p := filepath.Join(dir, "mosquitto"); executable(p) {
			return p
		}
	}
	if executable("/usr/sbin/mosquitto") {
		return "/usr/sbin/mosquitto"
	}
	t.Skip("no mosquitto: install Debian's mosquitto (apt-get install mosquitto) to run the MQTT broker tests")
	return ""
}

// executable reports whether p is a file someone may run.
func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// StartMosquitto runs mosquitto with a websockets listener on a free
// 127.0.0.1 port and the extra configuration lines (default: anonymous
// clients allowed) until the test ends; it returns the listener's address.
// The ports are free when chosen, not reserved: a broker that could not
// bind one (another process took it meanwhile: "Unable to create …
// listener") is started again on new ports, three times at most.
func StartMosquitto(t testing.TB, extra ...string) string {
	t.Helper()
	bin := MosquittoBin(t)
	for try := 1; ; try++ {
		addr, log, err := startMosquitto(t, bin, extra)
		switch {
		case err == nil:
			return addr
		case try < 3 && strings.Contains(log, "Unable to create"):
			t.Logf("mosquitto, try %d: %v (a port was taken after it was chosen); again on new ports", try, err)
		default:
			t.Fatalf("mosquitto: %v; its log:\n%s", err, log)
		}
	}
}

// startMosquitto starts one broker and waits until it listens; on failure
// it returns the broker's log with the error.
func startMosquitto(t testing.TB, bin string, extra []string) (addr, log string, err error) {
	t.Helper()
	addr = testserver.ClosedAddr(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(file, []byte(mosquittoConf(t, addr, extra)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := launch.Start(launch.Spec{Argv: []string{bin, "-c", file}, LogPath: filepath.Join(dir, "mosquitto.log")})
	if err != nil {
		t.Fatalf("start mosquitto: %v", err)
	}
	tail := func() string { return p.Tail(64 << 10) }
	t.Cleanup(func() {
		// Its process group: ours to stop (SIGTERM, SIGKILL after 5 s).
		if err := p.Stop(5 * time.Second); err != nil {
			t.Logf("mosquitto: %v", err)
		}
		if t.Failed() {
			t.Logf("mosquitto's log:\n%s", tail())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp4", addr)
		if err == nil {
			c.Close()
			return addr, "", nil
		}
		select {
		case <-p.Done():
			return "", tail(), errors.New("it exited")
		default:
		}
		if time.Now().After(deadline) {
			return "", tail(), fmt.Errorf("it does not listen on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mosquittoConf is the configuration of a broker with a websockets
// listener on addr, then the extra lines (default: anonymous clients
// allowed).
func mosquittoConf(t testing.TB, addr string, extra []string) string {
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
	return strings.Join(append(conf, extra...), "\n") + "\n"
}
