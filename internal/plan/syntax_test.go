package plan

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/units"
)

// syntaxField is one key of a plan section with its declaration.
type syntaxField struct {
	path     string // "defaults.ports", "servers[].path"
	section  string // "defaults", "servers"
	key      string
	typ      reflect.Type
	def      string
	min, max string
}

// syntaxFields lists the keys of the sections of fileDoc (mappings and
// lists of mappings).
func syntaxFields() []syntaxField {
	var out []syntaxField
	top := reflect.TypeOf(Syntax())
	for i := range top.NumField() {
		sf := top.Field(i)
		section, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		t, list := sf.Type, false
		if t.Kind() == reflect.Slice {
			t, list = t.Elem(), true
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeFor[units.Duration]() {
			continue
		}
		for j := range t.NumField() {
			f := t.Field(j)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			path := section + "." + key
			if list {
				path = section + "[]." + key
			}
			out = append(out, syntaxField{path, section, key, f.Type,
				f.Tag.Get("default"), f.Tag.Get("min"), f.Tag.Get("max")})
		}
	}
	return out
}

// planWith is a valid plan whose section has key: value.
func planWith(f syntaxField, value string) string {
	const servers = "servers: [{name: fake_plan_test%s}]\n"
	const phases = "phases: [{connect: {connections: 1}}]\n"
	switch f.section {
	case "servers":
		return fmt.Sprintf(servers, ", "+f.key+": "+value) + phases
	case "assert":
		return fmt.Sprintf(servers, "") + phases + "assert: [{expr: 'true', " + f.key + ": " + value + "}]\n"
	}
	return fmt.Sprintf(servers, "") + phases + f.section + ":\n  " + f.key + ": " + value + "\n"
}

// The value a key ends up as in the Plan, for the keys with a default.
var syntaxGetters = map[string]func(*Plan) any{
	"host.nofile":              func(p *Plan) any { return p.Host.NoFile },
	"defaults.nodelay":         func(p *Plan) any { return *p.Defaults.NoDelay },
	"defaults.ready_timeout":   func(p *Plan) any { return p.Defaults.ReadyTime },
	"defaults.stop_grace":      func(p *Plan) any { return p.Defaults.StopGrace },
	"defaults.ports":           func(p *Plan) any { return p.Defaults.Ports },
	"defaults.base_port":       func(p *Plan) any { return p.Defaults.BasePort },
	"defaults.listen":          func(p *Plan) any { return p.Defaults.Host },
	"defaults.sample_interval": func(p *Plan) any { return p.Defaults.Sample },
	"defaults.allow_remote":    func(p *Plan) any { return p.Defaults.AllowRemote },
	"client.shards":            func(p *Plan) any { return p.Client.Shards },
	"client.loops":             func(p *Plan) any { return p.Client.Loops },
	"client.idle_exit":         func(p *Plan) any { return p.Client.IdleExit },
	"soak.leak_threshold":      func(p *Plan) any { return p.Soak.LeakThreshold },
	"client.reconnect.policy":  func(p *Plan) any { return p.Client.Reconnect.Policy },
	"client.reconnect.base":    func(p *Plan) any { return p.Client.Reconnect.Base },
	"client.reconnect.max":     func(p *Plan) any { return p.Client.Reconnect.Max },
	"client.reconnect.jitter":  func(p *Plan) any { return p.Client.Reconnect.Jitter },
	"client.reconnect.timeout": func(p *Plan) any { return p.Client.Reconnect.Timeout },
	"soak.drain":               func(p *Plan) any { return p.Soak.Drain },
	"metrics.interval":         func(p *Plan) any { return p.Metrics.Interval },
	"servers[].path":           func(p *Plan) any { return p.Servers[0].Path },
	"assert[].abort":           func(p *Plan) any { return p.Assert[0].Abort },
}

// TestSyntaxTags holds the declarations of plan.Syntax() (which the JSON
// Schema is generated from) to what the loader does: writing a key's
// default gives the plan it has without the key, and a key's min and max
// are the last values its checks accept.
func TestSyntaxTags(t *testing.T) {
	fields := syntaxFields()
	if len(fields) < 20 {
		t.Fatalf("found %d section keys, want the plan's sections", len(fields))
	}
	for _, f := range fields {
		if f.def == "" {
			continue
		}
		get, ok := syntaxGetters[f.path]
		if !ok {
			t.Errorf("%s has a default tag: add it to syntaxGetters", f.path)
			continue
		}
		without, err := LoadBytes("p.yaml", []byte(planWith(f, "~")), LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
		with, err := LoadBytes("p.yaml", []byte(planWith(f, f.def)), LoadOptions{})
		if err != nil {
			t.Errorf("%s: %s: %v", f.path, f.def, err)
			continue
		}
		if a, b := get(with), get(without); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: default tag %q gives %v, the loader's default is %v", f.path, f.def, a, b)
		}
	}
	for _, f := range fields {
		for _, b := range []struct {
			text string
			step int64
		}{{f.min, -1}, {f.max, +1}} {
			if b.text == "" || f.typ.Kind() == reflect.Slice {
				continue
			}
			at, beyond, err := stepped(f.typ, b.text, b.step)
			if err != nil {
				t.Errorf("%s: bound %q: %v", f.path, b.text, err)
				continue
			}
			field := strings.Replace(f.path, "[]", "[0]", 1)
			for _, c := range []struct {
				value   string
				wantErr bool
			}{{at, false}, {beyond, true}} {
				_, err := LoadBytes("p.yaml", []byte(planWith(f, c.value)), LoadOptions{})
				if got := hasFieldErr(err, field); got != c.wantErr {
					t.Errorf("%s: %s (bound %s): error on the field = %v, want %v (%v)", f.path, c.value, b.text, got, c.wantErr, err)
				}
			}
		}
	}
}

// stepped returns a bound and the value one step beyond it, as YAML text;
// a zero value means "the default", so the step skips it.
func stepped(t reflect.Type, text string, step int64) (at, beyond string, err error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem() // an optional key: unset is nil
	}
	switch t {
	case reflect.TypeFor[units.Duration]():
		var d units.Duration
		if err := d.UnmarshalText([]byte(text)); err != nil {
			return "", "", err
		}
		n := time.Duration(d) + time.Duration(step)
		if n == 0 {
			n += time.Duration(step)
		}
		return text, n.String(), nil
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		var n int64
		if _, err := fmt.Sscan(text, &n); err != nil {
			return "", "", err
		}
		m := n + step
		if m == 0 {
			m += step
		}
		return text, fmt.Sprint(m), nil
	}
	return "", "", fmt.Errorf("no steps for %s", t)
}

func hasFieldErr(err error, field string) bool {
	var errs Errors
	if !errors.As(err, &errs) {
		return false
	}
	for _, e := range errs {
		if e.Field == field {
			return true
		}
	}
	return false
}
