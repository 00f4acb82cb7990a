package har

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/wsplan/wsplan/internal/script"
)

// conv is one WebSocket's conversation as Generate reads it.
type conv struct {
	ws     *WebSocket
	msgs   []*msg // its text messages, in order
	binary int    // binary messages left out
	// captures maps a captured value to its capture's name; names holds
	// the names taken.
	captures map[string]string
	names    map[string]int // capture names taken; a base name's count
}

// msg is one text message and what was inferred of it.
type msg struct {
	*Message
	text   string
	json   bool
	leaves []leaf
	send   int // receive: index in conv.msgs of the send before it (-1 = none)

	// A send's leaves written otherwise than recorded, by index in leaves.
	edits map[int]string
	ids   map[int]bool // leaves that are its correlated ids
	// A receive's expect.
	correlate string
	capture   [][2]string // name, path
	as        string
}

// readConv collects a WebSocket's text messages and reads their JSON.
func readConv(ws *WebSocket) *conv {
	c := &conv{ws: ws, captures: map[string]string{}, names: map[string]int{}}
	last := -1
	for i := range ws.Messages {
		m := &ws.Messages[i]
		switch m.Opcode {
		case OpText:
		case OpBinary:
			c.binary++
			continue
		default:
			continue // control frames: the client answers pings itself
		}
		x := &msg{Message: m, text: string(m.Data), send: last, edits: map[int]string{}, ids: map[int]bool{}}
		if isJSON(m.Data) {
			x.json = true
			x.leaves = leaves(x.text)
		}
		if m.Send {
			last = len(c.msgs)
			x.send = -1
		}
		c.msgs = append(c.msgs, x)
	}
	return c
}

// correlate finds, for each reply, an id its request wrote and it carries
// back at the same path.
func (c *conv) correlate() {
	for _, r := range c.msgs {
		if r.Send || r.send < 0 || !r.json {
			continue
		}
		s := c.msgs[r.send]
		if !s.json {
			continue
		}
		for i := range s.leaves {
			l := &s.leaves[i]
			if l.path == "" || !isIDKey(l.key) || (l.typ != gjson.Number && l.typ != gjson.String) {
				continue
			}
			p, err := script.ParsePath(l.path)
			if err != nil {
				continue
			}
			if v, ok := p.Get(r.Data); ok && v.Raw == l.raw {
				r.correlate = l.path
				s.ids[i] = true
				if t, ok := seqTemplate(l); ok {
					s.edits[i] = t
				}
				break
			}
		}
	}
}

// capture finds the values a send carries back that a reply before it
// brought (and the browser had not sent before that reply). It indexes
// the values once: a long recording costs its length, not its square.
func (c *conv) capture() {
	type at struct {
		msg  int
		path string
	}
	brought := map[string][]at{} // value → the replies that carry it, in order
	firstSent := map[string]int{}
	for j, m := range c.msgs {
		for _, l := range m.leaves {
			if l.typ != gjson.String || len(l.str) < minCapture {
				continue
			}
			if _, ok := firstSent[l.str]; m.Send && !ok {
				firstSent[l.str] = j
			}
			if !m.Send && l.path != "" {
				brought[l.str] = append(brought[l.str], at{j, l.path})
			}
		}
	}
	for j, s := range c.msgs {
		if !s.Send || !s.json {
			continue
		}
		for i := range s.leaves {
			l := &s.leaves[i]
			if l.path == "" || l.typ != gjson.String || len(l.str) < minCapture || s.ids[i] || strings.Contains(l.str, "{{") {
				continue
			}
			name, ok := c.captures[l.str]
			if !ok {
				rs := brought[l.str]
				k := sort.Search(len(rs), func(k int) bool { return rs[k].msg >= j }) - 1
				if k < 0 || firstSent[l.str] < rs[k].msg {
					continue
				}
				name = c.name(captureName(l.key))
				c.captures[l.str] = name
				r := c.msgs[rs[k].msg]
				r.capture = append(r.capture, [2]string{name, rs[k].path})
			}
			s.edits[i] = "{{" + script.FuncJSON + " ." + name + "}}"
		}
	}
}

// name returns a capture name not taken yet: base, base_2, …
func (c *conv) name(base string) string {
	if script.IsReserved(base) {
		base += "_value"
	}
	n := base
	for c.names[n] > 0 {
		c.names[base]++
		n = fmt.Sprintf("%s_%d", base, c.names[base])
	}
	c.names[n]++
	return n
}

