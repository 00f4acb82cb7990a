package prototest

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteMosquittoConf: the listeners on the host asked for, the lines,
// and an ACL in a file of its own that the configuration names.
func TestWriteMosquittoConf(t *testing.T) {
	dir := t.TempDir()
	file, addr, err := WriteMosquittoConf(dir, MosquittoConf{Host: "127.0.0.2", Lines: []string{"allow_anonymous false"}, ACL: []string{"topic read t/#"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	host, port, _ := net.SplitHostPort(addr)
	acl := filepath.Join(dir, "mosquitto.acl")
	if host != "127.0.0.2" || !strings.Contains(conf, "listener "+port+" 127.0.0.2\nprotocol websockets\n") ||
		!strings.HasSuffix(conf, "allow_anonymous false\nacl_file "+acl+"\n") {
		t.Errorf("address %s, configuration:\n%s", addr, conf)
	}
	if b, err := os.ReadFile(acl); err != nil || string(b) != "topic read t/#\n" {
		t.Errorf("ACL %q, %v", b, err)
	}
}

// TestLaunchMosquitto: a broker launched without a test listens on the
// host asked for, and Stop ends it even while it is stopped (SIGSTOP):
// by SIGTERM, not the SIGKILL after the grace period (Stop's error).
func TestLaunchMosquitto(t *testing.T) {
	b, err := LaunchMosquitto(MosquittoBin(t), t.TempDir(), MosquittoConf{Host: "127.0.0.3"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.Addr, "127.0.0.3:") {
		t.Errorf("address %s, want one on 127.0.0.3", b.Addr)
	}
	if err := syscall.Kill(b.Pid, syscall.SIGSTOP); err != nil { // ours, by pid
		t.Fatal(err)
	}
	if err := b.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if ok, _ := b.p.Exited(); !ok {
		t.Error("the broker has not exited")
	}
}
