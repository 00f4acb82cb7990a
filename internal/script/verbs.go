package script

import (
	"fmt"

	"github.com/wsplan/wsplan/internal/units"
)

// Verb steps speak the server's protocol (its `protocol:`): each sends one
// message the protocol shapes (a Socket.IO event, a JSON-RPC request, an
// MQTT PUBLISH, a STOMP SEND, a GraphQL subscribe) and, where the protocol
// answers it (an ack, a response, a PUBACK, a receipt, the first result),
// waits for that answer as an expect does, matched by the id the protocol
// gave the message: an exchange when named (as:).

// Verb names: the steps' keys (VerbSend is a plain message).
const (
	VerbEmit        = "emit"        // Socket.IO event, with ack: true its acknowledgement
	VerbCall        = "call"        // JSON-RPC request and its response
	VerbNotify      = "notify"      // JSON-RPC notification (no response)
	VerbPublish     = "publish"     // MQTT PUBLISH (QoS 1, 2: PUBACK, PUBCOMP), STOMP SEND (receipt), GraphQL mutation
	VerbSubscribe   = "subscribe"   // MQTT SUBSCRIBE (SUBACK), STOMP SUBSCRIBE (receipt), GraphQL subscribe
	VerbUnsubscribe = "unsubscribe" // MQTT UNSUBSCRIBE (UNSUBACK), STOMP UNSUBSCRIBE, GraphQL complete
)

// Message types a protocol gives the messages it decodes (Msg.Type), and
// their names in an expect's `type:`.
const (
	TypeData     uint8 = iota // a plain message (raw WebSocket, STOMP MESSAGE without a subscription, …)
	TypeEvent                 // an event pushed to the client: Socket.IO event, MQTT PUBLISH, STOMP MESSAGE, rpc-websockets notification
	TypeAck                   // an answer to the client's message: Socket.IO ack, JSON-RPC response, PUBACK/SUBACK, RECEIPT
	TypeNext                  // a GraphQL result (next)
	TypeComplete              // a GraphQL operation's end
	TypeError                 // a protocol's error answer
)

// TypeNames are the names of the message types, by type.
var TypeNames = []string{"data", "event", "ack", "next", "complete", "error"}

// Msg is a message as a protocol decoded it, what matchers read.
type Msg struct {
	Type  uint8
	Topic []byte // event name, topic, destination, notification; nil = none
	ID    []byte // the correlation id it carries (ack id, operation id, packet id, receipt id)
	Body  []byte // the application's part: an event's argument array, a payload, a body
}

// Answer is what a verb step waits for when its protocol answers: the
// answer's exchange name, its wait, values to capture and conditions on
// it.
type Answer struct {
	As      string            `yaml:"as" json:"as,omitempty" doc:"names the exchange: latency from the send's scheduled time to the protocol's answer"`
	Timeout units.Duration    `yaml:"timeout" json:"timeout,omitempty" min:"0s" doc:"longest wait for the answer; default the phase's timeout"`
	Capture map[string]string `yaml:"capture" json:"capture,omitempty" doc:"name: JSON path in the answer's body; the value is {{.name}} in later templates"`
	Reply   *Match            `yaml:"reply" json:"reply,omitempty" doc:"conditions the answer must meet (else it is a mismatch): json, expr, regex, prefix"`
}

// Emit is a Socket.IO event.
type Emit struct {
	Event  string `yaml:"event" json:"event" doc:"the event's name (a template)"`
	Data   string `yaml:"data" json:"data,omitempty" doc:"the event's arguments: JSON values separated by commas (a template)"`
	Ack    bool   `yaml:"ack" json:"ack,omitempty" doc:"ask for an acknowledgement and wait for it"`
	Answer `yaml:",inline"`
}

// Call is a JSON-RPC request (call: the response is awaited) or
// notification (notify: none is).
type Call struct {
	Method string `yaml:"method" json:"method" doc:"the method (a template)"`
	Params string `yaml:"params" json:"params,omitempty" doc:"the params: a JSON array or object (a template); default none"`
	Answer `yaml:",inline"`
}

// Publish is a message to a topic or destination.
type Publish struct {
	Topic   string `yaml:"topic" json:"topic" doc:"MQTT topic, STOMP destination (a template); GraphQL: the mutation (query text)"`
	Payload string `yaml:"payload" json:"payload,omitempty" doc:"the message (a template); GraphQL: the variables (JSON)"`
	QoS     int    `yaml:"qos" json:"qos,omitempty" min:"0" max:"2" doc:"MQTT QoS: 0, 1 (PUBACK awaited), 2 (PUBREC, PUBREL, PUBCOMP)"`
	Receipt bool   `yaml:"receipt" json:"receipt,omitempty" doc:"STOMP: ask for a RECEIPT and wait for it"`
	Answer  `yaml:",inline"`
}

