package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads, resolves, defaults and validates the plan at path. Any
// error means the plan is unusable. When the file could be read, the
// error is an Errors listing every problem found, one per line, in the
// form `file:line: field.path: message`.
func Load(path string, opts LoadOptions) (*Plan, error) {
	data, err := readPlan(path)
	if err != nil {
		return nil, err
	}
	return LoadBytes(path, data, opts)
}

// LoadBytes is Load for a plan already in memory; name is the file name
// used in messages and for the default plan name.
func LoadBytes(name string, data []byte, opts LoadOptions) (*Plan, error) {
	if len(data) > MaxPlanBytes {
		return nil, tooBig(name)
	}
	l := newLoader(name)
	p := l.load(data, opts)
	if len(l.errs) > 0 {
		// A message may quote a secret, in any encoding; one about a
		// line whose value holds a secret may quote a piece of it (a
		// template's token), so it quotes nothing.
		for _, e := range l.errs {
			e.Msg = l.secrets.Redact(e.Msg)
			if l.secretLines[e.Line] {
				e.Msg = unquoted(e.Msg)
			}
		}
		errs := l.errs.sorted()
		if l.more > 0 {
			errs = append(errs, &Error{File: name, Msg: fmt.Sprintf("and %d more problems: fix the first %d and load it again", l.more, MaxErrors)})
		}
		return nil, errs
	}
	return p, nil
}

// ownKeys are the top-level keys the loader reads from their nodes
// rather than by type: vars: (resolved before anything else is decoded),
// phases: (two passes: the kind, then its body) and matrix: (against the
// vars).
type ownKeys struct {
	vars   yaml.Node
	phases []yaml.Node
	matrix yaml.Node
}

