package main

import (
	"strconv"
	"strings"
	"time"

	fs "github.com/wsplan/wsplan/internal/faultserver"
)

// The fault matrix's cells: for each kind, the protocols it speaks (its
// Speaks in scenarios/) and the faults that can reach it. A cell's want
// is what the row's error must say; its allow, what the plan allows to
// pass. Branches named in pending are the fixes the cell waits for.
//
// Allowances are whole (100%, or counts above any the cell can reach):
// on a loaded host a fault that hits 1 unit in 4 may cost more than a
// quarter (timeouts, late pongs), and a cell must not turn red for the
// host's speed; the arithmetic of percentages is scenarios' unit test.
// The kills and stops land well inside their phases: the fault server
// holds each upgrade, echo, pong or close answer (Delay) so that a phase
// lasts several times the kill's delay, whatever the host's speed.

// mproto is a protocol as the cells use it.
type mproto struct {
	label    string
	path     string
	protocol string // the server's protocol: value; "" = raw
	// keepalive: the client hears a silent server through the protocol's
	// keepalive (jsonrpc has none).
	keepalive bool
	errors    bool // the protocol has error answers
	// exchange is one script step the protocol answers (the exchange x),
	// with reply checks where the answer has a body.
	exchange string
	// checked: a wrong answer is a mismatched reply (its body is
	// checked); else a wrong id, which no expect takes (a timeout).
	checked bool
	beat    time.Duration // the server's keepalive (fault server Beat)
	// subprotocol: the protocol has a subprotocol of its own, which a
	// strict broker wants offered.
	subprotocol bool
}

var mprotos = []mproto{
	{label: "none", path: fs.PathRaw, checked: true,
		exchange: `{send: '{"n":{{.seq}}}'}, {expect: {json: {$.n: "{{.seq}}"}, as: x}}`},
	{label: "socketio", path: fs.PathSocketIO + "?EIO=4&transport=websocket", protocol: "socketio", keepalive: true, checked: true, beat: 300 * time.Millisecond,
		exchange: `{emit: {event: chat, data: '{"n":{{.seq}}}', ack: true, as: x, reply: {json: {"$[0].n": "{{.seq}}"}}}}`},
	{label: "graphql-ws", path: fs.PathGraphQL, protocol: "{name: graphql-ws, keepalive: 300ms}", keepalive: true, errors: true, checked: true, subprotocol: true,
		exchange: `{publish: {topic: 'query($t:String!){ echo(text:$t) }', payload: '{"t":"q{{.seq}}"}', as: x, reply: {json: {$.data.echo: "q{{.seq}}"}}}}`},
	{label: "mqtt", path: fs.PathMQTT, protocol: `{name: mqtt, version: "5", keepalive: 1s}`, keepalive: true, errors: true, subprotocol: true,
		exchange: `{publish: {topic: "t/{{.conn}}", payload: 'm{{.seq}}', qos: 1, as: x}}`},
	{label: "stomp", path: fs.PathSTOMP, protocol: "{name: stomp, keepalive: 200ms}", keepalive: true, errors: true, beat: 200 * time.Millisecond, subprotocol: true,
		exchange: `{publish: {topic: /topic/x, payload: 'm{{.seq}}', receipt: true, as: x}}`},
	{label: "jsonrpc", path: fs.PathJSONRPC, protocol: "jsonrpc", errors: true, checked: true,
		exchange: `{call: {method: echo, params: '{"n":{{.seq}}}', as: x, reply: {json: {$.n: "{{.seq}}"}}}}`},
}

// on returns a cell of kind through p with the fault server's options.
func (p mproto) on(kind, fault string, o fs.Options) cell {
	o.Beat = p.beat
	return cell{kind: kind, proto: p.label, fault: fault, server: o, path: p.path, protocol: p.protocol}
}

