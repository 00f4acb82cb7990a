package script

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"text/template/parse"
	"unicode/utf8"
)

// Templates are Go template syntax (text/template/parse reads them), with
// a fixed set of fields and functions, compiled into segments that
// Append writes into a buffer without allocating:
//
//	{{.conn}}            the user's number (0-based, over every loop and shard)
//	{{.seq}}             the user's sends so far, this one included (1, 2, …)
//	{{.iter}}            the user's iteration of the script (0-based)
//	{{.now}}             wall clock, Unix milliseconds; {{.now_ns}} nanoseconds
//	{{.row.COLUMN}}      the user's data row
//	{{.NAME}}            a value captured by an earlier expect
//	{{randInt 1 100}}    a random integer in [1, 100]
//	{{randString 16}}    16 random letters and digits
//	{{json .row.name}}   a field written as a JSON string, quoted and escaped
//
// Anything else (if, range, variables, other functions) is an error.

// Template field names.
const (
	FieldConn  = "conn"
	FieldSeq   = "seq"
	FieldIter  = "iter"
	FieldNow   = "now"
	FieldNowNs = "now_ns"
	FieldRow   = "row"
)

// Template function names.
const (
	FuncRandInt    = "randInt"
	FuncRandString = "randString"
	FuncJSON       = "json"
)

// builtinFields are the fields every template has.
var builtinFields = []string{FieldConn, FieldSeq, FieldIter, FieldNow, FieldNowNs}

// IsReserved reports whether name cannot be a capture's name.
func IsReserved(name string) bool {
	return name == FieldRow || slices.Contains(builtinFields, name)
}

// segment kinds.
const (
	segText = iota
	segConn
	segSeq
	segIter
	segNow
	segNowNs
	segRow
	segCapture
	segRandInt
	segRandString
)

type segment struct {
	kind   uint8
	quote  bool   // written as a JSON string (the json function)
	text   []byte // segText
	idx    int    // segRow: column; segCapture: capture index
	lo, hi int64  // segRandInt: bounds; segRandString: lo = length
}

// Template is a compiled template.
type Template struct {
	src  string
	segs []segment
	max  int // bytes the fixed segments need at most (a capacity hint)
}

// MaxTemplateBytes bounds what a template's text, numbers and random
// strings render to; a {{.row.COLUMN}} adds at most a data file's line
// (MaxLineBytes), a capture what it captured.
const MaxTemplateBytes = 1 << 20

// MaxRenderBytes bounds what a template renders at run time, captured
// values and data columns included: a send, a topic, a header or query of
// the upgrade, a matcher's wanted value. A rendering that would pass it
// stops there (Append reports it), so a capture that grows each time it
// is sent back never grows memory past it.
const MaxRenderBytes = 4 << 20

// maxNumber is the most bytes a number renders to (-9223372036854775808),
// quoted.
const maxNumber = 22

// Vars are the values a template reads, one set per user.
type Vars struct {
	Conn, Seq, Iter int64
	NowNs           int64    // wall clock, Unix ns, read once by the caller
	Row             [][]byte // the user's data row, by column
	Captures        [][]byte // captured values, by index (Env.Captures)
	Rand            *rand.ChaCha8
}

// Env is what a template may name.
type Env struct {
	Columns []string // the data file's columns
	// AnyColumns accepts every column name (the file's columns are not
	// known: it could not be read, which is reported on its own).
	AnyColumns bool
	// Captures maps capture names to their index in Vars.Captures; Set
	// holds those some earlier step sets (a template may read only
	// those).
	Captures map[string]int
	Set      map[string]bool
}

// String returns the template's source.
func (t *Template) String() string { return t.src }

// Static reports whether the template renders the same bytes every time.
func (t *Template) Static() bool {
	for _, s := range t.segs {
		if s.kind != segText {
			return false
		}
	}
	return true
}

