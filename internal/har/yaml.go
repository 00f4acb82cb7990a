package har

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/script"
)

// The plan is built as a yaml.Node tree, so that its keys keep their
// order, its comments their places and its templates their quotes.

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func quoted(v string) *yaml.Node {
	n := scalar(v)
	n.Style = yaml.SingleQuotedStyle
	if strings.ContainsAny(v, "\n\r\t") || !isPrintable(v) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\uFEFF' {
			return false
		}
	}
	return true
}

func literalNode(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: v}
}

// mapping returns a mapping of key, value pairs (a value is a string or
// a node); flow writes it on one line.
func mapping(flow bool, kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	if flow {
		m.Style = yaml.FlowStyle
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v, ok := kv[i+1].(*yaml.Node)
		if !ok {
			v = scalar(kv[i+1].(string))
		}
		m.Content = append(m.Content, scalar(kv[i].(string)), v)
	}
	return m
}

func pairs(kvs [][2]string) *yaml.Node {
	m := mapping(true)
	for _, kv := range kvs {
		m.Content = append(m.Content, scalar(kv[0]), scalar(kv[1]))
	}
	return m
}

func encode(w io.Writer, doc *yaml.Node) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}

// document builds the plan.
func (g *generator) document(a *Archive, convs []*conv, res *Result) *yaml.Node {
	first := convs[0].ws
	phases := &yaml.Node{Kind: yaml.SequenceNode}
	for _, c := range convs {
		phases.Content = append(phases.Content, g.phase(c, res))
	}
	root := mapping(false, planKey[plan.Plan]("Name"), g.o.Name,
		planKey[plan.Plan]("Description"), fmt.Sprintf("imported from %s: %d WebSocket(s), %d sent and %d received messages", filepath.Base(g.o.Source), len(convs), res.Sent, res.Received),
		planKey[plan.Plan]("Servers"), &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{g.server(first)}},
		planKey[plan.Plan]("Phases"), phases)
	if host := targetHost(first, g.o.URL); remote(host) {
		d := mapping(false, planKey[plan.Defaults]("AllowRemote"), literalNode("true"))
		d.Content[1].LineComment = "# " + host + " is not loopback: a plan says so to reach it"
		root.Content = append(root.Content[:4], append([]*yaml.Node{scalar(planKey[plan.Plan]("Defaults")), d}, root.Content[4:]...)...)
	}
	root.HeadComment = g.header(a, convs, res)
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
}

