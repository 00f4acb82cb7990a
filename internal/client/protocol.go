package client

import (
	"fmt"
	"sort"

	"github.com/wsplan/wsplan/internal/proto"
	_ "github.com/wsplan/wsplan/internal/proto/all" // the built-in protocols
	"github.com/wsplan/wsplan/internal/script"
)

// The adapter between the loop and the protocols over WebSocket
// (internal/proto: Socket.IO, GraphQL over WebSocket, MQTT, STOMP,
// JSON-RPC, each a package of its own). A client whose Options name a
// protocol makes it once (Client.proto, shared by its loops); each loop
// keeps one proto.Env, whose Link writes on the connection served, and
// each connection its proto.Conn (connSec.proto). The loop calls the
// protocol here and nowhere else:
//
//   - startGreeting after the upgrade (stGreeting until the protocol is
//     done; a refusal fails the attempt with the protocol's reason);
//   - protoData with every whole message, handing the application's
//     messages it decoded to the run's onMessage;
//   - protoKeepalive every proto.TickEvery;
//   - sendProto for what a protocol or a run writes.
//
// Kinds do not know which protocol they speak: they send proto.Out
// messages and receive proto.Messages.

// ProtocolOptions name the protocol a server speaks and its settings;
// zero = raw messages. Plain data: shards get it as JSON.
type ProtocolOptions = proto.Options

// The loop's largest message is the protocols' (a protocol frames no
// larger packet): the constant below does not compile when they differ.
const _ = uint(maxPayload-proto.MaxMessage) + uint(proto.MaxMessage-maxPayload)

// protoLink is a loop's proto.Link: the connection its protocol serves.
type protoLink struct {
	l *Loop
	c *Conn
}

// Write implements proto.Link.
func (k *protoLink) Write(op byte, b []byte) { k.l.SendProto(k.c, op, b) }

// Refuse implements proto.Link.
func (k *protoLink) Refuse() { refuse(k.c, "") }

// env returns the loop's proto.Env serving c.
func (l *Loop) env(c *Conn) *proto.Env {
	if l.penv.Link == nil {
		l.plink.l = l
		l.penv.Link, l.penv.Loop = &l.plink, l.id
	}
	l.plink.c = c
	return &l.penv
}

// ProtocolRooms reports whether a protocol carries the broadcast phase's
// rooms (proto.Rooms); raw messages carry them as /broadcast?room=N.
func ProtocolRooms(name string) bool {
	if name == "" {
		return true
	}
	p, err := proto.Make(ProtocolOptions{Name: name})
	if err != nil {
		return false
	}
	_, ok := p.(proto.Rooms)
	return ok
}

// ProtocolAnswers returns the rule of a protocol's answers to the
// script's verbs; nil for raw messages or an unknown protocol.
func ProtocolAnswers(name string) script.AnswerRule {
	p, err := proto.Make(ProtocolOptions{Name: name})
	if err != nil {
		return nil
	}
	return proto.AnswerRule(p)
}