// ParseTemplate compiles src against env.
func ParseTemplate(src string, env *Env) (*Template, error) {
	funcs := map[string]any{FuncRandInt: true, FuncRandString: true, FuncJSON: true}
	trees, err := parse.Parse("t", src, "{{", "}}", funcs)
	if err != nil {
		return nil, fmt.Errorf("template %q: %s", clip([]byte(src)), strings.TrimPrefix(err.Error(), "template: t:1: "))
	}
	t := &Template{src: src}
	tree := trees["t"]
	if tree == nil || tree.Root == nil {
		return t, nil
	}
	for _, n := range tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			t.segs = append(t.segs, segment{kind: segText, text: slices.Clone(n.Text)})
			t.max += len(n.Text)
		case *parse.ActionNode:
			s, err := actionSegment(n, env)
			if err != nil {
				return nil, fmt.Errorf("template %q: %w", clip([]byte(src)), err)
			}
			t.segs = append(t.segs, s)
			t.max += maxNumber
			if s.kind == segRandString {
				t.max += int(s.lo)
			}
		default:
			return nil, fmt.Errorf("template %q: %s is not supported: use fields and randInt, randString, json only", clip([]byte(src)), n)
		}
		if t.max > MaxTemplateBytes {
			return nil, fmt.Errorf("template %q renders more than %d bytes (1 MiB) of text, numbers and random strings", clip([]byte(src)), MaxTemplateBytes)
		}
	}
	return t, nil
}

// actionSegment compiles one {{…}}.
func actionSegment(n *parse.ActionNode, env *Env) (segment, error) {
	if len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 {
		return segment{}, fmt.Errorf("%s: want one field or function, no variables or pipes", n)
	}
	args := n.Pipe.Cmds[0].Args
	if f, ok := args[0].(*parse.FieldNode); ok && len(args) == 1 {
		return fieldSegment(f.Ident, env)
	}
	id, ok := args[0].(*parse.IdentifierNode)
	if !ok {
		return segment{}, fmt.Errorf("%s: want a field such as .conn or a function", n)
	}
	switch id.Ident {
	case FuncJSON:
		f, ok := argField(args)
		if !ok {
			return segment{}, fmt.Errorf("%s: json takes one field, e.g. {{json .row.name}}", n)
		}
		s, err := fieldSegment(f.Ident, env)
		s.quote = true
		return s, err
	case FuncRandInt:
		lo, hi, ok := intArgs(args)
		if !ok || lo > hi {
			return segment{}, fmt.Errorf("%s: randInt takes two integers, min <= max", n)
		}
		return segment{kind: segRandInt, lo: lo, hi: hi}, nil
	case FuncRandString:
		ln, ok := intArg(args)
		if !ok || ln < 1 || ln > 4096 {
			return segment{}, fmt.Errorf("%s: randString takes a length in [1, 4096]", n)
		}
		return segment{kind: segRandString, lo: ln}, nil
	}
	return segment{}, fmt.Errorf("%s: unknown function %q", n, id.Ident)
}

func argField(args []parse.Node) (*parse.FieldNode, bool) {
	if len(args) != 2 {
		return nil, false
	}
	f, ok := args[1].(*parse.FieldNode)
	return f, ok
}

func intArg(args []parse.Node) (int64, bool) {
	if len(args) != 2 {
		return 0, false
	}
	x, ok := args[1].(*parse.NumberNode)
	if !ok || !x.IsInt {
		return 0, false
	}
	return x.Int64, true
}

func intArgs(args []parse.Node) (a, b int64, ok bool) {
	if len(args) != 3 {
		return 0, 0, false
	}
	x, ok1 := args[1].(*parse.NumberNode)
	y, ok2 := args[2].(*parse.NumberNode)
	if !ok1 || !ok2 || !x.IsInt || !y.IsInt {
		return 0, 0, false
	}
	return x.Int64, y.Int64, true
}