// deaths are a kind's three ways of losing its server mid-phase: killed
// with pid: and without, and stopped; body is the phase's, long enough
// to be killed in; allow is what the kind allows of what a stall costs
// (stallWant: what it says; "fatal:" before it when the stall leaves the
// phase without connections, which no allowance covers).
func deaths(p mproto, kind, setup, body, stallWant, allow string, o fs.Options, after time.Duration) []cell {
	var out []cell
	for _, d := range []struct{ fault, proc string }{
		{"killed (pid:)", procKill}, {"killed (no pid:)", procKillNP}, {"stalled (SIGSTOP)", procStop},
	} {
		c := p.on(kind, d.fault, o)
		c.proc, c.after, c.setup, c.body, c.allow = d.proc, after, setup, body, allow
		// Raw messages without a fault server's delay: a real server.
		c.serve = p.label == "none" && o == (fs.Options{})
		switch d.proc {
		case procKill:
			c.want, c.fatal = "exited", true
		case procKillNP:
			c.want, c.fatal = "appears to have died", true
		default:
			c.want, c.fatal = strings.CutPrefix(stallWant, "fatal:")
		}
		out = append(out, c)
	}
	return out
}

// faultCells is the matrix.
func faultCells() []cell {
	var out []cell
	for _, f := range []func() []cell{connectCells, rawKindCells, holdCells, broadcastCells, churnCells, scriptCells, mosquittoCells} {
		out = append(out, f()...)
	}
	return out
}

// connectCells: every protocol, refused, unanswered or answered wrongly
// at the greeting, and the server's death or stall.
func connectCells() []cell {
	var out []cell
	for _, p := range mprotos {
		for _, g := range []struct {
			fault         fs.Fault
			label         string
			body          string
			want, pending string
		}{
			// A refusal is not retried: one attempt per connection.
			{fs.Refuse, "refused at the greeting", "connections: 10, timeout: 1s", "connections failed&×10", ""},
			{fs.Mute, "greeting unanswered", "connections: 10, timeout: 300ms, retries: -1", "connections failed", ""},
			{fs.Garble, "greeting answered wrongly", "connections: 10, timeout: 300ms, retries: -1", "connections failed", ""},
		} {
			c := p.on("connect", g.label, fs.Options{Fault: g.fault, Spare: 1})
			c.body, c.want, c.allow, c.pending = g.body, g.want, "{failed: 100%}", g.pending
			out = append(out, c)
		}
		if p.subprotocol {
			// A broker that wants its subprotocol offered (EMQX): the
			// target probe before the first phase must offer it too.
			c := p.on("connect", "subprotocol required", fs.Options{Strict: true})
			c.body, c.wantOK = "connections: 10", true
			out = append(out, c)
		}
		if p.label == "jsonrpc" {
			// No greeting: the upgrade is what a connection's latency
			// times, never 0 ns (item 5).
			c := p.on("connect", "no greeting: latency timed", fs.Options{})
			c.body, c.assert, c.wantOK = "connections: 10", `p50 > duration("0s")`, true
			out = append(out, c)
		}
		out = append(out, deaths(p, "connect", "", "connections: 20, concurrency: 4, timeout: 300ms, retries: -1",
			"connections failed", "{failed: 100%}", fs.Options{Delay: 100 * time.Millisecond}, 100*time.Millisecond)...)
	}
	return out
}

