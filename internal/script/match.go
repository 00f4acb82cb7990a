package script

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/wsplan/wsplan/internal/exprlimit"
)

// Matcher is a compiled Match. Its conditions fall in two groups: fixed
// ones (no template field), which select the messages an expect takes,
// and templated ones ({{.seq}} …), rendered for the request each expect
// belongs to, which a taken message must also meet — else it is a
// mismatch (a reply to another request).
type Matcher struct {
	json    []jsonCond
	prefix  *Template
	topic   *Template
	typ     int // a Type to match; -1 = any
	re      *regexp.Regexp
	prog    *vm.Program
	exprSrc string
}

type jsonCond struct {
	path Path
	want *Template // static unless it has fields
}

// ExprVar is the name an expr condition reads the decoded message by.
const ExprVar = "msg"

// ParseMatch compiles m against env (templates in values and prefix may
// read fields, but no random or time functions: an expectation must be
// the same whenever it is checked).
func ParseMatch(m *Match, env *Env) (*Matcher, error) {
	if m == nil {
		return &Matcher{typ: -1}, nil
	}
	out := &Matcher{typ: -1}
	if m.Type != "" {
		t, err := typeOf(m.Type)
		if err != nil {
			return nil, err
		}
		out.typ = int(t)
	}
	if m.Topic != "" {
		t, err := parseExpectTemplate(m.Topic, env)
		if err != nil {
			return nil, fmt.Errorf("topic: %w", err)
		}
		out.topic = t
	}
	keys := make([]string, 0, len(m.JSON))
	for k := range m.JSON {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, err := ParsePath(k)
		if err != nil {
			return nil, err
		}
		t, err := parseExpectTemplate(m.JSON[k], env)
		if err != nil {
			return nil, fmt.Errorf("json %s: %w", k, err)
		}
		out.json = append(out.json, jsonCond{path: p, want: t})
	}
	if m.Prefix != "" {
		t, err := parseExpectTemplate(m.Prefix, env)
		if err != nil {
			return nil, fmt.Errorf("prefix: %w", err)
		}
		out.prefix = t
	}
	if m.Regex != "" {
		re, err := regexp.Compile(m.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", m.Regex, err)
		}
		out.re = re
	}
	if m.Expr != "" {
		prog, err := expr.Compile(m.Expr, expr.Env(map[string]any{ExprVar: map[string]any{}}), expr.AsBool(), exprlimit.Builtins())
		if err != nil {
			return nil, fmt.Errorf("expr %q: %v", m.Expr, firstLine(err.Error()))
		}
		if err := exprlimit.DryRun(prog, map[string]any{ExprVar: map[string]any{}}, exprlimit.DryRunTimeout); err != nil {
			return nil, fmt.Errorf("expr %q: %w", m.Expr, err)
		}
		out.prog, out.exprSrc = prog, m.Expr
	}
	return out, nil
}

// parseExpectTemplate compiles a template of an expectation: fields only.
func parseExpectTemplate(src string, env *Env) (*Template, error) {
	t, err := ParseTemplate(src, env)
	if err != nil {
		return nil, err
	}
	for _, s := range t.segs {
		switch s.kind {
		case segRandInt, segRandString, segNow, segNowNs:
			return nil, fmt.Errorf("%q: an expectation cannot use random values or the time", src)
		}
	}
	return t, nil
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Empty reports whether the matcher has no condition.
func (m *Matcher) Empty() bool {
	return len(m.json) == 0 && m.prefix == nil && m.re == nil && m.prog == nil && m.topic == nil && m.typ < 0
}

// Templated reports whether some condition depends on the request (a
// template with fields).
func (m *Matcher) Templated() bool {
	for _, c := range m.json {
		if !c.want.Static() {
			return true
		}
	}
	return m.prefix != nil && !m.prefix.Static() || m.topic != nil && !m.topic.Static()
}

// Scratch is reusable memory for matching: the rendered expectations and
// unescaped strings. One per event loop.
type Scratch struct{ want, text []byte }

// Select reports whether msg meets the fixed conditions.
func (m *Matcher) Select(g *Msg, s *Scratch) bool {
	msg := g.Body
	if m.typ >= 0 && g.Type != uint8(m.typ) {
		return false
	}
	if m.topic != nil && m.topic.Static() && !bytes.Equal(g.Topic, m.topic.segs0()) {
		return false
	}
	for i := range m.json {
		c := &m.json[i]
		if c.want.Static() && !c.eq(msg, c.want.segs0(), s) {
			return false
		}
	}
	if m.prefix != nil && m.prefix.Static() && !bytes.HasPrefix(msg, m.prefix.segs0()) {
		return false
	}
	if m.re != nil && !m.re.Match(msg) {
		return false
	}
	return m.prog == nil || m.evalExpr(msg)
}

// Check reports whether msg meets the templated conditions, rendered with
// v (the request's values).
func (m *Matcher) Check(g *Msg, v *Vars, s *Scratch) bool {
	msg := g.Body
	if m.topic != nil && !m.topic.Static() {
		var ok bool
		if s.want, ok = m.topic.Append(s.want[:0], v); !ok || !bytes.Equal(g.Topic, s.want) {
			return false
		}
	}
	for i := range m.json {
		c := &m.json[i]
		if c.want.Static() {
			continue
		}
		var ok bool
		if s.want, ok = c.want.Append(s.want[:0], v); !ok || !c.eq(msg, s.want, s) {
			return false
		}
	}
	if m.prefix != nil && !m.prefix.Static() {
		var ok bool
		if s.want, ok = m.prefix.Append(s.want[:0], v); !ok || !bytes.HasPrefix(msg, s.want) {
			return false
		}
	}
	return true
}

// Matches reports whether msg meets every condition (Select and Check).
func (m *Matcher) Matches(g *Msg, v *Vars, s *Scratch) bool {
	return m.Select(g, s) && m.Check(g, v, s)
}

// eq reports whether the value at c.path is want.
func (c *jsonCond) eq(msg, want []byte, s *Scratch) bool {
	t, ok := c.path.Text(msg, s.text)
	if !ok {
		return false
	}
	if len(t) > 0 && &t[0] != &msg[0] && cap(t) > cap(s.text) {
		s.text = t[:0] // keep the larger scratch
	}
	return bytes.Equal(t, want)
}

// evalExpr decodes msg and evaluates the expr condition; a message that is
// not JSON or an evaluation error does not match.
func (m *Matcher) evalExpr(msg []byte) bool {
	var v any
	if json.Unmarshal(msg, &v) != nil {
		return false
	}
	out, err := exprlimit.Eval(m.prog, map[string]any{ExprVar: v})
	b, _ := out.(bool)
	return err == nil && b
}

// segs0 returns a static template's bytes.
func (t *Template) segs0() []byte {
	if len(t.segs) == 0 {
		return nil
	}
	return t.segs[0].text
}
