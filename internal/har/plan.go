package har

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/wsplan/wsplan/scenarios"
)

// Options say what Generate writes.
type Options struct {
	// Source is the HAR file's name, for the plan's comments and its
	// default name.
	Source string
	// Name is the plan's name; default Source's base name without its
	// extension.
	Name string
	// Users is each script phase's users (closed arrivals, each on its own
	// connection, each running the recorded conversation once); default 1.
	Users int
	// URL, when set, replaces the recorded server's URL (a ws:// or wss://
	// URL): record against one deployment, run against another. The
	// recorded query stays the phase's.
	URL string
	// Match, when set, imports only the WebSockets whose URL contains it.
	Match string
}

// Result is a generated plan.
type Result struct {
	// Plan is the plan's YAML.
	Plan []byte
	// Env are the environment variables the plan reads its secrets from
	// (${env:NAME}), in order of first use: set them before running it.
	Env []string
	// Warnings say what was left out or changed, one sentence each.
	Warnings []string
	// WebSockets, Sent and Received count what the plan holds.
	WebSockets, Sent, Received int
}

// ErrNothing is returned when a HAR file holds no WebSocket to import.
var ErrNothing = errors.New("no WebSocket to import")

// generator holds Generate's state.
type generator struct {
	o     Options
	kind  string // the phase kind that runs script steps (stepsKind)
	sec   *secrets
	warn  []string
	taken func(string) bool
}

// Check checks the options that need no recording: the url's form.
func (o Options) Check() error {
	if o.URL != "" {
		if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return fmt.Errorf("url %q: want a ws:// or wss:// URL", o.URL)
		}
	}
	return nil
}

// Generate writes the WebSockets of a to a plan: one server (the first
// WebSocket's URL), one script phase per WebSocket to it, each recorded
// sent message a send step, each received one an expect.
func Generate(a *Archive, o Options) (*Result, error) {
	if o.Users <= 0 {
		o.Users = 1
	}
	if o.Name == "" {
		o.Name = strings.TrimSuffix(filepath.Base(o.Source), filepath.Ext(o.Source))
	}
	if err := o.Check(); err != nil {
		return nil, err
	}
	kind, _, ok := stepsKind()
	if !ok {
		return nil, errNoStepsKind
	}
	g := &generator{o: o, kind: kind, sec: newSecrets(), taken: exchangeTaken(kind)}
	convs, err := g.choose(a)
	if err != nil {
		return nil, err
	}
	for _, c := range convs[1:] {
		if handshakeOf(c.ws) != handshakeOf(convs[0].ws) {
			g.warnf("entries[%d]: its query or headers differ from entries[%d]'s: the plan's server upgrades with entries[%[2]d]'s", c.ws.Entry, convs[0].ws.Entry)
		}
	}
	for _, c := range convs {
		c.correlate()
		c.capture()
		c.registerSecrets(g.sec)
		if n := c.nameExchanges(g.taken); n > 0 {
			g.warnf("entries[%d]: %d replies are not named exchanges (a phase names at most %d): their timeouts and mismatches count in the phase's", c.ws.Entry, n, MaxExchanges)
		}
		g.requestSecrets(c.ws)
	}
	res := &Result{WebSockets: len(convs)}
	doc := g.document(a, convs, res)
	var buf bytes.Buffer
	if err := encode(&buf, doc); err != nil {
		return nil, err
	}
	if name := g.sec.leaked(buf.Bytes()); name != "" {
		return nil, fmt.Errorf("the plan would hold the value of %s: refusing to write it", name)
	}
	res.Plan, res.Env, res.Warnings = buf.Bytes(), g.sec.used, g.warn
	return res, nil
}

// exchangeTaken reports whether an exchange's metrics would collide with
// the script phase's own (an exchange named users would have users_failed).
func exchangeTaken(kind string) func(string) bool {
	own := map[string]bool{}
	for _, d := range scenarios.MetricDefs(kind) {
		own[d.Name] = true
		for i := range len(d.Name) {
			if d.Name[i] == '_' {
				own[d.Name[:i]] = true
			}
		}
	}
	return func(name string) bool { return own[name] }
}

func (g *generator) warnf(format string, args ...any) {
	g.warn = append(g.warn, fmt.Sprintf(format, args...))
}

// choose picks the WebSockets to import: those Match selects that
// upgraded and hold text messages, to the same server as the first.
func (g *generator) choose(a *Archive) ([]*conv, error) {
	var out []*conv
	var why []string
	server := ""
	for i := range a.WebSockets {
		ws := &a.WebSockets[i]
		at := fmt.Sprintf("entries[%d] (%s)", ws.Entry, redactQuery(ws.URL))
		if g.o.Match != "" && !strings.Contains(ws.URL, g.o.Match) {
			continue
		}
		if ws.Status != 0 && ws.Status != 101 {
			why = append(why, fmt.Sprintf("%s: the upgrade was answered %d", at, ws.Status))
			continue
		}
		c := readConv(ws)
		if c.binary > 0 {
			g.warnf("%s: %d binary messages left out (a plan's send writes text templates)", at, c.binary)
		}
		if len(c.msgs) == 0 {
			why = append(why, fmt.Sprintf("%s: no text messages recorded (Firefox's own HAR export writes none of a WebSocket's messages: record with Chromium's DevTools, or a tool that keeps them as _webSocketMessages)", at))
			continue
		}
		key := serverKey(ws.URL)
		if server == "" {
			server = key
		} else if key != server {
			g.warnf("%s: left out: a plan's phases all run against one server, %s (import it on its own with --match)", at, server)
			continue
		}
		out = append(out, c)
	}
	if len(out) > 0 {
		for _, w := range why {
			g.warnf("%s", w)
		}
		return out, nil
	}
	switch {
	case len(why) > 0:
		return nil, fmt.Errorf("%w: %s", ErrNothing, strings.Join(why, "; "))
	case len(a.WebSockets) > 0:
		return nil, fmt.Errorf("%w: none of the %d WebSockets' URLs contains %q", ErrNothing, len(a.WebSockets), g.o.Match)
	}
	return nil, fmt.Errorf("%w: none of the %d entries is a WebSocket (record the page with its WebSocket open, then save the HAR)", ErrNothing, a.Entries)
}