// fieldSegment compiles a field reference (.conn, .row.user, .token).
func fieldSegment(ident []string, env *Env) (segment, error) {
	name := ident[0]
	if name == FieldRow {
		if len(ident) != 2 {
			return segment{}, fmt.Errorf(".row takes a column: .row.NAME")
		}
		i := slices.Index(env.Columns, ident[1])
		if i < 0 && env.AnyColumns {
			return segment{kind: segRow, idx: len(env.Columns)}, nil // never rendered
		}
		if i < 0 {
			if len(env.Columns) == 0 {
				return segment{}, fmt.Errorf(".row.%s: the phase has no data: file", ident[1])
			}
			return segment{}, fmt.Errorf(".row.%s: no such column (columns: %s)", ident[1], strings.Join(env.Columns, ", "))
		}
		return segment{kind: segRow, idx: i}, nil
	}
	if len(ident) != 1 {
		return segment{}, fmt.Errorf(".%s: fields have no parts but .row.COLUMN", strings.Join(ident, "."))
	}
	switch name {
	case FieldConn:
		return segment{kind: segConn}, nil
	case FieldSeq:
		return segment{kind: segSeq}, nil
	case FieldIter:
		return segment{kind: segIter}, nil
	case FieldNow:
		return segment{kind: segNow}, nil
	case FieldNowNs:
		return segment{kind: segNowNs}, nil
	}
	idx, ok := env.Captures[name]
	if !ok {
		names := append([]string{}, builtinFields...)
		for c := range env.Captures {
			names = append(names, c)
		}
		slices.Sort(names)
		return segment{}, fmt.Errorf("unknown field .%s: want one of .%s or .row.COLUMN", name, strings.Join(names, ", ."))
	}
	if !env.Set[name] {
		return segment{}, fmt.Errorf(".%s is used before any step captures it", name)
	}
	return segment{kind: segCapture, idx: idx}, nil
}

const randChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// Append renders the template with v onto dst. It reports false, with
// dst as it was, when the rendering would pass MaxRenderBytes.
func (t *Template) Append(dst []byte, v *Vars) ([]byte, bool) {
	base := len(dst)
	for i := range t.segs {
		s := &t.segs[i]
		start := len(dst)
		switch s.kind {
		case segText:
			dst = append(dst, s.text...) // the text is bounded at load
			continue
		case segConn:
			dst = strconv.AppendInt(dst, v.Conn, 10)
		case segSeq:
			dst = strconv.AppendInt(dst, v.Seq, 10)
		case segIter:
			dst = strconv.AppendInt(dst, v.Iter, 10)
		case segNow:
			dst = strconv.AppendInt(dst, v.NowNs/1e6, 10)
		case segNowNs:
			dst = strconv.AppendInt(dst, v.NowNs, 10)
		case segRow:
			if s.idx < len(v.Row) {
				if len(dst)-base+len(v.Row[s.idx]) > MaxRenderBytes {
					return dst[:base], false
				}
				dst = append(dst, v.Row[s.idx]...)
			}
		case segCapture:
			if s.idx < len(v.Captures) {
				if len(dst)-base+len(v.Captures[s.idx]) > MaxRenderBytes {
					return dst[:base], false
				}
				dst = append(dst, v.Captures[s.idx]...)
			}
		case segRandInt:
			span := uint64(s.hi - s.lo + 1)
			r := v.Rand.Uint64()
			if span != 0 {
				r %= span
			}
			dst = strconv.AppendInt(dst, s.lo+int64(r), 10)
		case segRandString:
			for range s.lo {
				dst = append(dst, randChars[v.Rand.Uint64()%uint64(len(randChars))])
			}
		}
		if s.quote {
			dst = quoteTail(dst, start)
		}
		if len(dst)-base > MaxRenderBytes {
			return dst[:base], false
		}
	}
	return dst, true
}

// quoteTail rewrites dst[start:] as a JSON string literal, in place where
// nothing needs escaping (the common case: no allocation beyond growth).
func quoteTail(dst []byte, start int) []byte {
	raw := dst[start:]
	esc := 0
	for _, c := range raw {
		if c < 0x20 || c == '"' || c == '\\' {
			esc++
		}
	}
	if esc == 0 && utf8.Valid(raw) {
		dst = append(dst, 0, 0)
		copy(dst[start+1:], dst[start:len(dst)-2])
		dst[start] = '"'
		dst[len(dst)-1] = '"'
		return dst
	}
	q, _ := json.Marshal(string(raw)) // rare: escapes needed; a string always marshals
	return append(dst[:start], q...)
}