// rawKindCells: echo, rate, ping and close, which speak raw messages
// only.
func rawKindCells() []cell {
	raw := mprotos[0]
	setup := "connections: 10"
	var out []cell
	add := func(kind, fault string, o fs.Options, body, want, allow string, pending ...string) {
		c := raw.on(kind, fault, o)
		c.setup, c.body, c.want, c.allow, c.pending = setup, body, want, allow, strings.Join(pending, ", ")
		out = append(out, c)
	}
	slow := fs.Options{Delay: 5 * time.Millisecond}
	// echo
	add("echo", "wrong reply", fs.Options{Fault: fs.Wrong}, "total: 200, payload: 64, timeout: 500ms", "echoes failed", "{failed: 100%}")
	add("echo", "absent reply (1 in 4)", fs.Options{Fault: fs.Drop, Every: 4}, "total: 200, payload: 64, timeout: 300ms", "echoes failed", "{failed: 100%}")
	out = append(out, deaths(raw, "echo", setup, "total: 100000000, payload: 64, deadline: 1500ms, timeout: 300ms",
		"echoes failed", "{failed: 100%}", slow, 300*time.Millisecond)...)
	// rate
	add("rate", "wrong reply", fs.Options{Fault: fs.Wrong}, "duration: 500ms, rate: 100, payload: 64, drain: 300ms", "corrupt", "{failed: 100%}")
	add("rate", "absent reply (1 in 4)", fs.Options{Fault: fs.Drop, Every: 4}, "duration: 500ms, rate: 100, payload: 64, drain: 300ms", "lost", "{lost: 100%}")
	out = append(out, deaths(raw, "rate", setup, "duration: 1500ms, rate: 100, payload: 64, drain: 300ms",
		"lost", "{lost: 100%}", fs.Options{}, 300*time.Millisecond)...)
	// ping
	// A ping without its pong ends its connection: 4 of the 10.
	add("ping", "wrong reply (1 in 25)", fs.Options{Fault: fs.Wrong, Every: 25}, "total: 100, timeout: 1s", "pings failed", "{failed: 100%}")
	add("ping", "absent reply (1 in 25)", fs.Options{Fault: fs.Drop, Every: 25}, "total: 100, timeout: 1s", "pings failed", "{failed: 100%}")
	out = append(out, deaths(raw, "ping", setup, "total: 1000, concurrency: 10, timeout: 300ms",
		"fatal:no open connections left", "{failed: 100%}", fs.Options{Delay: 10 * time.Millisecond}, 300*time.Millisecond)...)
	// close
	add("close", "absent reply", fs.Options{Fault: fs.Drop}, "timeout: 300ms", "closes failed", "{failed: 100%}")
	out = append(out, deaths(raw, "close", setup, "concurrency: 2, timeout: 300ms",
		"closes failed", "{failed: 100%}", fs.Options{Delay: 100 * time.Millisecond}, 100*time.Millisecond)...)
	return out
}

// holdCells: raw connections pinging (their pongs dropped or wrong), and
// every protocol's connections held while its keepalive goes unanswered,
// the server dies or stalls.
func holdCells() []cell {
	raw := mprotos[0]
	setup := "connections: 10"
	var out []cell
	for _, f := range []struct {
		fault          fs.Fault
		label, pending string
	}{{fs.Drop, "absent reply (1 in 4)", ""}, {fs.Wrong, "wrong reply (1 in 4)", ""}} {
		c := raw.on("hold", f.label, fs.Options{Fault: f.fault, Every: 4})
		c.setup, c.body, c.want, c.allow, c.pending = setup, "duration: 1s, ping: 100ms", "pings got no pong", "{pings_lost: 100%}", f.pending
		out = append(out, c)
	}
	out = append(out, deaths(raw, "hold", setup, "duration: 1500ms, ping: 100ms", "pings got no pong",
		"{pings_lost: 100%, dropped: 100%}", fs.Options{}, 300*time.Millisecond)...)
	for _, p := range mprotos[1:] {
		setup := "connections: 5"
		if p.keepalive {
			c := p.on("hold", "keepalive unanswered", fs.Options{Fault: fs.Silent})
			c.setup, c.body, c.want, c.allow = setup, "duration: 2s", "dropped", "{dropped: 100%}"
			out = append(out, c)
		}
		for _, c := range deaths(p, "hold", setup, "duration: 2s", "dropped", "{dropped: 100%}", fs.Options{}, 300*time.Millisecond) {
			if c.proc == procStop && !p.keepalive {
				continue // nothing on the wire to miss: a stall is invisible to a held connection
			}
			out = append(out, c)
		}
	}
	return out
}

