package plan

// The YAML parser builds every node of a document before the loader sees
// one (some 200 bytes each), so a plan of MaxPlanBytes made of `[1,1,1…`
// would cost a hundred megabytes before checkTree could count them.
// estimateNodes counts them first, from the text: the indicators that
// start a node outside quoted scalars, comments and block scalars.

// estimateNodes returns about how many YAML nodes data holds: within a
// factor of two of the parser's count for any plan a person writes
// (TestEstimateNodes), and never far below it for a document made of
// nodes. It stops counting past limit.
func estimateNodes(data []byte, limit int) int {
	s := scanner{data: data, lineStart: true, block: -1}
	for s.i < len(data) && s.n <= limit {
		s.step()
	}
	return s.n
}

// scanner is estimateNodes' state.
type scanner struct {
	data      []byte
	i, n      int
	flow      int  // depth of [ and {
	lineStart bool // only spaces since the line began
	indent    int  // the line's indentation
	block     int  // indentation of the key that opened a block scalar; -1: none
}

// space reports whether c separates tokens.
func space(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// at returns data[i], or a newline past the end.
func (s *scanner) at(i int) byte {
	if i < len(s.data) {
		return s.data[i]
	}
	return '\n'
}

// tokenStart reports whether a token may start at i: after a space, an
// indicator or at the start of the data.
func (s *scanner) tokenStart(i int) bool {
	if i == 0 {
		return true
	}
	switch s.data[i-1] {
	case ' ', '\t', '\n', '\r', '[', '{', ',':
		return true
	}
	return false
}

func (s *scanner) step() {
	c := s.data[s.i]
	if s.lineStart {
		switch c {
		case ' ':
			s.indent++
			s.i++
			return
		case '\n', '\r':
			s.newline()
			return
		}
		s.lineStart = false
		if s.block >= 0 && s.indent > s.block {
			s.skipLine() // a block scalar's text
			return
		}
		s.block = -1
	}
	switch {
	case c == '\n':
		s.newline()
		return
	case c == '#' && s.tokenStart(s.i):
		s.skipLine()
		return
	case (c == '\'' || c == '"') && s.tokenStart(s.i):
		s.n++
		s.skipQuoted(c)
		return
	case c == '[' || c == '{':
		s.flow++
		s.n++
	case c == ']' || c == '}':
		s.flow = max(s.flow-1, 0)
	case c == ',' && s.flow > 0:
		s.n++
	case (c == '-' || c == '?') && s.tokenStart(s.i) && space(s.at(s.i+1)):
		s.n++
		s.blockScalar()
	case c == ':' && (space(s.at(s.i+1)) || s.flow > 0 && (s.at(s.i+1) == ',' || s.at(s.i+1) == ']' || s.at(s.i+1) == '}')):
		s.n += 2 // the key and the value
		s.blockScalar()
	case c == '*' && s.tokenStart(s.i):
		s.n++
	}
	s.i++
}

// blockScalar notes a block scalar (| or >) starting after the mapping
// indicator at s.i: the lines indented deeper than this one are its text.
func (s *scanner) blockScalar() {
	j := s.i + 1
	for j < len(s.data) && (s.data[j] == ' ' || s.data[j] == '\t') {
		j++
	}
	if j >= len(s.data) || s.data[j] != '|' && s.data[j] != '>' {
		return
	}
	j++
	for j < len(s.data) && (s.data[j] == '-' || s.data[j] == '+' || s.data[j] >= '0' && s.data[j] <= '9') {
		j++
	}
	if space(s.at(j)) || s.at(j) == '#' {
		s.block = s.indent
	}
}

func (s *scanner) newline() {
	s.i++
	s.lineStart, s.indent = true, 0
}

func (s *scanner) skipLine() {
	for s.i < len(s.data) && s.data[s.i] != '\n' {
		s.i++
	}
}

// skipQuoted skips a quoted scalar: ” is a quote in a single-quoted one,
// \ escapes in a double-quoted one.
func (s *scanner) skipQuoted(q byte) {
	s.i++
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case q == '"' && c == '\\':
			s.i += 2
			continue
		case c == q && q == '\'' && s.at(s.i+1) == '\'':
			s.i += 2
			continue
		case c == q:
			s.i++
			return
		}
		s.i++
	}
}