// targetHost is the host the plan's server is reached at.
func targetHost(ws *WebSocket, override string) string {
	raw := ws.URL
	if override != "" {
		raw = override
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// remote reports whether a plan must allow host explicitly: the plan
// loader takes loopback addresses and localhost only, unless
// defaults.allow_remote says otherwise.
func remote(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		return !a.IsLoopback()
	}
	return host != "localhost"
}

// header is the plan's opening comment: where it came from, what it
// holds, and which variables to set.
func (g *generator) header(a *Archive, convs []*conv, res *Result) string {
	by := a.Creator
	if a.Browser != "" && a.Browser != a.Creator {
		by += " (" + a.Browser + ")"
	}
	if by == "" {
		by = "an unnamed program"
	}
	var entries []string
	for _, c := range convs {
		entries = append(entries, strconv.Itoa(c.ws.Entry))
	}
	lines := []string{
		fmt.Sprintf("Imported by `wsplan import har %s` from a recording by %s:", filepath.Base(g.o.Source), by),
		fmt.Sprintf("entries %s of %d: a script phase each, of %d user(s).", strings.Join(entries, ", "), a.Entries, g.o.Users),
		"Each sent message is a send step, each received one an expect (matched by its",
		"type, op, event, … fields). An id a reply carries back is matched by correlate:",
		"(a whole-number id written {{.seq}}); a value a reply gave that a later send",
		"carries is captured; pauses are the recorded gaps (to 10ms, at most " + MaxThink.String() + ").",
	}
	if len(g.sec.used) > 0 {
		lines = append(lines, "Secrets are not in this file: before `wsplan run`, set "+strings.Join(g.sec.used, ", "),
			fmt.Sprintf("to the values the browser sent (each at least %d bytes).", plan.MinSecretLen))
	}
	return "# " + strings.Join(lines, "\n# ")
}

// server is the plan's one server: the first WebSocket's URL (or
// Options.URL) with its query, its headers and subprotocols; every phase's
// users upgrade with them, and so does the engine's probe of the server.
func (g *generator) server(ws *WebSocket) *yaml.Node {
	u, _ := url.Parse(ws.URL) // parsed by Parse
	target := g.sec.literal(u.Scheme+"://"+u.Host+u.EscapedPath(), false)
	if g.o.URL != "" {
		target = g.o.URL // the user's own, in the plan's syntax
	}
	name := "server"
	if h := u.Hostname(); net.ParseIP(h) == nil && ident(strings.Split(h, ".")[0]) != "" {
		name = ident(strings.Split(h, ".")[0])
	}
	if q := g.query(ws); q != "" {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		target += sep + q
	}
	s := mapping(false, planKey[plan.Server]("Name"), name, planKey[plan.Server]("URL"), quoted(target))
	if hs := g.headers(ws); len(hs) > 0 {
		s.Content = append(s.Content, scalar(planKey[plan.Server]("Headers")), pairs(hs))
	}
	if o, ok := HeaderValue(ws.Request, "Origin"); ok && o != "" && httpguts.ValidHeaderFieldValue(o) {
		s.Content = append(s.Content, scalar(planKey[plan.Server]("Origin")), scalar(g.sec.literal(o, false)))
	}
	if p, ok := HeaderValue(ws.Request, "Sec-WebSocket-Protocol"); ok {
		list := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		seen := map[string]bool{}
		for _, sp := range strings.Split(p, ",") {
			if sp = strings.TrimSpace(sp); httpguts.ValidHeaderFieldName(sp) && !seen[sp] { // a subprotocol is a token
				seen[sp] = true
				list.Content = append(list.Content, scalar(sp))
			}
		}
		if len(list.Content) > 0 {
			s.Content = append(s.Content, scalar(planKey[plan.Server]("Subprotocols")), list)
		}
	}
	if x, ok := HeaderValue(ws.Response, "Sec-WebSocket-Extensions"); ok && strings.Contains(x, "permessage-deflate") {
		s.Content = append(s.Content, scalar(planKey[plan.Server]("CompressionKey")), literalNode("true"))
	}
	return s
}

// phase is one WebSocket's script phase.
func (g *generator) phase(c *conv, res *Result) *yaml.Node {
	body := mapping(false, phaseKey("Users"), literalNode(strconv.Itoa(g.o.Users)))
	body.Content = append(body.Content, scalar(phaseKey("Steps")), g.steps(c, res))
	key := scalar(g.kind)
	sent, recv := 0, 0
	for _, m := range c.msgs {
		if m.Send {
			sent++
		} else {
			recv++
		}
	}
	span := ""
	if n := len(c.msgs); n > 1 && !c.msgs[0].Time.IsZero() && !c.msgs[n-1].Time.IsZero() {
		span = fmt.Sprintf(" over %s", c.msgs[n-1].Time.Sub(c.msgs[0].Time).Round(thinkStep))
	}
	item := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{key, body}}
	item.HeadComment = fmt.Sprintf("# entries[%d]: %s, %d sent and %d received%s", c.ws.Entry, redactQuery(c.ws.URL), sent, recv, span)
	return item
}

// expectKey is the YAML key of an expect's field.
func expectKey(field string) string { return planKey[script.Expect](field) }

// planKey is the YAML key of a field of a plan's type T, as T declares it.
func planKey[T any](field string) string { return yamlKey(reflect.TypeFor[T](), field) }

// yamlKey is the YAML key of a struct's field, from its tag.
func yamlKey(t reflect.Type, field string) string {
	f, ok := t.FieldByName(field)
	if !ok {
		panic("har: " + t.String() + " has no field " + field)
	}
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return k
}

// steps are a conversation's steps.
func (g *generator) steps(c *conv, res *Result) *yaml.Node {
	steps := &yaml.Node{Kind: yaml.SequenceNode}
	add := func(verb string, v *yaml.Node) *yaml.Node {
		steps.Content = append(steps.Content, mapping(false, verb, v))
		return v
	}
	at := fmt.Sprintf("entries[%d]", c.ws.Entry)
	for i, m := range c.msgs {
		if !m.Send {
			add(script.VerbExpect, g.expect(m))
			res.Received++
			continue
		}
		t, ok := m.template(g.sec)
		if !ok {
			g.warnf("%s: sent message %d left out: it is not JSON and holds {{, which a template cannot write", at, i)
			continue
		}
		if d, capped := roundThink(c.gap(i)); d >= thinkStep {
			n := add(script.VerbThink, literalNode(d.String()))
			if capped {
				n.LineComment = fmt.Sprintf("# recorded %s, cut to %s", c.gap(i).Round(thinkStep), MaxThink)
			}
		}
		add(script.VerbSend, quoted(t))
		res.Sent++
	}
	return steps
}

// expect is a received message's expect.
func (g *generator) expect(m *msg) *yaml.Node {
	e := mapping(true)
	if km := kindMatch(m, g.sec); len(km) > 0 {
		e.Content = append(e.Content, scalar(expectKey("JSON")), pairs(km))
	}
	if m.correlate != "" {
		e.Content = append(e.Content, scalar(expectKey("Correlate")), scalar(m.correlate))
	}
	if len(m.capture) > 0 {
		caps := make([][2]string, len(m.capture))
		copy(caps, m.capture)
		e.Content = append(e.Content, scalar(expectKey("Capture")), pairs(caps))
	}
	if m.as != "" {
		e.Content = append(e.Content, scalar(expectKey("As")), scalar(m.as))
	}
	return e
}
