package plan

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/units"
)

// TestTagConstants: a default or bound other packages need as a constant
// (a flag's default, a shard's, the client's own for a zero field) is the
// same as its key's tag, so that the tag stays the one declaration.
func TestTagConstants(t *testing.T) {
	tag := func(v any, key, which string) any {
		for _, f := range decl.Fields(reflect.ValueOf(v)) {
			if s, ok := f.Struct.Tag.Lookup(which); f.Key == key && ok {
				x, err := decl.Parse(f.Struct.Type, s)
				if err != nil {
					t.Fatalf("%T.%s: %s tag %q: %v", v, key, which, s, err)
				}
				return x.Interface()
			}
		}
		t.Fatalf("%T.%s: no %s tag", v, key, which)
		return nil
	}
	d := func(x time.Duration) units.Duration { return units.Duration(x) }
	for _, c := range []struct {
		v          any
		key, which string
		want       any
	}{
		{&Client{}, "idle_exit", "default", d(DefaultIdleExit)},
		{&Metrics{}, "interval", "default", d(DefaultMetricsInterval)},
		{&Metrics{}, "interval", "min", d(MinMetricsInterval)},
		{&Plan{}, "repeat", "max", MaxRepeat},
	} {
		if got := tag(c.v, c.key, c.which); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%T.%s: %s tag %v (%T), the constant is %v (%T)", c.v, c.key, c.which, got, got, c.want, c.want)
		}
	}
}

// TestDeclaredDepth: defaults and bounds reach every depth of the plan's
// declarations (a server, client.reconnect, client.kubernetes, a phase's
// faults, sorted by time but named by their place as written), and a key
// a check of its own reported on is not reported twice.
func TestDeclaredDepth(t *testing.T) {
	const base = "servers: [{name: fake_plan_test}]\n"
	p, err := LoadBytes("d.yaml", []byte(base+"client: {kubernetes: {}}\nphases: [{connect: {connections: 1}}, {hold: {duration: 5s, faults: [{restart: server}]}}]\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, k := p.Client.Reconnect, p.Client.Kubernetes
	if r.Policy != client.ReconnectNone || r.Base != units.Duration(100*time.Millisecond) || k.Port != 7070 || p.Servers[0].Path != "/ws" || p.Repeat != 1 {
		t.Errorf("defaults: reconnect %+v, kubernetes port %d, path %q, repeat %d", r, k.Port, p.Servers[0].Path, p.Repeat)
	}
	for _, tc := range []struct{ plan, want string }{
		{base + "phases:\n  - connect: {connections: 1}\n  - hold:\n      duration: 5s\n      faults:\n        - {restart: server, at: 2s}\n        - {restart: server, at: -1s}\n",
			"d.yaml:8: phases[1].hold.faults[1].at: must be >= 0, got -1s"},
		{base + "phases: [{connect: {connections: 1}}]\nclient:\n  reconnect:\n    timeout: -1s\n",
			"d.yaml:5: client.reconnect.timeout: must be > 0, got -1s"},
		{"servers: [{name: ''}]\nphases: [{connect: {connections: 1}}]\n",
			"d.yaml:1: servers[0].name: is required: a preset (wsplan frameworks lists them), or a label with framework:"},
		{base + "phases:\n  - script:\n      users: 1\n      data: {file: testdata/users.csv, order: first}\n      steps: [{send: x}]\n",
			`d.yaml:5: phases[0].script.data.order: must be sequential, random or unique, got "first"`},
	} {
		_, err := LoadBytes("d.yaml", []byte(tc.plan), LoadOptions{})
		if err == nil || !strings.Contains(err.Error()+"\n", tc.want+"\n") {
			t.Errorf("%s:\n got %v\nwant %s", tc.plan, err, tc.want)
		}
	}
}

// TestChanged: validate's print of a section is the keys that differ
// from their defaults, at every depth; nothing for a section left as it
// is.
func TestChanged(t *testing.T) {
	const base = "servers: [{name: fake_plan_test}]\nphases: [{connect: {connections: 1}}]\n"
	for _, tc := range []struct{ plan, want string }{
		{base, ""},
		{base + "client: {loops: 0, reconnect: {policy: none}}\n", ""},
		{base + "client: {loops: 2, shards: auto, reconnect: {policy: backoff, max: 1m}}\n", "{shards: auto, loops: 2, reconnect: {policy: backoff, max: 1m0s}}"},
		{base + "client: {kubernetes: {shards: 3}}\n", "{kubernetes: {shards: 3}}"},
		{base + "client: {kubernetes: {spread: false}}\n", "{kubernetes: {spread: false}}"},
	} {
		p, err := LoadBytes("c.yaml", []byte(tc.plan), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := Changed(&p.Client); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.plan, got, tc.want)
		}
	}
}

// TestPhaseKeysRead: every key PhaseKeys declares has its reader, and
// no reader reads an undeclared key.
func TestPhaseKeysRead(t *testing.T) {
	keys := decl.Keys(reflect.TypeFor[PhaseKeys]())
	for _, k := range keys {
		if phaseKeyReaders[k] == nil {
			t.Errorf("PhaseKeys declares %s: phaseKeyReaders has no reader for it", k)
		}
	}
	if len(phaseKeyReaders) != len(keys) {
		t.Errorf("%d readers for %d declared keys (%v)", len(phaseKeyReaders), len(keys), keys)
	}
}