// serverKey is what makes two WebSockets the same server: scheme, host
// and path.
func serverKey(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// redactQuery drops a URL's query (it may hold a token) for messages.
func redactQuery(s string) string {
	if i := strings.IndexByte(s, '?'); i >= 0 {
		return s[:i] + "?…"
	}
	return s
}

// Headers a browser adds that a plan leaves to the client, or writes
// otherwise (Origin, Sec-WebSocket-Protocol).
var droppedHeaders = map[string]bool{
	"host": true, "connection": true, "upgrade": true, "origin": true, "user-agent": true,
	"accept": true, "accept-encoding": true, "accept-language": true, "cache-control": true, "pragma": true,
	"referer": true, "dnt": true, "content-length": true, "transfer-encoding": true, "priority": true,
}

func dropped(name string) bool {
	n := strings.ToLower(name)
	return droppedHeaders[n] || strings.HasPrefix(n, ":") || strings.HasPrefix(n, "sec-websocket-") ||
		strings.HasPrefix(n, "sec-fetch-") || strings.HasPrefix(n, "sec-ch-")
}

// handshakeOf is what a WebSocket's upgrade carries that the plan's
// server writes: its query and its headers.
func handshakeOf(ws *WebSocket) string {
	var hs []string
	for _, h := range ws.Request {
		if !dropped(h.Name) {
			hs = append(hs, strings.ToLower(h.Name)+": "+h.Value)
		}
	}
	sort.Strings(hs)
	u, err := url.Parse(ws.URL)
	if err != nil {
		return ws.URL
	}
	return u.RawQuery + "\n" + strings.Join(hs, "\n")
}

// requestSecrets notes the upgrade request's credentials: its Cookie
// header (whole, and each long cookie value, which a message may repeat),
// its Authorization's credentials, headers named like a secret, and
// secret query parameters.
func (g *generator) requestSecrets(ws *WebSocket) {
	for _, h := range ws.Request {
		switch n := strings.ToLower(h.Name); {
		case dropped(n):
		case n == "cookie":
			g.sec.add(h.Value, "cookie")
			for _, ck := range strings.Split(h.Value, ";") {
				if k, v, ok := strings.Cut(strings.TrimSpace(ck), "="); ok && len(v) >= minScrub {
					g.sec.add(v, "cookie_"+k)
				}
			}
		case n == "authorization" || n == "proxy-authorization":
			if scheme, cred, ok := strings.Cut(h.Value, " "); ok && scheme != "" && cred != "" {
				g.sec.add(cred, h.Name)
			} else {
				g.sec.add(h.Value, h.Name)
			}
		case isSecret(h.Name, h.Value):
			g.sec.add(h.Value, h.Name)
		}
	}
	u, err := url.Parse(ws.URL)
	if err != nil {
		return
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if dk, err := url.QueryUnescape(k); err == nil && isSecret(dk, v) {
			g.sec.add(v, dk)
		}
	}
}

// headers returns the upgrade headers the server gets, secrets as their
// variables.
func (g *generator) headers(ws *WebSocket) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	for _, h := range ws.Request {
		n := strings.ToLower(h.Name)
		if dropped(n) || seen[n] {
			continue
		}
		if !httpguts.ValidHeaderFieldName(h.Name) || !httpguts.ValidHeaderFieldValue(h.Value) {
			g.warnf("entries[%d]: header %q left out: not a valid HTTP header", ws.Entry, clip(h.Name))
			continue
		}
		seen[n] = true
		v := h.Value
		switch {
		case n == "cookie":
			v = g.sec.ref(h.Value)
		case n == "authorization" || n == "proxy-authorization":
			if scheme, cred, ok := strings.Cut(h.Value, " "); ok && scheme != "" && cred != "" {
				v = escapeVars(scheme) + " " + g.sec.ref(cred)
			} else {
				v = g.sec.ref(h.Value)
			}
		case isSecret(h.Name, h.Value):
			v = g.sec.ref(h.Value)
		default:
			v = g.sec.literal(v, false)
		}
		out = append(out, [2]string{h.Name, v})
	}
	return out
}

// query returns the upgrade's query: the recorded one, secret parameters
// as their variables.
func (g *generator) query(ws *WebSocket) string {
	u, err := url.Parse(ws.URL)
	if err != nil || u.RawQuery == "" {
		return ""
	}
	var parts []string
	for _, kv := range strings.Split(u.RawQuery, "&") {
		k, v, hasV := strings.Cut(kv, "=")
		dk, err := url.QueryUnescape(k)
		secret := err == nil && hasV && isSecret(dk, v)
		k = g.sec.literal(k, false)
		switch {
		case secret:
			k += "=" + g.sec.ref(v)
		case hasV:
			k += "=" + g.sec.literal(v, false)
		}
		parts = append(parts, k)
	}
	return strings.Join(parts, "&")
}