// broadcastCells: every protocol's rooms with deliveries corrupt or
// dropped, joins refused, the greeting refused, the server's death or
// stall.
func broadcastCells() []cell {
	const body = "rooms: 2, room_size: 5, rate: 20, duration: 800ms, drain: 300ms, payload: 64, timeout: 1s, retries: 0"
	var out []cell
	for _, p := range mprotos {
		add := func(fault string, o fs.Options, want, allow, pending string) {
			c := p.on("broadcast", fault, o)
			c.body, c.want, c.allow, c.pending = body, want, allow, pending
			out = append(out, c)
		}
		add("wrong reply (1 in 3)", fs.Options{Fault: fs.Wrong, Deliveries: true, Every: 3}, "corrupt", "{failed: 100%}", "")
		add("absent reply (1 in 3)", fs.Options{Fault: fs.Drop, Deliveries: true, Every: 3}, "never came", "{missed: 100%}", "")
		add("refused at the greeting", fs.Options{Fault: fs.Refuse, Spare: 1}, "failed to open", "{open_failed: 100%}", "")
		if p.errors {
			add("error answer (join)", fs.Options{Fault: fs.Error}, "join refused", "{open_failed: 100%}", "")
		}
		// Stalled past the protocol's keepalive, every subscriber is
		// dropped: the phase stops, which no allowance covers.
		stall := "never came"
		if p.keepalive {
			stall = "fatal:stopped early: no connections"
		}
		// The hit lands 800 ms into the phase, after the joins even on a
		// loaded host (at 300 ms a busy one was still joining: "join
		// unanswered"), and 2.7 s before its end: time for mqtt's 1 s
		// keepalive to expire.
		out = append(out, deaths(p, "broadcast", "", strings.Replace(body, "800ms", "3500ms", 1), stall,
			"{missed: 100%, readers_dropped: 100%}", fs.Options{}, 800*time.Millisecond)...)
	}
	return out
}

// churnCells: replacements refused or unanswered at the greeting (after
// the first connections), the server's death or stall.
func churnCells() []cell {
	raw := mprotos[0]
	setup := "connections: 10"
	const body = "duration: 1s, rate: 20, timeout: 300ms, close_timeout: 300ms"
	var out []cell
	for _, g := range []struct {
		fault fs.Fault
		label string
	}{{fs.Refuse, "refused at the greeting"}, {fs.Mute, "greeting unanswered"}} {
		// Spared: the target probe and the 10 connections of the setup.
		c := raw.on("churn", g.label, fs.Options{Fault: g.fault, Spare: 11})
		c.setup, c.body, c.want, c.allow = setup, body, "replacements failed", "{failed: 100%}"
		out = append(out, c)
	}
	return append(out, deaths(raw, "churn", setup, body, "replacements failed", "{failed: 100%, dropped: 100%}", fs.Options{}, 300*time.Millisecond)...)
}

// scriptCells: every protocol's exchanges answered with an error, wrongly
// or not at all, refused at the greeting, downgraded or over quota
// (MQTT), the server's death or stall.
func scriptCells() []cell {
	const head = "users: 5, timeout: 300ms, drain: 1s, connect_timeout: 500ms"
	steps := func(p mproto, count int, think string) string {
		step := p.exchange
		if think != "" {
			step = "{think: " + think + "}, " + step
		}
		return ", steps: [{loop: {count: " + strconv.Itoa(count) + ", steps: [" + step + "]}}]"
	}
	var out []cell
	for _, p := range mprotos {
		add := func(fault string, o fs.Options, extra, want, allow string) {
			c := p.on("script", fault, o)
			c.body, c.want, c.allow = head+extra+steps(p, 5, ""), want, allow
			out = append(out, c)
		}
		if p.errors {
			allow := "{errors: 100%}"
			if p.label == "stomp" {
				allow = "{errors: 100%, users_failed: 100%, failed: 1000}" // an ERROR ends the connection, and its user's expects
			}
			add("error answer", fs.Options{Fault: fs.Error}, "", "error answers", allow)
		}
		if p.checked {
			add("wrong reply", fs.Options{Fault: fs.Wrong}, "", "replies mismatched", "{mismatched: 1000}")
		} else {
			add("wrong reply", fs.Options{Fault: fs.Wrong}, "", "no reply in time", "{timeouts: 1000}")
		}
		add("absent reply", fs.Options{Fault: fs.Drop}, "", "no reply in time", "{timeouts: 1000}")
		add("refused at the greeting", fs.Options{Fault: fs.Refuse, Spare: 1}, "", "could not connect", "{open_failed: 5}")
		// A stall past the protocol's keepalive ends its users first; on a
		// loaded host it may land before some have connected (open_failed).
		out = append(out, deaths(p, "script", "", head+steps(p, 40, "25ms"), "no reply in time|lost their connection|could not connect",
			"{timeouts: 1000, failed: 1000, users_failed: 100%, open_failed: 5}", fs.Options{}, 300*time.Millisecond)...)
	}
	return append(out, mqttCells()...)
}