// load is the order of a load: variables, the strict decode of every key
// into the Plan, the keys that resolve into other fields, defaults, then
// the checks, which report every problem they find.
func (l *loader) load(data []byte, opts LoadOptions) *Plan {
	root, ok := l.parse(data)
	if !ok {
		return nil
	}
	vt := l.resolveVars(l.varsNode(root), opts.Sets)

	p := &Plan{File: l.file}
	var own ownKeys
	if root != nil {
		l.substitute(root, nil, vt, map[*yaml.Node]bool{}, true)
		l.decodeStruct(root, "", reflect.ValueOf(p).Elem(), map[string]reflect.Value{
			"vars":   reflect.ValueOf(&own.vars).Elem(),
			"phases": reflect.ValueOf(&own.phases).Elem(),
			"matrix": reflect.ValueOf(&own.matrix).Elem(),
		})
	}
	l.resolveTargets(p)
	literalSecrets(p, l.secrets)
	p.Secrets = l.secrets
	p.Vars = vt.resolved()
	for k, v := range p.Vars {
		p.Vars[k] = p.Redact(v)
	}
	nodelaySet := p.Defaults.NoDelay != nil
	l.setDefaults(p)

	l.checkHost(&p.Host)
	l.checkDefaults(&p.Defaults, len(p.Servers))
	l.checkClient(&p.Client, p.Defaults.AllowRemote)
	l.checkMetrics(&p.Metrics)
	l.checkServers(p, nodelaySet)
	p.Phases = l.phases(own.phases)
	for _, ph := range p.Phases {
		phaseSecrets(ph.Spec, l.secrets)
	}
	if len(own.phases) == 0 {
		l.fieldErr("phases", "a plan needs at least one phase, e.g. - connect: {connections: 1000}")
	}
	l.checkFaults(p)
	l.checkAsserts(p)
	l.checkDeclared(p)
	p.Servers = l.only(p.Servers, opts.Only)
	p.Matrix = l.matrix(&own.matrix, vt, opts.Sets, opts.OnlyMatrix)
	return p
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse reads the one YAML document. It returns its top mapping (nil when
// the document is empty) and false when the YAML itself is broken.
func (l *loader) parse(data []byte) (*yaml.Node, bool) {
	if estimateNodes(data, 2*MaxNodes) > 2*MaxNodes {
		l.errf(0, "", "the document has more than %d YAML nodes", MaxNodes)
		return nil, false
	}
	dec := yaml.NewDecoder(bytes.NewReader(protectRefs(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		l.syntaxErr(err)
		return nil, false
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		l.errf(extra.Line, "", "a plan is one YAML document; a second one starts here (remove the ---)")
	case !errors.Is(err, io.EOF):
		l.syntaxErr(err)
		return nil, false
	}
	if !l.checkTree(&doc) {
		return nil, false
	}
	restoreRefs(&doc, map[*yaml.Node]bool{})
	if len(doc.Content) == 0 {
		return nil, true
	}
	root := deref(doc.Content[0])
	if isNull(root) {
		return nil, true
	}
	if root.Kind != yaml.MappingNode {
		l.errf(root.Line, "", "want a mapping of sections (name:, servers:, phases:, …) at the top, got %s", describe(root))
		return nil, false
	}
	return root, true
}

func (l *loader) syntaxErr(err error) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1]) // the pattern guarantees digits; overflow leaves 0, no line
		l.errf(line, "", "bad YAML: %s", m[2])
		return
	}
	l.errf(0, "", "bad YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// varsNode returns the value of the top-level vars: key (nil when there
// is none), read before anything else because every other value may use
// the variables.
func (l *loader) varsNode(root *yaml.Node) *yaml.Node {
	if root == nil {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "vars" {
			l.lines.set("vars", k.Line)
			return root.Content[i+1]
		}
	}
	return nil
}

// resolveTargets turns the handshake keys as written into what the
// engine reads: tls: and compression: into TLS, Compression and
// ServeTLS, url: into URLs, and defaults' merged under each server's own.
func (l *loader) resolveTargets(p *Plan) {
	d := &p.Defaults.Target
	if d.TLSKey.set && !d.TLSKey.mapping {
		l.fieldErr("defaults.tls", "want a mapping of TLS settings (%s); tls: true is a server's", keyList(&d.TLSKey))
	}
	d.resolve()
	l.checkTarget(d, "defaults")
	inherits := false // some server takes defaults.protocol
	for i := range p.Servers {
		s := &p.Servers[i]
		base := indexPath("servers", i)
		s.Line = l.lineOf(base)
		switch {
		case s.URL != "" && len(s.URLs) > 0:
			l.fieldErr(base+".urls", "give url: or urls:, not both")
			s.URLs = nil
		case s.URL != "":
			s.URLs = []string{s.URL}
		case len(s.URLs) > 0:
			s.urlList = true
		}
		if len(s.URLs) > 0 && s.Path != "" {
			l.fieldErr(base+".path", "with url: the path comes from the URL")
		}
		s.Target.resolve()
		s.ServeTLS = s.TLSKey.on
		l.checkTarget(&s.Target, base)
		s.Target = mergeTarget(*d, s.Target)
		inherits = l.presetProtocol(s, base, d.Protocol) || inherits
	}
	if d.Protocol != nil && len(p.Servers) > 0 && !inherits {
		l.fieldErr("defaults.protocol", "applies to no server: every server is a built-in preset, which speaks raw WebSocket messages (protocol: is for command: and url: servers)")
	}
}

// presetProtocol leaves a built-in preset without a protocol: it speaks
// raw WebSocket messages, so it does not inherit defaults.protocol, and
// its own protocol: is an error. It reports whether s inherits def.
func (l *loader) presetProtocol(s *Server, base string, def *Protocol) bool {
	if !s.BuiltIn() {
		return def != nil && s.Protocol == def
	}
	if s.Protocol != nil && s.Protocol != def {
		l.fieldErr(base+".protocol", "%s is a built-in preset, which speaks raw WebSocket messages, not %s: protocol: is for command: and url: servers", s.Name, s.Protocol.Name)
	}
	s.Protocol = nil
	return false
}
