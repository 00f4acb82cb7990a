package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/docs"
	"github.com/wsplan/wsplan/internal/plan"
)

var update = flag.Bool("update", false, "rewrite ../../wsplan.schema.json")

const committed = "../../wsplan.schema.json"

// The committed wsplan.schema.json is what `wsplan schema` prints.
func TestCommittedSchemaIsCurrent(t *testing.T) {
	got, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(committed, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("wsplan.schema.json is stale: regenerate it with\n\tgo run ./cmd/wsplan schema > wsplan.schema.json\n(or go test ./internal/schema -update)")
	}
}

// compile compiles the generated schema with a JSON Schema library.
func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertVocabs()
	if err := c.AddResource(ID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(ID)
	if err != nil {
		t.Fatalf("the generated schema does not compile: %v", err)
	}
	return s
}

// toJSON converts a YAML document to the JSON value an editor validates.
func toJSON(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		t.Fatalf("%v (an editor's YAML parser fails here too)", err)
	}
	return jsonOf(t, v)
}

func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

var (
	refRE         = regexp.MustCompile(`\$\{((?:env:)?[A-Za-z_][A-Za-z0-9_]*)\}`)
	placeholderRE = regexp.MustCompile(`\$\x{27E6}((?:env:)?[A-Za-z_][A-Za-z0-9_]*)\x{27E7}`)
)

// toJSONRefs is toJSON for YAML that uses ${name} inside flow mappings
// ({connections: ${conns}}), which the loader reads (it protects the
// references before parsing) and a plain YAML parser does not.
func toJSONRefs(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(refRE.ReplaceAll(src, []byte("$$\u27E6${1}\u27E7")), &v); err != nil {
		t.Fatal(err)
	}
	return jsonOf(t, restore(v))
}

func restore(v any) any {
	switch x := v.(type) {
	case string:
		return placeholderRE.ReplaceAllString(x, "$${${1}}")
	case map[string]any:
		for k, e := range x {
			x[k] = restore(e)
		}
	case []any:
		for i, e := range x {
			x[i] = restore(e)
		}
	}
	return v
}

const modeline = "# yaml-language-server: $schema=../wsplan.schema.json\n"

// Every plan in plans/ names the schema on its first line and validates
// against it, as it loads.
func TestPlansValidate(t *testing.T) {
	s := compile(t)
	files, err := filepath.Glob("../../plans/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no plans found: %v", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(src, []byte(modeline)) {
			t.Errorf("%s: the first line must be %q", f, strings.TrimSpace(modeline))
		}
		if _, err := plan.LoadBytes(f, src, plan.LoadOptions{}); err != nil {
			t.Errorf("%s does not load: %v", f, err)
		}
		if err := s.Validate(toJSON(t, src)); err != nil {
			t.Errorf("%s does not validate against the schema:\n%v", f, err)
		}
	}
}

// Every YAML plan in README.md and docs/ validates, as TestDocPlans in
// internal/plan loads them: every ```yaml block not marked as a fragment
// (docs.FragmentMarker), with the gws preset when it names no server.
func TestDocPlansValidate(t *testing.T) {
	s := compile(t)
	plans, err := docs.Plans("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range plans {
		if err := s.Validate(toJSONRefs(t, []byte(b.Body))); err != nil {
			t.Errorf("%s:%d: the yaml block does not validate:\n%v\n---\n%s", b.Page, b.Line, err, b.Body)
		}
	}
	if n := len(plans); n < 10 {
		t.Errorf("found %d plans in README.md and docs/, want at least 10", n)
	}
}

