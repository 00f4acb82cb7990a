package script

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"
)

// Op is what an instruction does.
type Op uint8

// The instructions.
const (
	OpSend    Op = iota + 1 // render Tmpl, send it
	OpExpect                // wait for a matching message
	OpThink                 // pause
	OpLoop                  // start (or continue) a loop
	OpEndLoop               // the end of a loop's body: back to its OpLoop
	OpClose                 // close the connection; the user ends
)

// MaxDepth bounds how deeply loops nest.
const MaxDepth = 4

// Instr is one instruction of a Program.
type Instr struct {
	Op    Op
	Label string // the step's place in the plan, e.g. steps[3].loop.steps[1].expect

	// OpSend. Verb is a protocol's verb ("" = a plain message, Tmpl its
	// body); Topic its event, method, topic or destination.
	Tmpl   *Template
	Binary bool
	Verb   string
	Topic  *Template
	QoS    uint8
	Ack    bool // ask the protocol for an answer (Socket.IO ack, STOMP receipt)

	// OpExpect.
	Match     *Matcher
	Until     *Matcher // nil = complete after Count matches
	Count     int      // >= 1
	Timeout   time.Duration
	Exchange  int // index in Program.Exchanges; -1 = not an exchange
	Correlate *Path
	Captures  []Capture
	Window    int  // iterations that may wait at once (the enclosing loop's inflight; 1 = none)
	Send      int  // pc of the send this expect answers; -1 = none (a message the server pushes)
	ByID      bool // the protocol's answer to the send: matched by the id the protocol gave it

	// OpThink.
	Think ThinkDist

	// OpLoop and OpEndLoop.
	LoopCount    int64         // 0 = no count limit
	LoopDuration time.Duration // 0 = no time limit
	Inflight     int           // >= 1
	Pair         int           // OpLoop: pc after its OpEndLoop; OpEndLoop: pc of its OpLoop
	Depth        int           // nesting of the loop (0 = outermost)

	// OpClose.
	Code int
}

// Capture keeps the value at Path of a matched message as capture Index.
type Capture struct {
	Index int
	Path  Path
}

// ThinkDist is a pause's distribution.
type ThinkDist struct {
	Kind uint8 // ThinkFixed, ThinkUniform, ThinkExponential
	A, B time.Duration
}

// Think distributions.
const (
	ThinkFixed = iota
	ThinkUniform
	ThinkExponential
)

// Draw returns one pause.
func (d ThinkDist) Draw(r *rand.ChaCha8) time.Duration {
	switch d.Kind {
	case ThinkUniform:
		if d.B <= d.A {
			return d.A
		}
		return d.A + time.Duration(r.Uint64()%uint64(d.B-d.A+1))
	case ThinkExponential:
		u := float64(r.Uint64()>>11+1) / (1 << 53) // (0, 1]
		return time.Duration(-math.Log(u) * float64(d.A))
	}
	return d.A
}

// Program is a compiled script.
type Program struct {
	Instrs    []Instr
	Ignore    []*Matcher
	Exchanges []string // exchange names (Expect.As), by index
	Captures  []string // capture names, by index
	Columns   []string
	// Depth is the deepest loop nesting + 1 (0 = no loop).
	Depth int
}

// Error is a problem with one field of a script; Field is a path below the
// phase ("steps[2].expect.correlate").
type Error struct {
	Field string
	Msg   string
}

func (e Error) Error() string { return e.Field + ": " + e.Msg }

// Source is what Compile compiles: a script's steps and the messages it
// ignores, the data columns its templates may read, and the default
// timeout of its expects.
type Source struct {
	Steps   []Step  `json:"steps"`
	Ignore  []Match `json:"ignore,omitempty"`
	Columns []string
	Timeout time.Duration
	// AnyColumns accepts every {{.row.X}}: the data file could not be
	// read (its own error says so; its columns are unknown).
	AnyColumns bool
	// Answers is the server's protocol's rule for which verb steps it
	// answers; nil = the protocol is not known yet (a plan's phase,
	// before its servers are): a step that wants an answer (as, reply,
	// capture) or that DefaultAnswers answers is taken as answered.
	Answers AnswerRule
}

var exchangeName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// compiler holds Compile's state.
type compiler struct {
	p     *Program
	env   Env
	errs  []Error
	names map[string]string // exchange name -> its step
	rule  AnswerRule        // nil = the protocol is not known
}

