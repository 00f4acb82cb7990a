// Package reference renders the plan's reference tables — every key with
// its type, default, bounds and doc — from the JSON Schema that
// internal/schema generates out of the key declarations (the tags of the
// loader's, the kinds' and the steps' structs, the frameworks registry),
// and keeps them in the marked regions of the docs/ pages:
//
//	<!-- BEGIN GENERATED: wsplan reference kind echo -->
//	| key | type | default | bounds | doc |
//	…
//	<!-- END GENERATED -->
//
// Data flow: schema.Generate → Tables (one table per region name: keys,
// section NAME, kind NAME, options) → Fill, which replaces each region's
// body in a page's text. docs' TestReference checks the pages are current
// and rewrites them with -update. Nothing here names a key, a kind or a
// protocol: a key declared anywhere appears in its section's or kind's
// table without an edit here.
package reference

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/wsplan/wsplan/internal/schema"
)

// The region markers. A region's name follows Begin: "kind echo".
const (
	Begin = "<!-- BEGIN GENERATED: wsplan reference "
	End   = "<!-- END GENERATED -->"
	// Command regenerates every region.
	Command = "go test ./docs -run TestReference -update"
)

// Region name prefixes: the top-level keys, one top-level section's keys,
// one phase kind's keys, and every framework's options.
const (
	RegionKeys    = "keys"
	RegionSection = "section "
	RegionKind    = "kind "
	RegionOptions = "options"
)

// Row is one key of a table.
type Row struct {
	Key, Type, Default, Bounds, Doc string
}

// node is a schema object as decoded from JSON.
type node = map[string]any

// Tables renders the schema's tables as Markdown, by region name.
func Tables() (map[string]string, error) {
	b, err := schema.Generate()
	if err != nil {
		return nil, err
	}
	return TablesOf(b)
}

