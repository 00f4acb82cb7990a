package script

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/proto/mqtt"
	"github.com/wsplan/wsplan/internal/testserver"
)

// The broker's answers that are not a plain success, against a fake
// broker: refusals (reason codes >= 0x80) are error answers counted by
// code, a QoS 2 publish answered with a PUBACK and a SUBACK granting less
// than asked are downgrades, and a v5 broker's Receive Maximum bounds
// the QoS > 0 publishes in flight on a connection.

// answerBroker speaks MQTT over WebSocket and answers publishes and
// subscribes as the test says.
type answerBroker struct {
	// receiveMax is the quota of QoS > 0 publishes unanswered at once it
	// enforces (refusing the ones past it with 0x97, quota exceeded, as
	// mosquitto does); 0 = none. announce puts it in a v5 CONNACK.
	receiveMax int64
	announce   bool
	pubCode    byte            // reason code of every PUBACK and PUBREC (v5); 0 = success
	qos2Puback bool            // answer a QoS 2 publish with a PUBACK (RabbitMQ 3.10)
	grant      func(byte) byte // SUBACK's code for a subscribe at a QoS; nil = that QoS
	delay      time.Duration   // how late publishes are answered

	maxInflight atomic.Int64 // most QoS > 0 publishes unanswered at once on one connection
	refused     atomic.Int64 // publishes refused for the quota
	publishes   atomic.Int64
}

func (b *answerBroker) start(t testing.TB) string {
	s := &testserver.RawServer{Handshake: func(c net.Conn, r *bufio.Reader) {
		if err := testserver.ServerHandshake(c, r, nil); err == nil {
			b.serve(c, r)
		}
	}}
	return s.Start(t)
}

// brokerConn is one connection's state.
type brokerConn struct {
	b        *answerBroker
	c        net.Conn
	v5       bool
	mu       sync.Mutex
	inflight int64
	timers   sync.WaitGroup
}

// send writes packet p, first taking done publishes off the count in
// flight (before the client can read the answer).
func (bc *brokerConn) send(done int64, p ...byte) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	bc.inflight -= done
	_, _ = bc.c.Write(testserver.ServerFrame(true, client.OpBinary, p)) // a closed connection ends the test's reads
}

// ack is a PUBACK, PUBREC or PUBCOMP (t) for pid with code.
func (bc *brokerConn) ack(t byte, pid uint16, code byte) []byte {
	if bc.v5 && code != 0 {
		return []byte{t << 4, 3, byte(pid >> 8), byte(pid), code}
	}
	return mqtt.AppendAck(nil, t, pid)
}

func (b *answerBroker) serve(c net.Conn, r *bufio.Reader) {
	bc := &brokerConn{b: b, c: c}
	defer bc.timers.Wait()
	for {
		_, _, p, err := testserver.ReadClientFrame(r)
		if err != nil {
			return
		}
		for len(p) > 0 {
			first, body, n, _ := mqtt.Split(p)
			if n == 0 {
				return
			}
			bc.packet(first, body)
			p = p[n:]
		}
	}
}

// packet answers one of the client's packets.
func (bc *brokerConn) packet(first byte, body []byte) {
	b := bc.b
	switch first >> 4 {
	case mqtt.Connect:
		bc.v5 = body[6] == 5
		switch {
		case !bc.v5:
			bc.send(0, connack3(0)...)
		case b.announce:
			bc.send(0, connack5(0, 0x21, byte(b.receiveMax>>8), byte(b.receiveMax))...)
		default:
			bc.send(0, connack5(0)...)
		}
	case mqtt.Publish:
		_, _, pid, qos, _ := mqtt.PublishOf(first, body, bc.v5)
		if qos == 0 {
			return
		}
		b.publishes.Add(1)
		bc.mu.Lock()
		bc.inflight++
		over := b.receiveMax > 0 && bc.inflight > b.receiveMax
		if !over {
			for m := b.maxInflight.Load(); bc.inflight > m && !b.maxInflight.CompareAndSwap(m, bc.inflight); m = b.maxInflight.Load() {
			}
		}
		bc.mu.Unlock()
		t := byte(mqtt.Puback)
		if qos == 2 && !b.qos2Puback {
			t = mqtt.Pubrec
		}
		if over {
			b.refused.Add(1)
			bc.send(1, bc.ack(t, pid, 0x97)...)
			return
		}
		done := int64(1)
		if t == mqtt.Pubrec && b.pubCode < 0x80 {
			done = 0 // in flight until PUBCOMP
		}
		pkt := bc.ack(t, pid, b.pubCode)
		bc.timers.Add(1)
		time.AfterFunc(b.delay, func() {
			defer bc.timers.Done()
			bc.send(done, pkt...)
		})
	case mqtt.Pubrel:
		pid := uint16(body[0])<<8 | uint16(body[1])
		bc.send(1, bc.ack(mqtt.Pubcomp, pid, 0)...)
	case mqtt.Subscribe:
		pid := uint16(body[0])<<8 | uint16(body[1])
		rest := body[2:]
		if bc.v5 {
			_, rest, _ = mqtt.SkipProps(rest)
		}
		_, rest, _ = mqtt.ReadString(rest)
		code := rest[0] & 3
		if b.grant != nil {
			code = b.grant(code)
		}
		if bc.v5 {
			bc.send(0, mqtt.Suback<<4, 4, byte(pid>>8), byte(pid), 0, code)
		} else {
			bc.send(0, mqtt.Suback<<4, 3, byte(pid>>8), byte(pid), code)
		}
	}
}

