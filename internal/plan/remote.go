package plan

import (
	"net"
	"path/filepath"
	"regexp"
	"strconv"
)

// quantity is a Kubernetes resource quantity (checked again by the API).
var quantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)

// checkKube checks client.kubernetes.
func (l *loader) checkKube(c *Client) {
	k := c.Kubernetes
	if k == nil {
		return
	}
	k.Line = l.lineOf("client.kubernetes")
	switch {
	case len(c.Remote) > 0:
		l.fieldErr("client.kubernetes", "cannot be combined with client.remote: wsplan makes the remote shards itself")
	case c.Shards != 0:
		l.fieldErr("client.kubernetes", "cannot be combined with client.shards: set kubernetes.shards")
	case len(c.SourceAddrs) > 0:
		l.fieldErr("client.kubernetes", "cannot be combined with client.source_addrs: each pod binds its own address")
	}
	for _, q := range []struct{ key, v string }{{"cpu", k.CPU}, {"memory", k.Memory}} {
		if q.v != "" && !quantity.MatchString(q.v) {
			l.fieldErr("client.kubernetes.resources."+q.key, "want a Kubernetes quantity such as 2, 1500m or 4Gi, got %q", q.v)
		}
	}
}

// checkRemote checks client.remote, weights and certs, and resolves certs
// against the plan's directory.
func (l *loader) checkRemote(c *Client) {
	l.checkKube(c)
	if len(c.Remote) == 0 {
		if len(c.Weights) > 0 {
			l.fieldErr("client.weights", "needs client.remote: one weight per remote shard")
		}
		if c.Certs != "" {
			l.fieldErr("client.certs", "needs client.remote: the certificates of remote shards")
		}
		return
	}
	if c.Shards != 0 {
		l.fieldErr("client.shards", "cannot be combined with client.remote: remote shards replace local ones")
	}
	if len(c.SourceAddrs) > 0 {
		l.fieldErr("client.source_addrs", "cannot be combined with client.remote: each remote shard binds its own host's addresses")
	}
	seen := map[string]int{}
	for i, a := range c.Remote {
		path := indexPath("client.remote", i)
		host, port, err := net.SplitHostPort(a)
		n, perr := strconv.Atoi(port)
		switch {
		case err != nil || host == "" || perr != nil || n < 1 || n > 65535:
			l.fieldErr(path, "want host:port of a `wsplan shard --listen`, e.g. 10.0.0.7:7070, got %q", a)
			continue
		}
		if j, dup := seen[a]; dup {
			l.fieldErr(path, "%s is also client.remote[%d]: a shard serves one orchestrator link", a, j)
		}
		seen[a] = i
	}
	if len(c.Weights) > 0 && len(c.Weights) != len(c.Remote) {
		l.fieldErr("client.weights", "want one weight per remote shard (%d), got %d", len(c.Remote), len(c.Weights))
	}
	for i, w := range c.Weights {
		if w < 1 {
			l.fieldErr(indexPath("client.weights", i), "must be >= 1, got %d", w)
		}
	}
	if c.Certs == "" {
		l.fieldErr("client.certs", "is required with client.remote: the directory `wsplan shard certs DIR` wrote, whose shard.pem/shard.key the shards were started with")
	} else if !filepath.IsAbs(c.Certs) && l.file != "" {
		c.Certs = filepath.Join(filepath.Dir(l.file), c.Certs)
	}
}