// Subscribe is a subscription (or its end, for unsubscribe).
type Subscribe struct {
	Topic     string `yaml:"topic" json:"topic" doc:"MQTT topic filter, STOMP destination (a template); GraphQL: the subscription (query text)"`
	QoS       int    `yaml:"qos" json:"qos,omitempty" min:"0" max:"2" doc:"MQTT QoS asked for"`
	Variables string `yaml:"variables" json:"variables,omitempty" doc:"GraphQL variables (JSON, a template)"`
	Receipt   bool   `yaml:"receipt" json:"receipt,omitempty" doc:"STOMP: ask for a RECEIPT and wait for it"`
	Answer    `yaml:",inline"`
}

// verbStep is a verb step's parts, whatever its verb.
type verbStep struct {
	verb        string
	topic, body string // templates
	qos         int
	ack         bool
	answered    bool // the protocol answers it (DefaultAnswers)
	answer      Answer
}

// asks reports whether the step wants its answer: it names the exchange,
// checks or captures the answer.
func (v *verbStep) asks() bool {
	return v.answer.As != "" || v.answer.Reply != nil || len(v.answer.Capture) > 0
}

// AnswerRule says whether a server's protocol answers a verb step's
// message: its verb, whether it asked for an acknowledgement (ack:,
// receipt:), whether the step wants the answer (as:, reply:, capture:)
// and its QoS.
type AnswerRule func(verb string, ack, asks bool, qos int) bool

// DefaultAnswers is the rule of the protocols that answer as the verbs
// say: an emit with ack, a call, a subscribe, an unsubscribe, a publish
// with qos > 0 or a receipt. A protocol with its own rule says so
// (GraphQL over WebSocket's operations are awaited when the step wants
// their result; its unsubscribe is never answered).
func DefaultAnswers(verb string, ack, _ bool, qos int) bool {
	switch verb {
	case VerbEmit:
		return ack
	case VerbCall, VerbSubscribe, VerbUnsubscribe:
		return true
	case VerbPublish:
		return qos > 0 || ack
	}
	return false
}

// verbOf returns the verb step s holds, if any.
func verbOf(s *Step) (verbStep, bool) {
	var v verbStep
	switch {
	case s.Emit != nil:
		e := s.Emit
		v = verbStep{verb: VerbEmit, topic: e.Event, body: e.Data, ack: e.Ack, answer: e.Answer}
	case s.Call != nil:
		c := s.Call
		v = verbStep{verb: VerbCall, topic: c.Method, body: c.Params, ack: true, answer: c.Answer}
	case s.Notify != nil:
		c := s.Notify
		v = verbStep{verb: VerbNotify, topic: c.Method, body: c.Params}
	case s.Publish != nil:
		p := s.Publish
		v = verbStep{verb: VerbPublish, topic: p.Topic, body: p.Payload, qos: p.QoS, ack: p.Receipt, answer: p.Answer}
	case s.Subscribe != nil:
		p := s.Subscribe
		v = verbStep{verb: VerbSubscribe, topic: p.Topic, body: p.Variables, qos: p.QoS, ack: p.Receipt, answer: p.Answer}
	case s.Unsubscribe != nil:
		p := s.Unsubscribe
		v = verbStep{verb: VerbUnsubscribe, topic: p.Topic, ack: p.Receipt, answer: p.Answer}
	default:
		return v, false
	}
	v.answered = DefaultAnswers(v.verb, v.ack, v.asks(), v.qos)
	return v, true
}

// Verbs lists the verbs a script uses (VerbSend for plain sends), for a
// check against the server's protocol.
func Verbs(steps []Step) []string {
	seen := map[string]bool{}
	var out []string
	var walk func([]Step)
	walk = func(steps []Step) {
		for i := range steps {
			v := ""
			if vs, ok := verbOf(&steps[i]); ok {
				v = vs.verb
			} else if steps[i].Send != nil {
				v = VerbSend
			}
			if v != "" && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
			if l := steps[i].Loop; l != nil {
				walk(l.Steps)
			}
		}
	}
	walk(steps)
	return out
}

// typeOf returns the type named name.
func typeOf(name string) (uint8, error) {
	for i, n := range TypeNames {
		if n == name {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("type %q: want one of %v", name, TypeNames)
}

// Exchanges returns the names of a script's exchanges (as: of expects and
// of verb steps' answers), in step order.
func Exchanges(steps []Step) []string {
	var out []string
	for i := range steps {
		s := &steps[i]
		if s.Expect != nil && s.Expect.As != "" {
			out = append(out, s.Expect.As)
		}
		if v, ok := verbOf(s); ok && v.answer.As != "" {
			out = append(out, v.answer.As)
		}
		if s.Loop != nil {
			out = append(out, Exchanges(s.Loop.Steps)...)
		}
	}
	return out
}

// Bodies lists the templates of every message the steps send, at every
// depth, as written: sends' text and binary, verbs' bodies (a call's
// params, a publish's payload).
func Bodies(steps []Step) []string {
	var out []string
	for i := range steps {
		s := &steps[i]
		if s.Send != nil {
			out = append(out, s.Send.Text, s.Send.Binary)
		}
		if v, ok := verbOf(s); ok {
			out = append(out, v.body)
		}
		if s.Loop != nil {
			out = append(out, Bodies(s.Loop.Steps)...)
		}
	}
	return out
}
