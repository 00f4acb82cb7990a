package script

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/units"
)

// The document types below are a script as a plan writes it. Their yaml
// tags are the plan's keys (decoded strictly by the plan loader, with
// file:line errors), their json tags the shard wire's; doc tags feed the
// JSON Schema. Types with a short form (send: "text", think: 100ms,
// close: true) unmarshal it themselves.

// Step is one step of a script: exactly one of its fields is set.
type Step struct {
	Send   *Send   `yaml:"send" json:"send,omitempty" doc:"send a message from a template: a string (a text frame) or {text: …} / {binary: …}"`
	Expect *Expect `yaml:"expect" json:"expect,omitempty" doc:"wait for a message that matches; as: names the exchange timed from the send before it"`
	Think  *Think  `yaml:"think" json:"think,omitempty" doc:"pause: a duration, or {uniform: [min, max]} or {exponential: mean}"`
	Loop   *Loop   `yaml:"loop" json:"loop,omitempty" doc:"repeat steps: count or duration; inflight > 1 pipelines a send + expect body"`
	Close  *Close  `yaml:"close" json:"close,omitempty" doc:"close the connection (true, or {code: 1000}); the user ends"`

	// Verb steps (verbs.go): the server's protocol's messages.
	Emit        *Emit      `yaml:"emit" json:"emit,omitempty" doc:"Socket.IO: emit an event (ack: true waits for its acknowledgement)"`
	Call        *Call      `yaml:"call" json:"call,omitempty" doc:"JSON-RPC: a request; its response is awaited"`
	Notify      *Call      `yaml:"notify" json:"notify,omitempty" doc:"JSON-RPC: a notification (no response)"`
	Publish     *Publish   `yaml:"publish" json:"publish,omitempty" doc:"MQTT PUBLISH, STOMP SEND, GraphQL mutation"`
	Subscribe   *Subscribe `yaml:"subscribe" json:"subscribe,omitempty" doc:"MQTT SUBSCRIBE, STOMP SUBSCRIBE, GraphQL subscription"`
	Unsubscribe *Subscribe `yaml:"unsubscribe" json:"unsubscribe,omitempty" doc:"MQTT UNSUBSCRIBE, STOMP UNSUBSCRIBE, GraphQL complete"`
}

// Verb returns the name of the step's set field ("send", …), "" if none
// is set, and how many are set.
func (s *Step) Verb() (string, int) {
	verb, n := "", 0
	for _, v := range []struct {
		name string
		set  bool
	}{{VerbSend, s.Send != nil}, {VerbExpect, s.Expect != nil}, {VerbThink, s.Think != nil}, {VerbLoop, s.Loop != nil}, {VerbClose, s.Close != nil},
		{VerbEmit, s.Emit != nil}, {VerbCall, s.Call != nil}, {VerbNotify, s.Notify != nil}, {VerbPublish, s.Publish != nil},
		{VerbSubscribe, s.Subscribe != nil}, {VerbUnsubscribe, s.Unsubscribe != nil}} {
		if v.set {
			if n == 0 {
				verb = v.name
			}
			n++
		}
	}
	return verb, n
}

// The steps' keys.
const (
	VerbSend   = "send"
	VerbExpect = "expect"
	VerbThink  = "think"
	VerbLoop   = "loop"
	VerbClose  = "close"
)

// Send is a message to send, rendered from a template each time.
type Send struct {
	Text   string `yaml:"text" json:"text,omitempty" doc:"template of a text message"`
	Binary string `yaml:"binary" json:"binary,omitempty" doc:"template of a binary message (its rendered bytes)"`
}

// UnmarshalYAML takes a string as the template of a text message, or a
// mapping with text or binary.
func (s *Send) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = Send{Text: n.Value}
		return nil
	}
	type plain Send
	var p plain
	if err := decodeStrict(n, &p, "text", "binary"); err != nil {
		return err
	}
	*s = Send(p)
	return nil
}

// Template returns the send's template and whether it is binary.
func (s *Send) Template() (string, bool) {
	if s.Binary != "" {
		return s.Binary, true
	}
	return s.Text, false
}

// Match is a condition on a message; every field given must hold.
type Match struct {
	// JSON maps paths ($.op, $.data.id, $.items[0]) to the value there:
	// a string field equals the value's text, a number, bool or null is
	// compared as written. Values may be templates ({{.seq}}).
	JSON map[string]string `yaml:"json" json:"json,omitempty" doc:"JSON paths ($.a.b[0]) and the values there (templates allowed)"`
	// Expr is an expr-lang boolean over the decoded message (msg).
	Expr string `yaml:"expr" json:"expr,omitempty" doc:"expr-lang boolean over the decoded JSON message, msg (e.g. msg.op == \"ok\" && len(msg.items) > 0)"`
	// Regex must match somewhere in the message.
	Regex string `yaml:"regex" json:"regex,omitempty" doc:"a regular expression (Go syntax) that must match the message"`
	// Prefix is the message's first bytes (a template).
	Prefix string `yaml:"prefix" json:"prefix,omitempty" doc:"the message's first bytes (a template)"`
	// Topic is the message's event name, topic or destination, as its
	// protocol says (a template).
	Topic string `yaml:"topic" json:"topic,omitempty" doc:"protocols: the event's name, topic or destination (a template)"`
	// Type is the message's type, as its protocol says.
	Type string `yaml:"type" json:"type,omitempty" doc:"protocols: data, event, ack, next, complete or error"`
}

// Empty reports whether m has no condition (it matches every message).
func (m *Match) Empty() bool {
	return m == nil || len(m.JSON) == 0 && m.Expr == "" && m.Regex == "" && m.Prefix == "" && m.Topic == "" && m.Type == ""
}