// answersScript publishes n times at qos (pipelined by inflight) as pub,
// after a subscribe at subQoS as sub.
func answersScript(n, inflight, qos, subQoS int) string {
	return fmt.Sprintf(`
steps:
  - subscribe: {topic: "t/{{.conn}}", qos: %d, as: sub}
  - loop:
      count: %d
      inflight: %d
      steps:
        - publish: {topic: "t/{{.conn}}", payload: 'n {{.seq}}', qos: %d, as: pub}
`, subQoS, n, inflight, qos)
}

// answersWant is what a script of answersScript must count.
type answersWant struct {
	pub, pubErrors, pubDowngraded int64
	sub, subErrors, subDowngraded int64
	why                           client.Reason // the code of the errors or downgrades
}

// check compares r with w: each exchange's counts, the phase's error
// answers and downgrades by code, the failed steps by that code.
func (w answersWant) check(t *testing.T, r *Result, users int64) {
	t.Helper()
	pub, sub := exchange(t, r, "pub"), exchange(t, r, "sub")
	got := fmt.Sprintf("pub %d/%d/%d sub %d/%d/%d", pub.Count, pub.Errors, pub.Downgraded, sub.Count, sub.Errors, sub.Downgraded)
	want := fmt.Sprintf("pub %d/%d/%d sub %d/%d/%d", w.pub, w.pubErrors, w.pubDowngraded, w.sub, w.subErrors, w.subDowngraded)
	if got != want {
		t.Fatalf("count/errors/downgraded: %s, want %s (error answers %v, downgrades %v, failures %v, open %v)", got, want, r.ErrorAnswers, r.Downgrades, r.Failures, r.OpenErrors)
	}
	errs, downs := w.pubErrors+w.subErrors, w.pubDowngraded+w.subDowngraded
	if r.ErrorAnswers[w.why] != errs || r.Downgrades[w.why] != downs || len(r.ErrorAnswers)+len(r.Downgrades) > 1 {
		t.Errorf("error answers %v, downgrades %v: want %d errors and %d downgrades, all %q", r.ErrorAnswers, r.Downgrades, errs, downs, w.why)
	}
	var failed int64
	for _, rs := range r.Failures {
		failed += rs[w.why]
	}
	if failed != errs+downs || pub.ErrorCodes[w.why] != w.pubErrors || pub.DowngradeCodes[w.why] != w.pubDowngraded {
		t.Errorf("failures %v, pub's codes %v %v: want %d × %q", r.Failures, pub.ErrorCodes, pub.DowngradeCodes, errs+downs, w.why)
	}
	all := w.pub + w.pubErrors + w.pubDowngraded + w.sub + w.subErrors + w.subDowngraded
	if r.Answers != all || r.Finished != users || r.UsersFailed != 0 || r.Timeouts != 0 || r.Unanswered != 0 {
		t.Errorf("answers %d (want %d), finished %d users failed %d timeouts %d unanswered %d", r.Answers, all, r.Finished, r.UsersFailed, r.Timeouts, r.Unanswered)
	}
}

