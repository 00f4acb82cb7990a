package script

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// A whole protocol in a test: "line", whose messages are "topic:body"
// text and which has no greeting. Adding a protocol is its package (here
// these types) plus one registration line; the loop, the script kind,
// the plan loader and the schema find it in the registry.

func init() { proto.Register("line", "topic:body text messages (a test's)", newLine) }

// lineSettings are line's keys: the separator of topic and body.
type lineSettings struct {
	Sep string `yaml:"sep" default:"':'" doc:"what separates a message's topic from its body"`
}

type line struct{ sep []byte }

func newLine(s *lineSettings) (proto.Protocol, error) {
	if len(s.Sep) == 0 {
		return nil, errors.New("sep: must not be empty")
	}
	return line{[]byte(s.Sep)}, nil
}

func (line) Subprotocols() []string                                    { return nil }
func (line) Greet(*proto.Env, *proto.Conn, int64) (bool, proto.Reason) { return true, "" }
func (line) Waiting(*proto.Conn) proto.Reason                          { return "" }
func (line) Tick(*proto.Env, *proto.Conn, int64) proto.Reason          { return "" }
func (line) Verbs() []uint8                                            { return []uint8{proto.VerbSend, proto.VerbPublish} }
func (line) Greeting(*proto.Env, *proto.Conn, byte, []byte, int64) (bool, proto.Reason) {
	return true, ""
}

// Decode hands the run each "topic:body" message as an event.
func (p line) Decode(e *proto.Env, _ *proto.Conn, op byte, msg []byte, _ int64) proto.Reason {
	topic, body, ok := bytes.Cut(msg, p.sep)
	if op != proto.OpText || !ok {
		return "line: not a topic:body text message"
	}
	e.Emit(proto.NewMessage(proto.MsgEvent, op, topic, nil, body))
	return ""
}

// Encode writes a publish as "topic:body", a send as its body.
func (p line) Encode(dst []byte, _ *proto.Conn, m *proto.Out, id []byte) ([]byte, byte, []byte, error) {
	if m.Verb == proto.VerbPublish {
		dst = append(append(dst, m.Topic...), p.sep...)
	}
	return append(dst, m.Body...), proto.OpText, id, nil
}

// TestLineProtocol: a script phase speaks line against the echo server:
// each publish comes back as an event on its topic.
func TestLineProtocol(t *testing.T) {
	s := &testserver.EchoServer{}
	c := clienttest.NewClient(t, client.Options{Targets: []string{s.Start(t)}, Loops: 2, Protocol: client.ProtocolOptions{Name: "line"}})
	res, err := c.Run(t.Context(), &Params{Steps: steps(t, `
steps:
  - loop:
      count: 5
      steps:
        - publish: {topic: 'room{{.conn}}', payload: 'hi {{.seq}}'}
        - expect: {type: event, topic: 'room{{.conn}}', as: echo}
`), Users: 4, Iterations: 1, Concurrency: 4, Timeout: units.Duration(5 * time.Second), ConnectTimeout: units.Duration(5 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	if e := r.Exchanges["echo"]; e == nil || e.Count != 20 || e.Mismatched != 0 || r.Finished != 4 || r.Unexpected != 0 {
		t.Fatalf("echo %+v, finished %d, unexpected %d, failures %v: want 20 events, 4 users done", e, r.Finished, r.Unexpected, r.Failures)
	}
	if got := client.ProtocolVerbs("line"); len(got) != 2 {
		t.Errorf("line's verbs: %v", got)
	}
	if _, err := proto.Make(client.ProtocolOptions{Name: "line", Settings: &lineSettings{Sep: ""}}); err != nil {
		t.Errorf("an empty sep takes its default: %v", err)
	}
}
