package engine

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
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

// handshake is one probe upgrade: where, and with which options.
type handshake struct {
	addr         string      // host:port dialed
	host         string      // Host header
	uri          string      // request URI (path and query)
	tls          *tls.Config // nil = plain ws://
	headers      map[string]string
	subprotocols []string
	origin       string
}

// probeTimeout bounds one probe: the dial, the TLS handshake and the
// upgrade.
const probeTimeout = 5 * time.Second

// probe performs one WebSocket upgrade and closes the connection. Its
// errors name no header value (they may be secrets).
func probe(ctx context.Context, h handshake) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := c.SetDeadline(dl); err != nil {
			return err
		}
	}
	if h.tls != nil {
		tc := tls.Client(c, h.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("tls handshake: %w", err)
		}
		c = tc
	}
	var key [16]byte
	if _, err := rand.Read(key[:]); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n",
		h.uri, h.host, base64.StdEncoding.EncodeToString(key[:]))
	if h.origin != "" {
		fmt.Fprintf(&b, "Origin: %s\r\n", h.origin)
	}
	if len(h.subprotocols) > 0 {
		fmt.Fprintf(&b, "Sec-WebSocket-Protocol: %s\r\n", strings.Join(h.subprotocols, ", "))
	}
	keys := make([]string, 0, len(h.headers))
	for k := range h.headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\r\n", k, h.headers[k])
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return fmt.Errorf("reading the upgrade response: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return fmt.Errorf("%w: status %s", errNotUpgraded, resp.Status)
	}
	if !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		return fmt.Errorf("%w: 101 without Upgrade: websocket", errNotUpgraded)
	}
	if sp := resp.Header.Get("Sec-WebSocket-Protocol"); sp != "" && !slices.Contains(h.subprotocols, sp) {
		return fmt.Errorf("the server picked subprotocol %q, not one offered (%s)", sp, strings.Join(h.subprotocols, ", "))
	}
	// A clean close frame (masked, code 1000) so servers log no error; the
	// upgrade succeeded either way.
	_, _ = c.Write([]byte{0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8})
	return nil
}

// WaitReady polls until every address accepts a plain WebSocket upgrade on
// path, the process exits, ctx ends, or timeout passes.
func WaitReady(ctx context.Context, proc *launch.Process, addrs []string, path string, timeout time.Duration) error {
	hs := make([]handshake, len(addrs))
	for i, a := range addrs {
		hs[i] = handshake{addr: a, host: a, uri: path}
	}
	return waitReady(ctx, proc, hs, timeout)
}

// waitReady polls until every handshake succeeds, the process exits, ctx
// ends, or timeout passes.
func waitReady(ctx context.Context, proc serverProc, hs []handshake, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for _, h := range hs {
		for {
			if exited, _ := proc.Exited(); exited {
				return fmt.Errorf("server %s before accepting connections", proc.ExitReason())
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if last = probe(ctx, h); last == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not accept a WebSocket upgrade within %s: %w", h.addr, timeout, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

var errNotUpgraded = errors.New("no 101 response")