// TestMQTTErrorAnswersFake: a broker that refuses (a PUBACK or PUBREC
// with a reason code >= 0x80, a SUBACK failure) gives error answers
// counted by code, the exchange not completed; one that downgrades (a
// PUBACK to a QoS 2 publish, a SUBACK of a lower QoS) gives downgrades.
// A broker that grants what was asked gives neither.
func TestMQTTErrorAnswersFake(t *testing.T) {
	const users, n = 4, 10
	for _, tc := range []struct {
		name      string
		version   string
		b         *answerBroker
		qos, subQ int
		want      answersWant
	}{
		{"granted 3.1.1", mqtt.Version311, &answerBroker{}, 2, 2, answersWant{pub: users * n, sub: users}},
		{"granted 5", mqtt.Version5, &answerBroker{}, 1, 1, answersWant{pub: users * n, sub: users}},
		{"puback not authorized", mqtt.Version5, &answerBroker{pubCode: 0x87}, 1, 0,
			answersWant{pubErrors: users * n, sub: users, why: "mqtt 0x87 not authorized"}},
		{"pubrec quota exceeded", mqtt.Version5, &answerBroker{pubCode: 0x97}, 2, 0,
			answersWant{pubErrors: users * n, sub: users, why: "mqtt 0x97 quota exceeded"}},
		{"qos 2 answered with puback 3.1.1", mqtt.Version311, &answerBroker{qos2Puback: true}, 2, 0,
			answersWant{pubDowngraded: users * n, sub: users, why: client.Reason(mqtt.PubackForQoS2)}},
		{"qos 2 answered with puback 5", mqtt.Version5, &answerBroker{qos2Puback: true}, 2, 0,
			answersWant{pubDowngraded: users * n, sub: users, why: client.Reason(mqtt.PubackForQoS2)}},
		{"suback granted less", mqtt.Version311, &answerBroker{grant: func(byte) byte { return 1 }}, 1, 2,
			answersWant{pub: users * n, subDowngraded: users, why: "mqtt SUBACK granted QoS 1"}},
		{"suback failure 3.1.1", mqtt.Version311, &answerBroker{grant: func(byte) byte { return 0x80 }}, 1, 1,
			answersWant{pub: users * n, subErrors: users, why: "mqtt 0x80 failure"}},
		{"suback not authorized 5", mqtt.Version5, &answerBroker{grant: func(byte) byte { return 0x87 }}, 1, 0,
			answersWant{pub: users * n, subErrors: users, why: "mqtt 0x87 not authorized"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mqttClient(t, tc.b.start(t), mqtt.Settings{Version: tc.version})
			r := runMQTTScript(t, c, users, answersScript(n, 4, tc.qos, tc.subQ))
			tc.want.check(t, r, users)
		})
	}
}

// TestMQTTReceiveMaximumFake: a v5 broker that announces a Receive
// Maximum of 4 and answers late gets at most 4 QoS > 0 publishes in
// flight per connection from a loop with inflight 16, none refused; the
// result says the limit and that it held the loop down. A broker that
// enforces the same quota without announcing it refuses the excess
// (0x97), and those refusals are error answers.
func TestMQTTReceiveMaximumFake(t *testing.T) {
	const users, n = 5, 48
	for _, qos := range []int{1, 2} {
		t.Run(fmt.Sprintf("qos %d", qos), func(t *testing.T) {
			b := &answerBroker{receiveMax: 4, announce: true, delay: 10 * time.Millisecond}
			c := mqttClient(t, b.start(t), mqtt.Settings{Version: mqtt.Version5})
			r := runMQTTScript(t, c, users, answersScript(n, 16, qos, 0))
			answersWant{pub: users * n, sub: users}.check(t, r, users)
			if b.maxInflight.Load() != 4 || b.refused.Load() != 0 || b.publishes.Load() != users*n {
				t.Errorf("broker: %d in flight at most, %d refused, %d publishes; want 4, 0, %d", b.maxInflight.Load(), b.refused.Load(), b.publishes.Load(), users*n)
			}
			if r.ReceiveMax != 4 || r.Throttled != users || r.Inflight != 16 {
				t.Errorf("receive maximum %d, throttled %d, inflight %d; want 4, %d, 16", r.ReceiveMax, r.Throttled, r.Inflight, users)
			}
		})
	}
	t.Run("not announced", func(t *testing.T) {
		b := &answerBroker{receiveMax: 4, delay: 10 * time.Millisecond}
		c := mqttClient(t, b.start(t), mqtt.Settings{Version: mqtt.Version5})
		r := runMQTTScript(t, c, users, answersScript(n, 16, 1, 0))
		refused := b.refused.Load()
		if refused == 0 || r.ErrorAnswers["mqtt 0x97 quota exceeded"] != refused || exchange(t, r, "pub").Count != users*n-refused {
			t.Errorf("refused %d, error answers %v, pub %+v: want every refusal an error answer", refused, r.ErrorAnswers, exchange(t, r, "pub"))
		}
		if r.ReceiveMax != 0 || r.Throttled != 0 || b.maxInflight.Load() != 4 {
			t.Errorf("receive maximum %d, throttled %d, broker in flight %d; want 0, 0, 4", r.ReceiveMax, r.Throttled, b.maxInflight.Load())
		}
	})
}

// connack3 and connack5 are CONNACKs with a code (v5: and properties).
func connack3(code byte) []byte { return []byte{mqtt.Connack << 4, 2, 0, code} }

func connack5(code byte, props ...byte) []byte {
	return append([]byte{mqtt.Connack << 4, byte(3 + len(props)), 0, code, byte(len(props))}, props...)
}