// The schema rejects what the loader rejects for its shape: unknown keys,
// wrong types, values out of declared bounds, unknown names.
func TestSchemaRejects(t *testing.T) {
	s := compile(t)
	const base = "servers: [{name: gws}]\nphases:\n  - connect: {connections: 10}\n"
	good := []string{
		base,
		base + "  - echo: {total: 100, payload: 4KiB, timeout: 2s}\n",
		base + "  - rate: {duration: 1m, rate: 0.5, payload: 64}\n",
		base + "  - hold: {duration: 10s, ping: 1s, name: idle}\n",
		"vars: {n: 10, d: 5s}\n" + "servers: [{name: gws}]\nphases:\n  - connect: {connections: ${n}, timeout: ${d}}\n  - echo: {total: ${n}000}\n",
		"servers: [{name: x, framework: greatws, options: {pool_init: 80, pool_min: 80, pool_max: 80}}]\nphases: [{connect: {connections: 1}}]\n",
		"servers: [{name: greatws, options: {callback: event_loop, read_buffer: \"4096\"}}]\nphases: [{connect: {connections: 1}}]\n",
		"servers: [{name: mine, command: ./srv -p 1, addrs: [127.0.0.1:7000]}]\nclient: {shards: auto}\nphases: [{connect: {connections: 1}}]\n",
		"defaults: {options: {pool_max: 8, io_mode: mixed}, ready_timeout: 0}\n" + base,
		"assert: [{expr: failed == 0, server: [gws]}]\n" + base,
		"defaults: {headers: {Authorization: 'Bearer ${env:TOKEN}'}, tls: {insecure_skip_verify: true}}\n" +
			"servers: [{name: prod, url: 'wss://127.0.0.1:8443/ws', pid_file: /run/s.pid}, {name: gws, tls: true}]\nphases: [{connect: {connections: 1}}]\n",
	}
	for _, src := range good {
		if err := s.Validate(toJSONRefs(t, []byte(src))); err != nil {
			t.Errorf("valid plan rejected:\n%s\n%v", src, err)
		}
	}
	bad := []struct{ name, src string }{
		{"unknown top-level key", "descripton: x\n" + base},
		{"another protocol's setting", "servers: [{name: b, url: 'ws://127.0.0.1:9/', protocol: {name: stomp, version: '5'}}]\nphases: [{connect: {connections: 1}}]\n"},
		{"a protocol without its name", "servers: [{name: b, url: 'ws://127.0.0.1:9/', protocol: {keepalive: 1s}}]\nphases: [{connect: {connections: 1}}]\n"},
		{"an unknown protocol", "servers: [{name: b, url: 'ws://127.0.0.1:9/', protocol: amqp}]\nphases: [{connect: {connections: 1}}]\n"},
		{"unknown phase key", base + "  - echo: {total: 1, paylod: 5}\n"},
		{"unknown phase kind", base + "  - blast: {total: 1}\n"},
		{"two kinds in one phase", "servers: [{name: gws}]\nphases:\n  - {connect: {connections: 1}, hold: {duration: 1s}}\n"},
		{"wrong type", "servers: [{name: gws}]\nphases:\n  - connect: {connections: many}\n"},
		{"fraction for an integer", "servers: [{name: gws}]\nphases:\n  - connect: {connections: 1.5}\n"},
		{"below a phase minimum", "servers: [{name: gws}]\nphases:\n  - connect: {connections: 0}\n"},
		{"above a size maximum", base + "  - echo: {total: 1, payload: 70000000}\n"},
		{"bad size", base + "  - echo: {total: 1, payload: 4 kilobytes}\n"},
		{"bad duration", base + "  - hold: {duration: 10 seconds}\n"},
		{"duration without unit", base + "  - hold: {duration: 10}\n"},
		{"missing required", base + "  - echo: {payload: 10}\n"},
		{"no phases", "servers: [{name: gws}]\n"},
		{"unknown framework", "servers: [{name: x, framework: gorila}]\nphases: [{connect: {connections: 1}}]\n"},
		{"option of another framework", "servers: [{name: gws, options: {pool_max: 8}}]\nphases: [{connect: {connections: 1}}]\n"},
		{"option below its min", "servers: [{name: x, framework: greatws, options: {pool_max: 0}}]\nphases: [{connect: {connections: 1}}]\n"},
		{"option of a preset below its min", "servers: [{name: nbio_mixed, options: {max_blocking_online: 0}}]\nphases: [{connect: {connections: 1}}]\n"},
		{"bad enum option", "servers: [{name: gws, options: {server: netpoll}}]\nphases: [{connect: {connections: 1}}]\n"},
		{"unknown defaults option", "defaults: {options: {colour: red}}\n" + base},
		{"ports above max", "defaults: {ports: 2000}\n" + base},
		{"bad shards", "client: {shards: lots}\n" + base},
		{"bad var name", "vars: {9lives: 1}\n" + base},
		{"assert without expr", "assert: [{name: x}]\n" + base},
		{"unknown tls key", "defaults: {tls: {verify: false}}\n" + base},
		{"tls neither bool nor mapping", "servers: [{name: gws, tls: yes please}]\nphases: [{connect: {connections: 1}}]\n"},
	}
	for _, c := range bad {
		err := s.Validate(toJSONRefs(t, []byte(c.src)))
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: the schema accepts\n%s(err %v)", c.name, c.src, err)
		}
	}
}

// object reads struct fields as the loader does: inline structs flattened,
// an untagged field under its lower-case name, yaml:"-" and unexported
// fields skipped.
func TestObjectFields(t *testing.T) {
	type inner struct {
		Size int `yaml:"size" min:"1" max:"9" hint:"one at least" required:"true" doc:"a size"`
	}
	type outer struct {
		inner   `yaml:",inline"` // unexported: skipped
		Inner   inner            `yaml:",inline"`
		Plain   string           // key "plain"
		Skipped int              `yaml:"-"`
	}
	g := &gen{defs: map[string]any{}}
	s, err := g.object(reflect.TypeFor[outer](), "t")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range s["properties"].(map[string]any) {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "plain,size" {
		t.Errorf("keys = %s, want plain,size", got)
	}
	if got := fmt.Sprint(s["required"]); got != "[size]" {
		t.Errorf("required = %s, want [size]", got)
	}
	size := s["properties"].(map[string]any)["size"].(map[string]any)
	num := size["anyOf"].([]any)[0].(map[string]any)
	if num["minimum"] != int64(1) || num["maximum"] != int64(9) || size["description"] != "a size (1..9: one at least)" {
		t.Errorf("size = %v", size)
	}
	if _, err := g.object(reflect.TypeFor[struct {
		D int `yaml:"d" default:"many"`
	}](), "t"); err == nil || !strings.Contains(err.Error(), `t.d: default "many"`) {
		t.Errorf("a malformed default: err = %v", err)
	}
}