// Compile compiles a script. Every problem is returned at once.
func Compile(src Source) (*Program, []Error) {
	c := &compiler{
		p:     &Program{Columns: src.Columns},
		env:   Env{Columns: src.Columns, AnyColumns: src.AnyColumns, Captures: map[string]int{}, Set: map[string]bool{}},
		names: map[string]string{},
		rule:  src.Answers,
	}
	c.declareCaptures(src.Steps, "steps")
	if len(src.Steps) == 0 {
		c.fail("steps", "a script needs at least one step")
	}
	c.steps(src.Steps, "steps", 0, 1, src.Timeout)
	for i := range src.Ignore {
		m, err := ParseMatch(&src.Ignore[i], &Env{Columns: src.Columns, AnyColumns: src.AnyColumns})
		if err != nil {
			c.fail(fmt.Sprintf("ignore[%d]", i), "%s", err)
			continue
		}
		if m.Empty() {
			c.fail(fmt.Sprintf("ignore[%d]", i), "an ignore pattern needs json, expr, regex or prefix")
			continue
		}
		c.p.Ignore = append(c.p.Ignore, m)
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return c.p, nil
}

func (c *compiler) fail(field, format string, args ...any) {
	c.errs = append(c.errs, Error{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// declareCaptures numbers every capture name (in order of appearance), so
// that "used before it is set" can be told from "unknown".
func (c *compiler) declareCaptures(steps []Step, path string) {
	for i := range steps {
		s := &steps[i]
		if s.Expect != nil {
			for name := range s.Expect.Capture {
				if _, ok := c.env.Captures[name]; !ok {
					c.env.Captures[name] = len(c.p.Captures)
					c.p.Captures = append(c.p.Captures, name)
				}
			}
		}
		if s.Loop != nil {
			c.declareCaptures(s.Loop.Steps, path)
		}
	}
}

// steps compiles a list of steps at nesting depth, inside a loop of
// window iterations in flight (1 = not pipelined).
func (c *compiler) steps(steps []Step, path string, depth, window int, timeout time.Duration) {
	lastSend := -1
	for i := range steps {
		s := withDefaults(&steps[i])
		at := fmt.Sprintf("%s[%d]", path, i)
		verb, n := s.Verb()
		if _, body := stepBody(s); n == 1 {
			c.bounds(body, at+"."+verb)
		}
		if vs, ok := verbOf(s); ok && n == 1 {
			lastSend = c.verb(vs, at+"."+verb, window, timeout)
			continue
		}
		switch {
		case n == 0:
			c.fail(at, "empty step: want one of send, expect, think, loop, close (e.g. close: true)")
			continue
		case n > 1:
			c.fail(at, "a step has one key (send, expect, think, loop or close), got %d: start each step with its own -", n)
			continue
		}
		at += "." + verb
		switch verb {
		case VerbSend:
			lastSend = c.send(s.Send, at)
		case VerbExpect:
			c.expect(s.Expect, at, lastSend, window, timeout)
		case VerbThink:
			c.think(s.Think, at)
		case VerbLoop:
			c.loop(s.Loop, at, depth, timeout)
			lastSend = -1
		case VerbClose:
			code := s.Close.Code
			if code == 1004 || code == 1005 || code == 1006 || code == 1015 {
				c.fail(at+".code", "%d is reserved: a client may not send it (1004–1006, 1015)", code)
			}
			c.p.Instrs = append(c.p.Instrs, Instr{Op: OpClose, Label: at, Code: code})
		}
	}
}

// verb compiles a verb step: its send, and the expect of its answer when
// its protocol answers it. It returns the send's pc (-1 on error).
func (c *compiler) verb(v verbStep, at string, window int, timeout time.Duration) int {
	if v.topic == "" {
		what := map[string]string{VerbEmit: "event", VerbCall: "method", VerbNotify: "method"}[v.verb]
		if what == "" {
			what = "topic"
		}
		c.fail(at+"."+what, "is required")
		return -1
	}
	topic, err := ParseTemplate(v.topic, &c.env)
	if err != nil {
		c.fail(at, "%s", err)
		return -1
	}
	body, err := ParseTemplate(v.body, &c.env)
	if err != nil {
		c.fail(at, "%s", err)
		return -1
	}
	c.p.Instrs = append(c.p.Instrs, Instr{Op: OpSend, Label: at, Tmpl: body, Verb: v.verb, Topic: topic, QoS: uint8(v.qos), Ack: v.ack})
	send := len(c.p.Instrs) - 1
	if !c.answered(&v) {
		if v.asks() {
			c.fail(at, "the protocol does not answer this %s: as, reply and capture need an answer (ack: true, qos > 0 or receipt: true)", v.verb)
		}
		return send
	}
	e := &Expect{Timeout: v.answer.Timeout, As: v.answer.As, Capture: v.answer.Capture}
	if v.answer.Reply != nil {
		e.Match = *v.answer.Reply
	}
	c.expect(e, at, send, window, timeout)
	c.p.Instrs[len(c.p.Instrs)-1].ByID = true
	return send
}

// answered reports whether the server's protocol answers v (without a
// protocol: whether it may).
func (c *compiler) answered(v *verbStep) bool {
	if c.rule != nil {
		return c.rule(v.verb, v.ack, v.asks(), v.qos)
	}
	return v.answered || v.asks()
}

// send compiles a send and returns its pc (-1 on error).
func (c *compiler) send(s *Send, at string) int {
	src, bin := s.Template()
	t, err := ParseTemplate(src, &c.env)
	if err != nil {
		c.fail(at, "%s", err)
		return -1
	}
	c.p.Instrs = append(c.p.Instrs, Instr{Op: OpSend, Label: at, Tmpl: t, Binary: bin})
	return len(c.p.Instrs) - 1
}

// expect compiles an expect; send is the pc of the send before it in the
// same body (-1 = none).
func (c *compiler) expect(e *Expect, at string, send, window int, timeout time.Duration) {
	in := Instr{Op: OpExpect, Label: at, Count: max(e.Count, 1), Exchange: -1, Window: window, Send: send, Timeout: timeout}
	if e.Timeout > 0 {
		in.Timeout = e.Timeout.D()
	}
	if in.Timeout <= 0 {
		c.fail(at+".timeout", "must be > 0 (the phase's timeout is not set)")
	}
	m, err := ParseMatch(&e.Match, &c.env)
	if err != nil {
		c.fail(at, "%s", err)
	}
	in.Match = m
	if e.Until != nil {
		if e.Count > 0 {
			c.fail(at+".until", "give count or until, not both")
		}
		u, err := ParseMatch(e.Until, &c.env)
		if err != nil {
			c.fail(at+".until", "%s", err)
		} else if u.Empty() {
			c.fail(at+".until", "needs json, expr, regex or prefix")
		}
		in.Until, in.Count = u, 0
	}
	if e.As != "" {
		c.exchange(&in, e.As, at)
	}
	if e.Correlate != "" {
		c.correlate(&in, e.Correlate, at, send)
	}
	for name, path := range e.Capture {
		switch {
		case IsReserved(name):
			c.fail(at+".capture."+name, "%q is a template field: name the capture otherwise", name)
			continue
		case !exchangeName.MatchString(name):
			c.fail(at+".capture."+name, "a capture's name is lower-case letters, digits and _, got %q", name)
			continue
		}
		p, err := ParsePath(path)
		if err != nil {
			c.fail(at+".capture."+name, "%s", err)
			continue
		}
		in.Captures = append(in.Captures, Capture{Index: c.env.Captures[name], Path: p})
	}
	c.p.Instrs = append(c.p.Instrs, in)
	// Later steps may read what this one captured.
	for name := range e.Capture {
		c.env.Set[name] = true
	}
}

// exchange names the expect's exchange.
func (c *compiler) exchange(in *Instr, name, at string) {
	if !exchangeName.MatchString(name) {
		c.fail(at+".as", "an exchange's name is lower-case letters, digits and _ (its metrics are <name>_p99, …), got %q", name)
		return
	}
	if other, dup := c.names[name]; dup {
		c.fail(at+".as", "exchange %q is named twice (also %s)", name, other)
		return
	}
	c.names[name] = at
	in.Exchange = len(c.p.Exchanges)
	c.p.Exchanges = append(c.p.Exchanges, name)
}

// correlate checks that the send before the expect writes the id path:
// its template, rendered with sample values, must be JSON with a value
// there.
func (c *compiler) correlate(in *Instr, path, at string, send int) {
	p, err := ParsePath(path)
	if err != nil {
		c.fail(at+".correlate", "%s", err)
		return
	}
	if send < 0 {
		c.fail(at+".correlate", "needs a send before it in the same steps: replies are matched to what it wrote")
		return
	}
	s := &c.p.Instrs[send]
	sample, _ := s.Tmpl.Append(nil, sampleVars(len(c.p.Columns), len(c.p.Captures))) // sample values are short
	if !json.Valid(sample) {
		c.fail(at+".correlate", "%s's message is not JSON (rendered with sample values: %s)", s.Label, clip(sample))
		return
	}
	if !p.Writes(sample) {
		c.fail(at+".correlate", "%s's template never writes %s (rendered with sample values: %s)", s.Label, path, clip(sample))
		return
	}
	in.Correlate = &p
}

// sampleVars are the values a template is rendered with at load.
func sampleVars(cols, caps int) *Vars {
	v := &Vars{Conn: 0, Seq: 1, Iter: 0, NowNs: 1, Rand: rand.NewChaCha8([32]byte{})}
	for range cols {
		v.Row = append(v.Row, []byte("x"))
	}
	for range caps {
		v.Captures = append(v.Captures, []byte("x"))
	}
	return v
}

func clip(b []byte) string {
	s := string(b)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// think compiles a pause.
func (c *compiler) think(t *Think, at string) {
	var d ThinkDist
	n := 0 // a negative pause is reported by bounds
	if t.Fixed != 0 {
		d, n = ThinkDist{Kind: ThinkFixed, A: t.Fixed.D()}, n+1
	}
	if j := t.Jitter.D(); j > t.Fixed.D() && j > 0 {
		c.fail(at+".jitter", "must be <= fixed (%s), got %s", t.Fixed, t.Jitter)
	} else if j > 0 {
		d = ThinkDist{Kind: ThinkUniform, A: t.Fixed.D() - j, B: t.Fixed.D() + j}
	}
	if len(t.Uniform) > 0 {
		n++ // a list of another length is reported by bounds
		if u := t.Uniform; len(u) == 2 && (u[0] > u[1] || u[0] < 0) {
			c.fail(at+".uniform", "want [min, max] with 0 <= min <= max, got %v", u)
		} else if len(u) == 2 {
			d = ThinkDist{Kind: ThinkUniform, A: u[0].D(), B: u[1].D()}
		}
	}
	if t.Exponential != 0 {
		d, n = ThinkDist{Kind: ThinkExponential, A: t.Exponential.D()}, n+1
	}
	if n != 1 {
		c.fail(at, "want one of a duration, {uniform: [min, max]} or {exponential: mean}")
	}
	c.p.Instrs = append(c.p.Instrs, Instr{Op: OpThink, Label: at, Think: d})
}

// loop compiles a loop and its body.
func (c *compiler) loop(l *Loop, at string, depth int, timeout time.Duration) {
	if depth >= MaxDepth {
		c.fail(at, "loops nest at most %d deep", MaxDepth)
		return
	}
	if l.Count == 0 && l.Duration == 0 {
		c.fail(at, "needs count or duration (or both: the first reached ends it)")
	}
	inflight := l.Inflight
	if inflight > 1 {
		c.pipelined(l.Steps, at)
	}
	if len(l.Steps) == 0 {
		c.fail(at+".steps", "a loop needs steps")
	}
	start := len(c.p.Instrs)
	c.p.Instrs = append(c.p.Instrs, Instr{Op: OpLoop, Label: at, LoopCount: l.Count, LoopDuration: l.Duration.D(), Inflight: inflight, Depth: depth})
	c.steps(l.Steps, at+".steps", depth+1, inflight, timeout)
	c.p.Instrs = append(c.p.Instrs, Instr{Op: OpEndLoop, Label: at, Pair: start, Depth: depth})
	c.p.Instrs[start].Pair = len(c.p.Instrs)
	c.p.Depth = max(c.p.Depth, depth+1)
}

// pipelined checks the body of a loop with inflight > 1: [think,] send,
// expect.
func (c *compiler) pipelined(steps []Step, at string) {
	var verbs []string
	for i := range steps {
		v, _ := steps[i].Verb()
		verbs = append(verbs, v)
	}
	got := strings.Join(verbs, ", ")
	got = strings.TrimPrefix(got, "think, ")
	answered := false
	if len(steps) > 0 {
		v, ok := verbOf(&steps[len(steps)-1])
		answered = ok && c.answered(&v)
	}
	if got != "send, expect" && !(answered && !strings.Contains(got, ",")) {
		c.fail(at+".inflight", "with inflight > 1 the loop's steps are a send and its expect, or a verb its protocol answers (after an optional think), got [%s]", strings.Join(verbs, ", "))
	}
}