// registerSecrets notes the credentials the sends carry that are neither
// ids nor captured values: a secret's leaf is written as its variable.
func (c *conv) registerSecrets(sec *secrets) {
	for _, s := range c.msgs {
		if !s.Send || !s.json {
			continue
		}
		for i := range s.leaves {
			l := &s.leaves[i]
			if l.typ != gjson.String || s.ids[i] || s.edits[i] != "" || !isSecret(l.key, l.str) {
				continue
			}
			sec.add(l.str, l.key)
			s.edits[i] = `"` + sec.ref(l.str) + `"`
		}
	}
}

// MaxExchanges is the most named exchanges (as:) a phase gets: each has
// a dozen metrics of its own. Later replies are expects without a name,
// whose timeouts and mismatches count in the phase's.
const MaxExchanges = 100

// nameExchanges names the reply to each send an exchange: the reply whose
// id correlates with it, else the first one after it; the name is the
// send's kind (its type, op, … field), else the reply's, numbered when
// repeated (echo, echo_2). It returns how many replies it left unnamed.
func (c *conv) nameExchanges(taken func(string) bool) (unnamed int) {
	count := map[string]int{}
	named := 0
	for j, s := range c.msgs {
		if !s.Send {
			continue
		}
		r := c.replyTo(j)
		if r == nil {
			continue
		}
		if named == MaxExchanges {
			unnamed++
			continue
		}
		base := ident(kindOf(s))
		if base == "" {
			base = ident(kindOf(r))
		}
		if base == "" {
			base = "reply"
		}
		if taken(base) {
			base += "_exchange"
		}
		n := base
		for count[n] > 0 {
			count[base]++
			n = fmt.Sprintf("%s_%d", base, count[base])
		}
		count[n]++
		r.as = n
		named++
	}
	return unnamed
}

// replyTo returns the reply to send j: the one whose id correlates with
// it, else the first one after it (nil when the next message is a send).
func (c *conv) replyTo(j int) *msg {
	var first *msg
	for _, r := range c.msgs[j+1:] {
		if r.Send {
			break
		}
		if r.correlate != "" {
			return r
		}
		if first == nil {
			first = r
		}
	}
	return first
}

// kindOf returns a JSON message's kind: the value of its first top-level
// kindKeys field that is a string ("" when none).
func kindOf(m *msg) string {
	for _, k := range kindKeys {
		for _, l := range m.leaves {
			if l.path == "$."+k && l.typ == gjson.String {
				return l.str
			}
		}
	}
	return ""
}

// kindMatch returns the fields an expect matches a reply by: its
// top-level kindKeys fields (strings, booleans, numbers that are not ids),
// as path → value.
func kindMatch(m *msg, sec *secrets) [][2]string {
	var out [][2]string
	for _, k := range kindKeys {
		for _, l := range m.leaves {
			if l.path != "$."+k {
				continue
			}
			if len(out) > 0 && out[len(out)-1][0] == l.path {
				break // a key written twice: gjson reads the first
			}
			v := l.raw
			switch l.typ {
			case gjson.String:
				v = l.str
			case gjson.True, gjson.False, gjson.Number:
			default:
				continue
			}
			if v == "" || strings.Contains(v, "{{") || sec.contains(v) || len(v) > 200 {
				continue
			}
			out = append(out, [2]string{l.path, escapeVars(v)})
		}
	}
	return out
}

// template writes a send as a template: its edits in place of the leaves
// they replace, the rest as recorded (secrets as their variables, ${ and
// {{ escaped). ok is false for a text message with {{ that is not JSON:
// a template cannot write it.
func (m *msg) template(sec *secrets) (string, bool) {
	if !m.json {
		if strings.Contains(m.text, "{{") {
			return "", false
		}
		return sec.literal(m.text, false), true
	}
	var b strings.Builder
	pos := 0
	for i := range m.leaves {
		e, ok := m.edits[i]
		l := &m.leaves[i]
		if !ok || l.at < pos || l.at+len(l.raw) > len(m.text) || m.text[l.at:l.at+len(l.raw)] != l.raw {
			continue
		}
		b.WriteString(sec.literal(m.text[pos:l.at], true))
		b.WriteString(e)
		pos = l.at + len(l.raw)
	}
	b.WriteString(sec.literal(m.text[pos:], true))
	return b.String(), true
}

// gap returns the recorded time between message i and the one before it
// (0 when either has no time).
func (c *conv) gap(i int) time.Duration {
	if i == 0 || c.msgs[i].Time.IsZero() || c.msgs[i-1].Time.IsZero() {
		return 0
	}
	return c.msgs[i].Time.Sub(c.msgs[i-1].Time)
}

// escapeVars writes ${ as $${, which the plan loader reads back as ${.
func escapeVars(s string) string { return strings.ReplaceAll(s, "${", "$${") }
