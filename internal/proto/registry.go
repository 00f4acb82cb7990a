package proto

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/wsplan/wsplan/internal/decl"
)

// Def is a registered protocol: its name, a line of doc, the type of its
// settings and how it is made from them.
type Def struct {
	// Name is what a plan writes: `protocol: mqtt`.
	Name string
	// Doc is one line on what the protocol is, for the schema.
	Doc string
	// Settings is the protocol's settings struct: each field one key of
	// the plan's `protocol: {name: …, key: …}`, declared with decl tags
	// (yaml, default, min, max, doc, and secret:"true" for a value never
	// printed). Decoding, defaults, bounds, the JSON Schema and `wsplan
	// validate`'s print all derive from it.
	Settings reflect.Type
	// make makes the protocol from a pointer to its settings, defaults
	// applied and bounds checked.
	make func(settings any) (Protocol, error)
}

var (
	defsMu sync.RWMutex
	defs   = map[string]*Def{}
)

// Example is a protocol's example server in the repository (examples/),
// for `wsplan init`'s plans that name the protocol but no URL.
type Example struct {
	URL   string   // where the example server listens, e.g. ws://127.0.0.1:9883/mqtt
	Start []string // the commands that start it, one a line
	// Query, when set, is the query every URL of the protocol's servers
	// needs (Socket.IO's EIO=4&transport=websocket); `wsplan init` adds it
	// to a --url whose query has no Key (e.g. "EIO="), with Path when the
	// URL has no path.
	Query, Key, Path string
}

var (
	examplesMu sync.RWMutex
	examples   = map[string]Example{}
)

// RegisterExample records the example server of the protocol named
// name; its package calls it from init, beside Register.
func RegisterExample(name string, e Example) {
	examplesMu.Lock()
	defer examplesMu.Unlock()
	examples[name] = e
}

// ExampleOf returns the example server of the protocol named name.
func ExampleOf(name string) (Example, bool) {
	examplesMu.RLock()
	defer examplesMu.RUnlock()
	e, ok := examples[name]
	return e, ok
}

// Register adds a protocol named name, made by f from its settings S (a
// struct of keys declared with decl tags; struct{} for none). Protocol
// packages call it from init; a second protocol of the same name panics.
func Register[S any](name, doc string, f func(*S) (Protocol, error)) {
	t := reflect.TypeFor[S]()
	if t.Kind() != reflect.Struct {
		panic("proto: the settings of " + name + " are not a struct")
	}
	d := &Def{Name: name, Doc: doc, Settings: t, make: func(s any) (Protocol, error) { return f(s.(*S)) }}
	defsMu.Lock()
	defer defsMu.Unlock()
	if _, dup := defs[name]; dup {
		panic("proto: duplicate protocol " + name)
	}
	defs[name] = d
}

// Lookup returns the protocol named name.
func Lookup(name string) (*Def, bool) {
	defsMu.RLock()
	defer defsMu.RUnlock()
	d, ok := defs[name]
	return d, ok
}

// Names returns the names of the registered protocols, sorted.
func Names() []string {
	defsMu.RLock()
	defer defsMu.RUnlock()
	out := make([]string, 0, len(defs))
	for n := range defs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Defs returns the registered protocols, by name.
func Defs() []*Def {
	var out []*Def
	for _, n := range Names() {
		d, _ := Lookup(n)
		out = append(out, d)
	}
	return out
}

// Keys are the keys of d's settings, in declaration order.
func (d *Def) Keys() []string { return decl.Keys(d.Settings) }

// NewSettings returns a pointer to d's settings with their defaults.
func (d *Def) NewSettings() any {
	v := reflect.New(d.Settings).Interface()
	decl.Defaults(v)
	return v
}

// Check returns what is wrong with settings (a pointer to d's settings,
// defaults applied): a key out of its bounds, or what the protocol
// itself refuses (mqtt's version, a socketio namespace without its
// leading slash …).
func (d *Def) Check(settings any) error {
	if errs := decl.Check(settings); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s: %s", d.Name, strings.Join(msgs, "; "))
	}
	if _, err := d.make(settings); err != nil {
		return fmt.Errorf("%s: %w", d.Name, err)
	}
	return nil
}

// Owners returns the protocols whose settings have key.
func Owners(key string) []string {
	var out []string
	for _, d := range Defs() {
		for _, k := range d.Keys() {
			if k == key {
				out = append(out, d.Name)
			}
		}
	}
	return out
}

// Options name the protocol a server speaks and its settings; zero = raw
// messages. They travel to shards as JSON: the name and the settings
// struct.
type Options struct {
	Name string `json:"name,omitempty"`
	// Settings points to the protocol's settings struct (Def.Settings);
	// nil = its defaults.
	Settings any `json:"settings,omitempty"`
}

// UnmarshalJSON reads the settings into the named protocol's struct.
func (o *Options) UnmarshalJSON(b []byte) error {
	var raw struct {
		Name     string          `json:"name"`
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*o = Options{Name: raw.Name}
	if raw.Name == "" || len(raw.Settings) == 0 || string(raw.Settings) == "null" {
		return nil
	}
	d, ok := Lookup(raw.Name)
	if !ok {
		return unknown(raw.Name)
	}
	s := reflect.New(d.Settings).Interface()
	if err := json.Unmarshal(raw.Settings, s); err != nil {
		return fmt.Errorf("protocol %s: %w", raw.Name, err)
	}
	o.Settings = s
	return nil
}

func unknown(name string) error {
	return fmt.Errorf("unknown protocol %q (want one of %v)", name, Names())
}

// Effective returns o's settings as the protocol uses them: a pointer to
// its settings struct with the defaults filled in (nil for raw messages
// or an unknown protocol). It never changes o's.
func Effective(o Options) any {
	d, ok := Lookup(o.Name)
	if !ok {
		return nil
	}
	v := reflect.New(d.Settings)
	if o.Settings != nil {
		if s := reflect.ValueOf(o.Settings); s.Type() == v.Type() && !s.IsNil() {
			v.Elem().Set(s.Elem())
		}
	}
	decl.Defaults(v.Interface())
	return v.Interface()
}

// Make makes the protocol of o, nil for raw messages: its settings
// (defaults filled in) bounded by their declaration, then the protocol's
// own checks.
func Make(o Options) (Protocol, error) {
	if o.Name == "" {
		return nil, nil
	}
	d, ok := Lookup(o.Name)
	if !ok {
		return nil, unknown(o.Name)
	}
	if o.Settings != nil && reflect.TypeOf(o.Settings) != reflect.PointerTo(d.Settings) {
		return nil, fmt.Errorf("%s: settings of type %T, want *%s", o.Name, o.Settings, d.Settings)
	}
	s := Effective(o)
	if err := d.Check(s); err != nil {
		return nil, err
	}
	return d.make(s)
}
