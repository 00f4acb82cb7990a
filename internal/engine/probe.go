package engine

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/wsplan/wsplan/internal/launch"
)

// portsFree checks that nothing listens on addrs yet. Servers listen with
// SO_REUSEPORT, so a second server on a busy port would start without error
// and silently share its connections with the first: a plain bind, without
// SO_REUSEPORT, fails in that case.
func portsFree(addrs []string) error {
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("%s is already in use (another server or wsplan run?): pick free ports with defaults.base_port: %w", a, err)
		}
		if err := l.Close(); err != nil {
			return err
		}
	}
	return nil
}

// probe performs one WebSocket upgrade on addr and closes the connection.
func probe(addr, path string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	var key [16]byte
	if _, err := rand.Read(key[:]); err != nil {
		return err
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
		path, addr, base64.StdEncoding.EncodeToString(key[:]))
	if _, err := c.Write([]byte(req)); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return fmt.Errorf("%w: status %s", errNotUpgraded, resp.Status)
	}
	// A clean close frame (masked, code 1000) so servers log no error.
	if _, err := c.Write([]byte{0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8}); err != nil {
		return nil
	}
	return nil
}

// WaitReady polls until every address accepts a WebSocket upgrade, the
// process exits, ctx ends, or timeout passes.
func WaitReady(ctx context.Context, proc *launch.Process, addrs []string, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for _, a := range addrs {
		for {
			if exited, _ := proc.Exited(); exited {
				return fmt.Errorf("server %s before accepting connections", proc.ExitReason())
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if last = probe(a, path); last == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not accept a WebSocket upgrade within %s: %w", a, timeout, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

var errNotUpgraded = errors.New("no 101 response")