// Expect waits for a message.
type Expect struct {
	Match `yaml:",inline"`
	// Count is how many matching messages complete the expect (a stream
	// of replies); 0 = 1, or every one until Until matches.
	Count int `yaml:"count" json:"count,omitempty" min:"0" doc:"matching messages that complete it (a stream); default 1, or until until: matches"`
	// Until ends a stream: the expect completes with the first message
	// that matches it (counted too).
	Until *Match `yaml:"until" json:"until,omitempty" doc:"the message that ends a stream of replies (json, expr, regex, prefix)"`
	// Timeout bounds the wait from the send's scheduled time; 0 = the
	// phase's timeout.
	Timeout units.Duration `yaml:"timeout" json:"timeout,omitempty" min:"0s" doc:"longest wait, from the scheduled send; default the phase's timeout"`
	// As names the exchange: its latency runs from the scheduled time of
	// the send before this expect to the message that completes it.
	As string `yaml:"as" json:"as,omitempty" doc:"names the exchange: latency from the send's scheduled time to the match; metrics <as>_p50, <as>_p99, …"`
	// Correlate is the JSON path of an id the send wrote: replies are
	// matched to their requests by it, in any order.
	Correlate string `yaml:"correlate" json:"correlate,omitempty" doc:"JSON path of the id the send's template wrote: replies match their request by it, in any order"`
	// Capture keeps values of the matched message for later templates:
	// name → JSON path.
	Capture map[string]string `yaml:"capture" json:"capture,omitempty" doc:"name: JSON path; the value is {{.name}} in later templates"`
}

// Think is a pause of the user.
type Think struct {
	Fixed       units.Duration   `yaml:"fixed" json:"fixed,omitempty" min:"0s" doc:"a fixed pause"`
	Uniform     []units.Duration `yaml:"uniform" json:"uniform,omitempty" doc:"[min, max]: a pause drawn uniformly"`
	Exponential units.Duration   `yaml:"exponential" json:"exponential,omitempty" min:"0s" doc:"mean of an exponentially distributed pause (Poisson arrivals)"`
}

// UnmarshalYAML takes a duration as a fixed pause, or a mapping.
func (t *Think) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var d units.Duration
		if err := d.UnmarshalText([]byte(n.Value)); err != nil {
			return err
		}
		*t = Think{Fixed: d}
		return nil
	}
	var p struct {
		Fixed       units.Duration   `yaml:"fixed"`
		Uniform     []units.Duration `yaml:"uniform"`
		Exponential units.Duration   `yaml:"exponential"`
	}
	if err := decodeStrict(n, &p, "fixed", "uniform", "exponential"); err != nil {
		return err
	}
	*t = Think{Fixed: p.Fixed, Uniform: p.Uniform, Exponential: p.Exponential}
	return nil
}

// Loop repeats its steps.
type Loop struct {
	Count    int64          `yaml:"count" json:"count,omitempty" min:"0" doc:"iterations; with duration, the first limit reached ends it"`
	Duration units.Duration `yaml:"duration" json:"duration,omitempty" min:"0s" doc:"repeat until this long after the loop began"`
	// Inflight > 1 pipelines the body: a new iteration starts while fewer
	// than Inflight of its expects wait. The body is then a send and an
	// expect (after an optional think).
	Inflight int    `yaml:"inflight" json:"inflight,omitempty" min:"0" doc:"iterations waiting at once (pipelining); the body is then [think,] send, expect; default 1"`
	Steps    []Step `yaml:"steps" json:"steps" doc:"the steps to repeat"`
}

// Close ends the user: a close frame with Code, then the connection is
// closed.
type Close struct {
	Code int `yaml:"code" json:"code,omitempty" doc:"close code; default 1000"`
}

// UnmarshalYAML takes true, or a mapping with code.
func (c *Close) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		b, err := strconv.ParseBool(n.Value)
		if err != nil || !b {
			return fmt.Errorf("want true or {code: N}, got %q", n.Value)
		}
		*c = Close{}
		return nil
	}
	var p struct {
		Code int `yaml:"code"`
	}
	if err := decodeStrict(n, &p, "code"); err != nil {
		return err
	}
	*c = Close{Code: p.Code}
	return nil
}

// decodeStrict decodes a mapping into v, rejecting keys not in known.
func decodeStrict(n *yaml.Node, v any, known ...string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("want a mapping with %s", strings.Join(known, ", "))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		ok := false
		for _, w := range known {
			ok = ok || k == w
		}
		if !ok {
			return fmt.Errorf("unknown key %q: want %s", k, strings.Join(known, ", "))
		}
	}
	return n.Decode(v)
}

// JSONSchema states Send's two forms: a template, or {text|binary}.
func (*Send) JSONSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string", "description": "template of a text message"},
		map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
			"text":   map[string]any{"type": "string", "description": "template of a text message"},
			"binary": map[string]any{"type": "string", "description": "template of a binary message"},
		}},
	}}
}

// JSONSchema states Think's forms: a duration, or one distribution.
func (*Think) JSONSchema() map[string]any {
	d := map[string]any{"$ref": "#/$defs/duration"}
	return map[string]any{"anyOf": []any{d,
		map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
			"fixed":       d,
			"uniform":     map[string]any{"type": "array", "items": d, "minItems": 2, "maxItems": 2, "description": "[min, max]"},
			"exponential": map[string]any{"$ref": "#/$defs/duration", "description": "the mean"},
		}},
	}}
}

// JSONSchema states Close's forms: true, or {code}.
func (*Close) JSONSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"const": true},
		map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
			"code": map[string]any{"type": "integer", "minimum": 1000, "maximum": 4999, "description": "close code; default 1000"},
		}},
	}}
}
