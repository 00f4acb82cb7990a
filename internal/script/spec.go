package script

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/units"
)

// The document types below are a script as a plan writes it: each key is
// one field, declared once with its tags (package decl): yaml the plan's
// key, doc its line of documentation, default, min and max its default
// and bounds. The plan loader decodes them strictly from the
// declarations (unknown keys rejected, with file:line), Compile applies
// the defaults and checks the bounds, and the JSON Schema and `wsplan
// validate`'s print read the same tags; json tags are the shard wire's.
// Types with a short form (send: "text", think: 100ms, close: true)
// implement decl.Shorthand: the scalar form is all they decode
// themselves.

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

// UnmarshalShort takes a scalar as the template of a text message.
func (s *Send) UnmarshalShort(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a template or {text: …} / {binary: …}, got a list")
	}
	*s = Send{Text: n.Value}
	return nil
}

// Shorten implements decl.Shorthand: a text message is its template.
func (s *Send) Shorten() (any, bool) { return s.Text, decl.OnlySet(s, "text") }

// UnmarshalYAML decodes either form (decl.Unmarshal).
func (s *Send) UnmarshalYAML(n *yaml.Node) error { return decl.Unmarshal(n, s) }

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
	Jitter      units.Duration   `yaml:"jitter" json:"jitter,omitempty" min:"0s" doc:"with fixed: the pause is drawn uniformly in [fixed - jitter, fixed + jitter]; at most fixed"`
	Uniform     []units.Duration `yaml:"uniform" json:"uniform,omitempty" min:"2" max:"2" doc:"[min, max]: a pause drawn uniformly, 0 <= min <= max"`
	Exponential units.Duration   `yaml:"exponential" json:"exponential,omitempty" min:"0s" doc:"mean of an exponentially distributed pause (Poisson arrivals)"`
}

// UnmarshalShort takes a duration as a fixed pause.
func (t *Think) UnmarshalShort(n *yaml.Node) error {
	var d units.Duration
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a duration or a mapping of %s, got a list", strings.Join(decl.Keys(reflect.TypeOf(t)), ", "))
	}
	if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		return err
	}
	*t = Think{Fixed: d}
	return nil
}

// Shorten implements decl.Shorthand: a fixed pause is its duration.
func (t *Think) Shorten() (any, bool) { return t.Fixed, decl.OnlySet(t, "fixed") }

// UnmarshalYAML decodes either form (decl.Unmarshal).
func (t *Think) UnmarshalYAML(n *yaml.Node) error { return decl.Unmarshal(n, t) }

// Loop repeats its steps.
type Loop struct {
	Count    int64          `yaml:"count" json:"count,omitempty" min:"0" doc:"iterations; with duration, the first limit reached ends it"`
	Duration units.Duration `yaml:"duration" json:"duration,omitempty" min:"0s" doc:"repeat until this long after the loop began"`
	// Inflight > 1 pipelines the body: a new iteration starts while fewer
	// than Inflight of its expects wait. The body is then a send and an
	// expect (after an optional think).
	Inflight int    `yaml:"inflight" json:"inflight,omitempty" default:"1" min:"1" doc:"iterations waiting at once (pipelining); above 1 the body is [think,] send, expect"`
	Steps    []Step `yaml:"steps" json:"steps" doc:"the steps to repeat"`
}

// Close ends the user: a close frame with Code, then the connection is
// closed.
type Close struct {
	Code int `yaml:"code" json:"code,omitempty" default:"1000" min:"1000" max:"4999" doc:"close code a client may send (1004–1006 and 1015 are reserved)"`
}

// UnmarshalShort takes true: a close with the default code.
func (c *Close) UnmarshalShort(n *yaml.Node) error {
	b, err := strconv.ParseBool(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || !b {
		return fmt.Errorf("want true or {code: N}, got %q", n.Value)
	}
	*c = Close{}
	return nil
}

// Shorten implements decl.Shorthand: a close with no key set is true.
func (c *Close) Shorten() (any, bool) { return true, decl.OnlySet(c) }

// UnmarshalYAML decodes either form (decl.Unmarshal).
func (c *Close) UnmarshalYAML(n *yaml.Node) error { return decl.Unmarshal(n, c) }