// TablesOf renders the tables of a schema given as JSON.
func TablesOf(schemaJSON []byte) (map[string]string, error) {
	var root node
	if err := json.Unmarshal(schemaJSON, &root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	w := walker{defs: asNode(root["$defs"])}
	props := asNode(root["properties"])
	required := names(root["required"])
	out := map[string]string{}
	var top []Row
	for _, k := range sortedKeys(props) {
		p := asNode(props[k])
		top = append(top, w.row(k, p, required[k]))
		if k == "phases" {
			continue // its items are the kinds, each a table of its own
		}
		if rows := w.children(k, p, map[string]bool{}); len(rows) > 0 {
			out[RegionSection+k] = render(rows)
		}
	}
	out[RegionKeys] = render(top)
	for _, d := range sortedKeys(w.defs) {
		if kind, ok := strings.CutPrefix(d, "phase."); ok {
			def := asNode(w.defs[d])
			out[RegionKind+kind] = render(w.children("", def, map[string]bool{d: true}))
		}
	}
	var opts []Row
	for _, d := range sortedKeys(w.defs) {
		if fw, ok := strings.CutPrefix(d, "options."); ok {
			for _, r := range w.children("", asNode(w.defs[d]), map[string]bool{}) {
				r.Key = fw + ": " + r.Key
				opts = append(opts, r)
			}
		}
	}
	if len(opts) > 0 {
		out[RegionOptions] = render(opts)
	}
	return out, nil
}

type walker struct{ defs node }

// resolve follows a $ref to its definition; name is the definition's.
func (w walker) resolve(n node) (node, string) {
	ref, ok := n["$ref"].(string)
	if !ok {
		return n, ""
	}
	name := strings.TrimPrefix(ref, "#/$defs/")
	def := asNode(w.defs[name])
	merged := node{}
	for k, v := range def {
		merged[k] = v
	}
	for k, v := range n {
		if k != "$ref" {
			merged[k] = v
		}
	}
	return merged, name
}

// branches are the alternatives a value may take, but a ${name} reference
// (any value may be one).
func (w walker) branches(n node) []node {
	var alts []any
	for _, k := range []string{"anyOf", "oneOf"} {
		if a, ok := n[k].([]any); ok {
			alts = append(alts, a...)
		}
	}
	if len(alts) == 0 {
		return []node{n}
	}
	var out []node
	for _, a := range alts {
		b := asNode(a)
		if b["$ref"] == "#/$defs/ref" {
			continue
		}
		out = append(out, b)
	}
	return out
}

// children are the rows of every key under n, depth first, by key.
// open holds the definitions being walked: a recursive one (a loop's
// steps) is named, not walked again.
func (w walker) children(path string, n node, open map[string]bool) []Row {
	n, name := w.resolve(n)
	if name != "" {
		if open[name] {
			return nil
		}
		open[name] = true
		defer delete(open, name)
	}
	var rows []Row
	for _, b := range w.branches(n) {
		b, bname := w.resolve(b)
		if bname != "" && open[bname] {
			continue
		}
		if props := asNode(b["properties"]); props != nil {
			required := names(b["required"])
			for _, k := range sortedKeys(props) {
				key := join(path, k)
				p := asNode(props[k])
				rows = append(rows, w.row(key, p, required[k]))
				rows = append(rows, w.children(key, p, open)...)
			}
		}
		if items := asNode(b["items"]); items != nil {
			rows = append(rows, w.children(path+"[]", items, open)...)
		}
		if extra := asNode(b["additionalProperties"]); extra != nil {
			rows = append(rows, w.children(join(path, "NAME"), extra, open)...)
		}
	}
	return rows
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var (
	// boundsRe is the bounds schema's field() appends to a doc:
	// "(>= 1)", "(<= 10ms)", "(0..64MiB)", "(>= 16: the marker's size)".
	boundsRe = regexp.MustCompile(`\s*\(((?:>= |<= )[^()]*|[^()\s]+\.\.[^()]*)\)$`)
)

// row is the table row of one key.
func (w walker) row(key string, n node, required bool) Row {
	r := Row{Key: key, Type: w.typeOf(n, map[string]bool{})}
	doc, _ := n["description"].(string)
	if def, ok := n["default"]; ok {
		if i := strings.LastIndex(doc, "; default "); i >= 0 {
			r.Default = doc[i+len("; default "):]
			doc = doc[:i]
		} else {
			r.Default = scalar(def)
		}
	}
	if m := boundsRe.FindStringSubmatchIndex(doc); m != nil {
		r.Bounds = doc[m[2]:m[3]]
		doc = doc[:m[0]]
	}
	if r.Default == "" {
		if i := strings.LastIndex(doc, "; default"); i >= 0 {
			r.Default = strings.TrimPrefix(strings.TrimSpace(doc[i+len("; default"):]), ": ")
			doc = doc[:i]
		}
	}
	if r.Bounds == "" {
		r.Bounds = w.bounds(n)
	}
	if required {
		r.Default = "required"
	}
	r.Doc = strings.TrimSpace(doc)
	return r
}

// bounds are the numeric bounds a value's schema holds.
func (w walker) bounds(n node) string {
	var lo, hi string
	for _, b := range w.branches(n) {
		for _, k := range []string{"minimum", "minItems"} {
			if v, ok := b[k]; ok {
				lo = scalar(v)
			}
		}
		for _, k := range []string{"maximum", "maxItems"} {
			if v, ok := b[k]; ok {
				hi = scalar(v)
			}
		}
	}
	switch {
	case lo != "" && hi != "":
		return lo + ".." + hi
	case lo != "":
		return ">= " + lo
	case hi != "":
		return "<= " + hi
	}
	return ""
}

// typeOf names a value's type for a reader: duration, size, rate,
// integer, list of …, mapping, one of a, b.
func (w walker) typeOf(n node, open map[string]bool) string {
	if ref, ok := n["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		if name == "duration" {
			return "duration"
		}
		if open[name] {
			return "(as above)"
		}
		open[name] = true
		defer delete(open, name)
	}
	var kinds []string
	for _, b := range w.branches(n) {
		t := w.single(b, open)
		if t != "" && !slices.Contains(kinds, t) {
			kinds = append(kinds, t)
		}
	}
	// A size or a rate may also be written as a plain number.
	if slices.Contains(kinds, "size") || slices.Contains(kinds, "rate") {
		kinds = remove(kinds, "integer", "number")
	}
	return strings.Join(kinds, " or ")
}

func remove(list []string, drop ...string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}

func (w walker) single(b node, open map[string]bool) string {
	b, name := w.resolve(b)
	switch {
	case name == "duration":
		return "duration"
	case name == "boolString":
		return "boolean"
	case b["const"] != nil:
		return strconv.Quote(scalar(b["const"]))
	case b["enum"] != nil:
		var vals []string
		for _, v := range b["enum"].([]any) {
			if s := scalar(v); !slices.Contains(vals, s) {
				vals = append(vals, s)
			}
		}
		return "one of " + strings.Join(vals, ", ")
	}
	switch p, _ := b["pattern"].(string); p {
	case schema.SizePattern:
		return "size"
	case schema.RatePattern:
		return "rate"
	case schema.IntPattern:
		return "integer"
	case schema.DurationPattern:
		return "duration"
	}
	if p, _ := b["pattern"].(string); strings.HasSuffix(p, "%$") {
		return "percentage"
	}
	if b["anyOf"] != nil || b["oneOf"] != nil {
		return w.typeOf(b, open)
	}
	switch t := b["type"].(type) {
	case string:
		switch t {
		case "array":
			if items := asNode(b["items"]); items != nil {
				if it := w.typeOf(items, open); it == "mapping" {
					return "list of mappings"
				} else if it != "" {
					return "list of " + it
				}
			}
			return "list"
		case "object":
			return w.object(b, open)
		}
		return t
	case []any:
		first := scalar(t[0])
		if first == "object" {
			return w.object(b, open)
		}
		return first // a string that may also be written as a number or bool
	}
	if b["properties"] != nil {
		return "mapping"
	}
	return ""
}

func (w walker) object(b node, open map[string]bool) string {
	if b["properties"] != nil {
		return "mapping"
	}
	if extra := asNode(b["additionalProperties"]); extra != nil {
		if t := w.typeOf(extra, open); t != "" {
			return "map of " + t
		}
	}
	return "mapping"
}

// render is rows as a Markdown table.
func render(rows []Row) string {
	var b strings.Builder
	b.WriteString("| key | type | default | bounds | doc |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		cells := []string{"`" + r.Key + "`", r.Type, r.Default, r.Bounds, r.Doc}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(strings.ReplaceAll(c, "|", `\|`), "\n", " ")
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

func asNode(v any) node {
	n, _ := v.(map[string]any)
	return n
}

func names(v any) map[string]bool {
	out := map[string]bool{}
	if list, ok := v.([]any); ok {
		for _, s := range list {
			if s, ok := s.(string); ok {
				out[s] = true
			}
		}
	}
	return out
}

func sortedKeys(n node) []string {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