// ProtocolVerbs returns the script verbs a protocol speaks (send is
// every protocol's plain message); nil for an unknown protocol.
func ProtocolVerbs(name string) []string {
	if name == "" {
		return []string{script.VerbSend}
	}
	p, err := proto.Make(ProtocolOptions{Name: name})
	if err != nil {
		return nil
	}
	var out []string
	for _, v := range p.Verbs() {
		for name, code := range proto.VerbCodes {
			if code == v {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Protocols returns the names of the protocols the client speaks, sorted.
func Protocols() []string { return proto.Names() }

// CheckProtocol reports what is wrong with a protocol's settings (an
// unknown name, an MQTT version other than 3.1.1 and 5, …), so that a
// plan fails when it loads rather than when its phase starts.
func CheckProtocol(o ProtocolOptions) error {
	_, err := makeProtocol(o)
	return err
}

// Subprotocols are the subprotocols a connection offers in its upgrade,
// in order: offered (the plan's subprotocols:) when it names any, else
// the protocol of o's own (mqtt, graphql-transport-ws, v12.stomp …;
// none for raw messages and protocols without one). The client's
// connections and the engine's probe of a target both offer these.
func Subprotocols(offered []string, o ProtocolOptions) ([]string, error) {
	p, err := makeProtocol(o)
	if err != nil {
		return nil, err
	}
	return offeredSubprotocols(offered, p), nil
}

// offeredSubprotocols is Subprotocols with the protocol made (nil = raw).
func offeredSubprotocols(offered []string, p proto.Protocol) []string {
	if len(offered) > 0 || p == nil {
		return offered
	}
	return p.Subprotocols()
}

// makeProtocol returns the protocol of o, nil for raw messages.
func makeProtocol(o ProtocolOptions) (proto.Protocol, error) {
	p, err := proto.Make(o)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return p, nil
}

// ProtoOf returns c's protocol state, nil for a raw connection.
func ProtoOf(c *Conn) *proto.Conn {
	if c.Sec == nil {
		return nil
	}
	return c.Sec.proto
}

// startGreeting runs after c's upgrade: a connection of a protocol greets
// (stGreeting) and reports whether it is open already.
func (l *Loop) startGreeting(c *Conn, now int64) (open bool, fail Reason) {
	p := l.cl.proto
	if p == nil {
		return true, ""
	}
	if c.Sec == nil {
		c.Sec = &connSec{}
	}
	c.Sec.proto = &proto.Conn{LastRecv: now}
	c.state = stGreeting
	done, why := p.Greet(l.env(c), c.Sec.proto, now)
	return done, Reason(why)
}

// protoData takes a chunk of a data message on a protocol's connection
// (inflated already): whole messages go to the protocol.
func (l *Loop) protoData(c *Conn, s *proto.Conn, ev *Event, now int64) {
	msg := ev.Data
	if !ev.End || int64(len(ev.Data)) != ev.Total {
		s.Buf = append(s.Buf, ev.Data...)
		if !ev.End {
			return
		}
		msg = s.Buf
	}
	s.LastRecv = now
	p, e := l.cl.proto, l.env(c)
	if c.state == stGreeting {
		done, fail := p.Greeting(e, s, ev.Op, msg, now)
		s.Buf = s.Buf[:0]
		switch {
		case fail != "":
			l.Drop(c, Reason(fail))
		case done:
			l.greeted(c, now)
		}
		return
	}
	e.Msgs = e.Msgs[:0]
	fail := p.Decode(e, s, ev.Op, msg, now)
	// Messages decoded before a failure are delivered first (a STOMP
	// ERROR frame answers a request, then ends the connection).
	for i := range e.Msgs {
		if c.state != StateOpen {
			break
		}
		if r := l.ph; r != nil {
			r.OnMessage(l, c, &e.Msgs[i], now)
		}
	}
	if fail != "" {
		s.Buf = s.Buf[:0]
		if c.state == StateOpen {
			l.Drop(c, Reason(fail))
		}
		return
	}
	if cap(s.Buf) > 64<<10 {
		s.Buf = nil
	} else {
		s.Buf = s.Buf[:0]
	}
}

// protoKeepalive lets the protocol send what it owes on every open
// connection.
func (l *Loop) protoKeepalive(now int64) {
	p := l.cl.proto
	for i := len(l.open) - 1; i >= 0; i-- {
		if i >= len(l.open) {
			continue
		}
		c := l.open[i]
		if s := ProtoOf(c); s != nil {
			if fail := p.Tick(l.env(c), s, now); fail != "" {
				l.Drop(c, Reason(fail))
			}
		}
	}
}

// SendProto writes one protocol message (payload b, opcode op) on c as a
// WebSocket frame; what the socket does not take waits in order.
func (l *Loop) SendProto(c *Conn, op byte, b []byte) {
	l.cbuf = AppendClientHeader(l.cbuf[:0], op, len(b), 0)
	key := uint32(l.rng.Uint64())
	hl := len(l.cbuf)
	l.cbuf[hl-4], l.cbuf[hl-3], l.cbuf[hl-2], l.cbuf[hl-1] = byte(key), byte(key>>8), byte(key>>16), byte(key>>24)
	l.cbuf = append(l.cbuf, b...)
	MaskCopy(l.cbuf[hl:], l.cbuf[hl:], key, 0)
	if c.Flags&FlagWantOut != 0 {
		x := l.GetExt(c)
		x.Out = append(x.Out, l.cbuf...)
		return
	}
	l.WriteOrQueue(c, l.cbuf)
}