// mqttCells: MQTT's downgrades and its v5 quota (Receive Maximum).
func mqttCells() []cell {
	mq := mprotos[3]
	const head = "users: 2, timeout: 500ms, drain: 1s"
	var out []cell
	add := func(fault string, o fs.Options, steps, assert, want, allow string, ok bool) {
		c := mq.on("script", fault, o)
		c.body, c.assert, c.want, c.allow, c.wantOK = head+", steps: ["+steps+"]", assert, want, allow, ok
		out = append(out, c)
	}
	add("downgrade (QoS 2 → PUBACK)", fs.Options{Fault: fs.Downgrade}, `{loop: {count: 5, steps: [{publish: {topic: "t/{{.conn}}", payload: m, qos: 2, as: x}}]}}`,
		"", "downgraded", "{downgraded: 100%}", false)
	add("downgrade (SUBACK QoS 0)", fs.Options{Fault: fs.Downgrade}, `{subscribe: {topic: "t/{{.conn}}", qos: 1, as: x}}`,
		"", "downgraded", "{downgraded: 100%}", false)
	const burst = `{loop: {count: 40, inflight: 8, steps: [{publish: {topic: "t/{{.conn}}", payload: m, qos: 1, as: x}}]}}`
	add("quota (0x97 under Receive Maximum)", fs.Options{Fault: fs.Quota, ReceiveMaximum: 4, Quota: 2}, burst,
		"", "error answers", "{errors: 100%}", false)
	add("quota (Receive Maximum honoured)", fs.Options{Fault: fs.Quota, ReceiveMaximum: 2}, burst,
		"x_count == 80", "", "", true)
	return out
}

// mosquittoCells: the faults a real broker produces as it is configured
// (Debian's mosquitto 2, MQTT 5): anonymous clients refused, a publish
// its ACL denies (PUBACK 0x87), a subscription above its max_qos
// (SUBACK of a lower QoS), its max_inflight_messages as Receive Maximum
// (PUBREC 0x97 beyond it), and the broker killed or stopped.
func mosquittoCells() []cell {
	mq := mprotos[3]
	anon := []string{"allow_anonymous true"}
	var out []cell
	add := func(c cell, lines ...string) {
		c.mosquitto = append(append([]string(nil), anon...), lines...)
		c.server = fs.Options{}
		out = append(out, c)
	}
	c := mq.on("connect", "refused at the greeting", fs.Options{})
	c.body, c.want, c.allow = "connections: 10, timeout: 1s", "not authorized&×10", "{failed: 100%}"
	c.mosquitto = []string{"allow_anonymous false"}
	out = append(out, c)
	for _, d := range deaths(mq, "hold", "connections: 5", "duration: 2s", "dropped", "{dropped: 100%}", fs.Options{}, 300*time.Millisecond) {
		add(d)
	}
	const head = "users: 2, timeout: 1s, drain: 1s, steps: ["
	s := mq.on("script", "error answer (ACL)", fs.Options{})
	s.body, s.want, s.allow, s.pending = head+`{loop: {count: 5, steps: [{publish: {topic: "t/{{.conn}}", payload: m, qos: 1, as: x}}]}}]`, "error answers", "{errors: 100%}", ""
	add(s, "acl:topic readwrite ok/#")
	s = mq.on("script", "downgrade (SUBACK, max_qos 1)", fs.Options{})
	s.body, s.want, s.allow, s.pending = head+`{subscribe: {topic: "t/{{.conn}}", qos: 2, as: x}}]`, "downgraded", "{downgraded: 100%}", ""
	add(s, "max_qos 1")
	s = mq.on("script", "quota (Receive Maximum 4, honoured)", fs.Options{})
	s.body, s.assert, s.wantOK, s.pending = head+`{loop: {count: 100, inflight: 16, steps: [{publish: {topic: "t/{{.conn}}", payload: m, qos: 2, as: x}}]}}]`, "x_count == 200", true, ""
	add(s, "max_inflight_messages 4")
	return out
}
