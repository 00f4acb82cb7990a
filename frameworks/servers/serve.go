package servers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/wsplan/wsplan/frameworks"
)

// ParseAddrs expands a listen-address spec into host:port addresses. The
// spec is a comma-separated list of host:port or host:first-last (an
// inclusive port range); IPv6 hosts are bracketed: "[::1]:9000-9001".
// Every port must be in 1..65535 (0 is refused: the client has to know the
// port), a range must not run backwards, the host must not be empty, and no
// address may appear twice (SO_REUSEPORT would let both binds succeed and
// split the connections silently).
func ParseAddrs(spec string) ([]string, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, errors.New("addrs: empty, want host:port or host:first-last, e.g. 127.0.0.1:9000-9049")
	}
	var out []string
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("addrs %q: empty element between commas", spec)
		}
		host, ports, err := net.SplitHostPort(item)
		if err != nil {
			return nil, fmt.Errorf("addrs %q: %w (want host:port or host:first-last; bracket IPv6 hosts: [::1]:9000)", item, err)
		}
		if host == "" {
			return nil, fmt.Errorf("addrs %q: missing host (write 127.0.0.1%s, or 0.0.0.0%s for every interface)", item, item, item)
		}
		first, last, err := parsePortRange(ports)
		if err != nil {
			return nil, fmt.Errorf("addrs %q: %w", item, err)
		}
		for p := first; p <= last; p++ {
			a := net.JoinHostPort(host, strconv.Itoa(p))
			if seen[a] {
				return nil, fmt.Errorf("addrs %q: %s is listed twice", spec, a)
			}
			seen[a] = true
			out = append(out, a)
		}
	}
	return out, nil
}

// parsePortRange parses "9000" or "9000-9049".
func parsePortRange(s string) (first, last int, err error) {
	lo, hi, isRange := strings.Cut(s, "-")
	if first, err = parsePort(lo); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return first, first, nil
	}
	if last, err = parsePort(hi); err != nil {
		return 0, 0, err
	}
	if last < first {
		return 0, 0, fmt.Errorf("port range %d-%d runs backwards, want first <= last", first, last)
	}
	return first, last, nil
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("port %q: want a number in 1..65535", s)
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %d: want 1..65535", n)
	}
	return n, nil
}

// Serve runs one echo server until ctx is done: it resolves name (a preset
// or an adapter) with opts overriding the defaults, starts it on addrs with
// the upgrade on path, and closes it when ctx ends. payload is the expected
// message size, a hint for buffer sizes (> 0). tlsCfg, when set, is
// served on every address (an adapter that cannot is refused with
// Limits.NoTLS's reason). It returns the problems with name and opts all
// at once, a start error (such as a port already in use), or Close's error.
func Serve(ctx context.Context, name string, opts map[string]string, addrs []string, path string, payload int, tlsCfg *tls.Config) error {
	a, vals, errs := frameworks.Resolve(name, "", opts)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if tlsCfg != nil {
		if why := a.TLSRefusal(vals); why != "" {
			return fmt.Errorf("%s cannot serve TLS: %s", name, why)
		}
	}
	switch {
	case len(addrs) == 0:
		return errors.New("no listen address")
	case !strings.HasPrefix(path, "/"):
		return fmt.Errorf("path %q: must start with /", path)
	case payload <= 0:
		return fmt.Errorf("payload: must be > 0, got %d", payload)
	}
	start := a.Start
	if path == frameworks.BroadcastPath {
		if a.Broadcast == nil {
			return fmt.Errorf("%s serves no %s endpoint: %s", name, frameworks.BroadcastPath, a.NoBroadcastWhy())
		}
		start = a.StartBroadcast
	}
	srv, err := start(frameworks.Config{Addrs: addrs, Path: path, Payload: payload, Values: vals, TLS: tlsCfg})
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	return nil
}
