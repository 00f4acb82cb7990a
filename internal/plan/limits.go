package plan

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Loading is bounded whatever the input: any file of up to MaxPlanBytes is
// accepted or rejected in well under two seconds and 200 MB (docs/plans.md,
// Limits; TestHostileBounded holds the loader to it). Each bound below is
// checked where the work it bounds would start, and reported as a
// problem of the plan.
const (
	// MaxPlanBytes bounds a plan file: a longer one is not read further.
	MaxPlanBytes = 1 << 20
	// MaxNodes bounds the YAML nodes of a plan: as parsed, and as the
	// loader visits them with aliases and merge keys expanded.
	MaxNodes = 100_000
	// MaxDepth bounds how deeply a plan's collections nest. The deepest
	// plan a person writes (loops of loops in a script) stays near 25.
	MaxDepth = 64
	// MaxExpansion bounds what variables expand to, summed over every
	// ${name} a load expands (in vars: and in the plan's values).
	MaxExpansion = 1 << 20
	// MaxValueBytes bounds the bytes of the values the loader decodes,
	// summed, with aliases and variables expanded: what a plan may hand
	// to the templates, matchers and expressions compiled at load.
	MaxValueBytes = 2 << 20
	// MaxErrors bounds the problems a load lists; the count of the rest
	// follows them.
	MaxErrors = 100
	// maxListed bounds the names a message lists (known keys, variables).
	maxListed = 50
	// maxMessage bounds a problem's message, in bytes.
	maxMessage = 4096
)

// maxNodes is MaxNodes, under the name the alias bomb test knows.
const maxNodes = MaxNodes

// chargeValue counts n bytes of a decoded value against MaxValueBytes; it
// reports false (once, as an error) when they are spent.
func (l *loader) chargeValue(n int) bool {
	l.valueBytes += n
	if l.valueBytes > MaxValueBytes && !l.valuesSpent {
		l.valuesSpent = true
		l.errf(0, "", "the values decoded, aliases and variables expanded, are more than %d bytes (%s)", MaxValueBytes, sizeName(MaxValueBytes))
	}
	return !l.valuesSpent
}

// readPlan reads at most MaxPlanBytes of the file at path: /dev/zero or a
// runaway generator's output fails here, not in the parser.
func readPlan(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPlanBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if len(data) > MaxPlanBytes {
		return nil, tooBig(path)
	}
	return data, nil
}

// tooBig is the problem of a plan longer than MaxPlanBytes.
func tooBig(name string) Errors {
	return Errors{{File: name, Msg: fmt.Sprintf("the plan is larger than %d bytes (%s): split it, or move data into a data: file", MaxPlanBytes, sizeName(MaxPlanBytes))}}
}

func sizeName(n int) string {
	if n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n>>10) + " KiB"
}

