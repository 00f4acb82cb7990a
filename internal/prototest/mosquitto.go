package prototest

import (
	"errors"
	"fmt"
	"net"
	"os"
	osuser "os/user"
	"path/filepath"
	"strings"
	"syscall"
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

// NoMosquitto is why a test that needs mosquitto skips without it.
const NoMosquitto = "no mosquitto: install Debian's mosquitto (apt-get install mosquitto) to run the MQTT broker tests"

// FindMosquitto is mosquitto's path (Debian puts it in /usr/sbin), ""
// when it is not installed.
func FindMosquitto() string {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if p := filepath.Join(dir, "mosquitto"); executable(p) {
			return p
		}
	}
	if executable("/usr/sbin/mosquitto") {
		return "/usr/sbin/mosquitto"
	}
	return ""
}

// MosquittoBin finds mosquitto (FindMosquitto), and skips the test when
// it is not installed.
func MosquittoBin(t testing.TB) string {
	t.Helper()
	bin := FindMosquitto()
	if bin == "" {
		t.Skip(NoMosquitto)
	}
	return bin
}

// executable reports whether p is a file someone may run.
func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// MosquittoConf is a broker's configuration besides its listeners.
type MosquittoConf struct {
	// Host is the loopback address the listeners bind; "" = 127.0.0.1.
	Host string
	// Lines come after the listeners; nil = anonymous clients allowed
	// ("allow_anonymous true").
	Lines []string
	// ACL, when set, are the lines of an ACL file of the broker's own
	// (acl_file); nil = none.
	ACL []string
	// Logf, when set, is told of each start tried again on new ports;
	// nil = nothing said.
	Logf func(format string, args ...any)
}

// StartMosquitto runs mosquitto with a websockets listener on a free
// 127.0.0.1 port and the extra configuration lines (default: anonymous
// clients allowed) until the test ends; it returns the listener's address.
// A broker that could not bind a port is started again on new ones
// (LaunchMosquitto).
func StartMosquitto(t testing.TB, extra ...string) string {
	t.Helper()
	return StartMosquittoConf(t, MosquittoConf{Lines: extra}).Addr
}

// StartMosquittoConf runs mosquitto with configuration c (its files in a
// directory of the test's) until the test ends, and returns it; the
// test fails when it does not start, and shows its log when the test
// has failed.
func StartMosquittoConf(t testing.TB, c MosquittoConf) *Broker {
	t.Helper()
	bin := MosquittoBin(t)
	if c.Logf == nil {
		c.Logf = t.Logf
	}
	b, err := LaunchMosquitto(bin, t.TempDir(), c)
	if err != nil {
		t.Fatalf("mosquitto: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Logf("mosquitto: %v", err)
		}
		if t.Failed() {
			t.Logf("mosquitto's log:\n%s", b.Log())
		}
	})
	return b
}

// Broker is a mosquitto LaunchMosquitto started.
type Broker struct {
	Addr string // its websockets listener's host:port
	Pid  int    // its process, which leads a process group of its own
	p    *launch.Process
}

// Log is the end of the broker's output (its log).
func (b *Broker) Log() string { return b.p.Tail(64 << 10) }

// Stop ends the broker's process group: SIGCONT first (a test may have
// stopped it), then SIGTERM, SIGKILL after 5 s; it waits until the broker
// has exited.
func (b *Broker) Stop() error {
	_ = syscall.Kill(-b.Pid, syscall.SIGCONT) // ours; ESRCH once it has gone
	return b.p.Stop(5 * time.Second)
}

// LaunchMosquitto starts bin with configuration c, its files (mosquitto.conf,
// mosquitto.acl, mosquitto.log) in dir, and returns it once it listens;
// the caller stops it. It needs no test, for tests that start brokers
// from goroutines of their own (cmd/wsplan's fault matrix). The ports
// are free when chosen, not reserved: a broker that could not bind one
// (another process took it meanwhile: "Unable to create … listener") is
// started again on new ports, three times at most.
func LaunchMosquitto(bin, dir string, c MosquittoConf) (*Broker, error) {
	for try := 1; ; try++ {
		b, err := launchMosquitto(bin, dir, c)
		switch {
		case err == nil:
			return b, nil
		case try < 3 && b != nil && strings.Contains(b.Log(), "Unable to create"):
			if c.Logf != nil {
				c.Logf("mosquitto, try %d: %v (a port was taken after it was chosen); again on new ports", try, err)
			}
		case b != nil:
			return nil, fmt.Errorf("%v; its log:\n%s", err, b.Log())
		default:
			return nil, err
		}
	}
}

// launchMosquitto starts one broker and waits until it listens; on
// failure the broker it returns (stopped) holds the log.
func launchMosquitto(bin, dir string, c MosquittoConf) (*Broker, error) {
	file, addr, err := WriteMosquittoConf(dir, c)
	if err != nil {
		return nil, err
	}
	p, err := launch.Start(launch.Spec{Argv: []string{bin, "-c", file}, LogPath: filepath.Join(dir, "mosquitto.log")})
	if err != nil {
		return nil, fmt.Errorf("start mosquitto: %w", err)
	}
	b := &Broker{Addr: addr, Pid: p.Pid, p: p}
	for deadline := time.Now().Add(20 * time.Second); ; {
		conn, err := net.DialTimeout("tcp4", addr, time.Second)
		if err == nil {
			conn.Close()
			return b, nil
		}
		select {
		case <-p.Done():
			_ = b.Stop() // stray children, if any
			return b, errors.New("it exited")
		default:
		}
		if time.Now().After(deadline) {
			_ = b.Stop()
			return b, fmt.Errorf("it does not listen on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WriteMosquittoConf writes configuration c into dir (mosquitto.conf,
// and mosquitto.acl with c.ACL) with a websockets listener on a port of
// c.Host free now, for a broker the test or its plan (a server's
// command:) starts; it returns the configuration file and the listener's
// address.
func WriteMosquittoConf(dir string, c MosquittoConf) (file, addr string, err error) {
	host := c.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if addr, err = testserver.FreeAddr(host); err != nil {
		return "", "", err
	}
	plain, err := testserver.FreeAddr(host)
	if err != nil {
		return "", "", err
	}
	lines := c.Lines
	if len(c.ACL) > 0 {
		acl := filepath.Join(dir, "mosquitto.acl")
		if err := os.WriteFile(acl, []byte(strings.Join(c.ACL, "\n")+"\n"), 0o644); err != nil {
			return "", "", err
		}
		lines = append(append([]string(nil), lines...), "acl_file "+acl)
	}
	file = filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(file, []byte(mosquittoConf(addr, plain, lines)), 0o644); err != nil {
		return "", "", err
	}
	return file, addr, nil
}

// mosquittoConf is the configuration of a broker with a websockets
// listener on addr (a plain one on plain), then the extra lines
// (default: anonymous clients allowed).
func mosquittoConf(addr, plain string, extra []string) string {
	// mosquitto 2.0.11 (Debian 12) will not start with websockets
	// listeners only: a plain MQTT listener, which the tests do not use,
	// comes first.
	conf := []string{"listener " + portHost(plain), "listener " + portHost(addr), "protocol websockets",
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

// portHost is addr as mosquitto's listener takes it: "PORT HOST".
func portHost(addr string) string {
	h, p, _ := net.SplitHostPort(addr)
	return p + " " + h
}