// checkTree counts the nodes of the parsed document (aliases not
// expanded) and its nesting, before anything walks it. It reports false,
// after recording the problem, when either bound is passed.
func (l *loader) checkTree(doc *yaml.Node) bool {
	type item struct {
		n     *yaml.Node
		depth int
	}
	count := 0
	stack := []item{{doc, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		count++
		if count > MaxNodes {
			l.errf(0, "", "the document has more than %d YAML nodes", MaxNodes)
			return false
		}
		if it.depth > MaxDepth {
			l.errf(it.n.Line, "", "collections nest more than %d deep here", MaxDepth)
			return false
		}
		for _, c := range it.n.Content {
			stack = append(stack, item{c, it.depth + 1})
		}
	}
	return true
}

// spend charges n bytes of variable expansion against MaxExpansion. It
// reports false, after recording the problem once, when the budget is
// spent.
func (l *loader) spend(n int, line int, path func() string) bool {
	if l.expanded+n <= MaxExpansion {
		l.expanded += n
		return true
	}
	if l.expanded <= MaxExpansion {
		l.errf(line, path(), "variables expand to more than %d bytes (%s) in all: a variable that uses another several times grows with every level", MaxExpansion, sizeName(MaxExpansion))
		l.expanded = MaxExpansion + 1
	}
	return false
}

// listed joins names for a message, at most maxListed of them.
func listed(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, … (%d in all)", strings.Join(names[:maxListed], ", "), len(names))
}

// maxQuoted bounds the bytes of a value a message quotes.
const maxQuoted = 120

// clipped is s, cut to maxQuoted bytes (at a character's start) with … after.
func clipped(s string) string { return cut(s, maxQuoted) }

// cut is s cut to n bytes, at a character's start, with … after.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// quoteClipped quotes s as strconv.Quote does, clipped to maxQuoted bytes.
func quoteClipped(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(clipped(s))
}

// lineIndex records the line of every key the loader sees, by field path
// (keyPath, indexPath), without keeping each path whole: an entry is its
// parent's entry and its last element, so its memory grows with the keys
// of the plan, not with their depth. Paths are looked up as written by
// any code ("phases[0].script.steps[2].publish.qos"); a path absent from
// the index has the line of its closest ancestor that is present.
type lineIndex struct {
	ids   map[lineKey]int32
	lines []int32 // by id: the key's line; 0 = only its descendants were seen
	given []bool  // by id: written with a value (not null)
	// The path seen last and the id of each of its prefixes: a key's
	// path is mostly its parent's (seen just before it) plus one element.
	last    string
	lastEnd []int   // end of each element of last
	lastIDs []int32 // id of last[:lastEnd[i]]
}

type lineKey struct {
	parent int32
	elem   string
}

func newLineIndex() *lineIndex {
	return &lineIndex{ids: map[lineKey]int32{}, lines: []int32{0}, given: []bool{false}}
}

// nextElem returns the end of the path element starting at i: a key up
// to the next . or [, an index [N], or a quoted key ["k"].
func nextElem(path string, i int) int {
	if path[i] == '[' {
		if i+1 < len(path) && path[i+1] == '"' {
			if q, err := strconv.QuotedPrefix(path[i+1:]); err == nil && i+1+len(q) < len(path) && path[i+1+len(q)] == ']' {
				return i + 1 + len(q) + 1
			}
		}
		if j := strings.IndexByte(path[i:], ']'); j >= 0 {
			return i + j + 1
		}
		return len(path)
	}
	if path[i] == '.' {
		i++
	}
	for j := i; j < len(path); j++ {
		if path[j] == '.' || path[j] == '[' {
			return j
		}
	}
	return len(path)
}

// elem is the element of path between start and end, without the dot
// that separates it.
func elem(path string, start, end int) string {
	if path[start] == '.' {
		start++
	}
	return path[start:end]
}

// add returns the id of path (0: the document), creating its entries.
func (x *lineIndex) add(path string) int32 {
	// Start from the longest prefix shared with the last path that ends
	// at the end of one of its elements.
	c := 0
	for c < len(path) && c < len(x.last) && path[c] == x.last[c] {
		c++
	}
	k := 0
	for k < len(x.lastEnd) && x.lastEnd[k] <= c {
		if e := x.lastEnd[k]; e < len(path) && path[e] != '.' && path[e] != '[' {
			break
		}
		k++
	}
	x.lastEnd, x.lastIDs = x.lastEnd[:k], x.lastIDs[:k]
	start, id := 0, int32(0)
	if k > 0 {
		start, id = x.lastEnd[k-1], x.lastIDs[k-1]
	}
	for start < len(path) {
		end := nextElem(path, start)
		key := lineKey{id, elem(path, start, end)}
		next, ok := x.ids[key]
		if !ok {
			key.elem = strings.Clone(key.elem) // not the whole path's memory
			next = int32(len(x.lines))
			x.ids[key] = next
			x.lines = append(x.lines, 0)
			x.given = append(x.given, false)
		}
		id, start = next, end
		x.lastEnd, x.lastIDs = append(x.lastEnd, end), append(x.lastIDs, id)
	}
	x.last = path
	return id
}

// set records the line of the key at path.
func (x *lineIndex) set(path string, line int) { x.lines[x.add(path)] = int32(line) }

// setGiven records that the key at path has a value.
func (x *lineIndex) setGiven(path string) { x.given[x.add(path)] = true }

// isGiven reports whether the key at path was written with a value.
func (x *lineIndex) isGiven(path string) bool {
	id, start := int32(0), 0
	for start < len(path) {
		end := nextElem(path, start)
		next, ok := x.ids[lineKey{id, elem(path, start, end)}]
		if !ok {
			return false
		}
		id, start = next, end
	}
	return x.given[id]
}

// line returns the line of the key at path, or of its closest ancestor
// present; 0 when none is.
func (x *lineIndex) line(path string) int {
	line, id, start := int32(0), int32(0), 0
	for start < len(path) {
		end := nextElem(path, start)
		next, ok := x.ids[lineKey{id, elem(path, start, end)}]
		if !ok {
			break
		}
		if x.lines[next] > 0 {
			line = x.lines[next]
		}
		id, start = next, end
	}
	return int(line)
}
