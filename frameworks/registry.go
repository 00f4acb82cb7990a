// Package frameworks declares the built-in echo servers: one adapter per
// WebSocket library (its name, module path, options with their types,
// defaults and bounds, limits and presets), the registry they add
// themselves to, and the presets users know from the published
// go-websocket-benchmark tables. It imports no WebSocket or HTTP library:
// plan loading, validation, the schema and the docs read the declarations
// without linking any server.
//
// The servers themselves live in package frameworks/servers, which
// attaches each adapter's Start functions to its declaration with
// Implement. Data flow: a plan names a preset (or a framework plus
// options); the plan loader checks the name and options here; the run
// engine starts `wsplan serve --framework NAME --opt K=V --addrs ...`,
// which calls servers.Serve in its own process. `wsplan frameworks`, plan
// validation and the conformance test all read this one registry, so a
// name is listed exactly once.
package frameworks

import (
	"crypto/tls"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// OptionType is the type of an adapter option's value.
type OptionType string

// The option types.
const (
	TypeBool   OptionType = "bool"
	TypeInt    OptionType = "int"
	TypeString OptionType = "string"
	TypeEnum   OptionType = "enum" // one of Option.Enum
)

// Option is one typed, documented option of an adapter.
type Option struct {
	Name    string
	Type    OptionType
	Default string   // as written on the command line; "" = the type's zero value
	Enum    []string // allowed values for TypeEnum
	// Min and Max bound a TypeInt value, inclusive. Min 0 (the zero value)
	// is the lowest any int option takes: no option is negative. Max 0 =
	// no upper bound.
	Min, Max int
	Doc      string // one line, states what the default means
}

// MaxReadBuffer is the largest read_buffer: a buffer per connection larger
// than the largest payload a plan may send (64 MiB) buys nothing.
const MaxReadBuffer = 64 << 20

// Common options every adapter accepts. Adapters read them from Config.
var Common = []Option{
	{Name: "nodelay", Type: TypeBool, Default: "true", Doc: "set TCP_NODELAY on accepted connections"},
	{Name: "read_buffer", Type: TypeInt, Default: "0", Max: MaxReadBuffer, Doc: "read buffer size in bytes; 0 = the plan's payload size (1024 outside a plan)"},
	{Name: "compression", Type: TypeBool, Default: "false", Doc: "negotiate permessage-deflate where the library supports it"},
}

// Adapter declares one WebSocket library wired as an echo server: every
// message is sent back with the same opcode and bytes.
type Adapter struct {
	Name    string   // library key, e.g. "nbio"
	Library string   // module path, e.g. "github.com/lesismal/nbio"
	Doc     string   // one line
	Options []Option // library-specific options; Common ones are implied
	// Limits are what the library cannot do; the conformance test expects
	// exactly the Autobahn cases they explain to fail (and the conformance
	// phase reports them as failed cases, not skips), and `wsplan
	// frameworks` prints them.
	Limits Limits
	// Check, when set, checks the complete option values together, for
	// bounds that tie options to each other (each value has already passed
	// its own type and bounds); nil = no such bound.
	Check func(values map[string]string) error
	// Broadcast, when set, says the adapter serves BroadcastPath (rooms,
	// fan-out) when the server's path is BroadcastPath; nil = the library
	// cannot (Limits.NoBroadcast says why).
	Broadcast *Broadcast
	// The servers are not declared here: Start and StartBroadcast run
	// what frameworks/servers attached with Implement.
}

// Limits states what a library cannot do, each with its reason, so that
// nothing about an adapter is hidden in a test's skip list.
type Limits struct {
	// NoEmptyMessages is why a message with no payload is never echoed;
	// "" = empty messages are echoed.
	NoEmptyMessages string
	// OneMessageType, when set, returns the one message type ("text" or
	// "binary") the server handles with these option values; the other is
	// refused. nil = both are echoed with their own opcode.
	OneMessageType func(values map[string]string) string
	// OneMessageTypeWhy is the reason for OneMessageType.
	OneMessageTypeWhy string
	// NoTLS, when set, returns why the server cannot serve TLS with these
	// option values ("" = it can); nil = it always can. A plan asking
	// `tls: true` of such a server fails to load.
	NoTLS func(values map[string]string) string
	// NoCompression is why the library cannot negotiate
	// permessage-deflate; "" = it does when the compression option is true.
	// compression=true on such a server is refused by Resolve (a load
	// error), never served uncompressed.
	NoCompression string
	// NoBroadcast is why the adapter does not serve BroadcastPath; "" =
	// it does (Adapter.Broadcast).
	NoBroadcast string
}

// always is a NoTLS func with one reason whatever the option values.
func always(reason string) func(map[string]string) string {
	return func(map[string]string) string { return reason }
}

// TLSRefusal returns why the adapter cannot serve TLS with these option
// values, "" when it can.
func (a Adapter) TLSRefusal(values map[string]string) string {
	if a.Limits.NoTLS == nil {
		return ""
	}
	return a.Limits.NoTLS(values)
}

// Strings lists the limits as sentences, for `wsplan frameworks`.
func (l Limits) Strings() []string {
	var out []string
	if l.NoEmptyMessages != "" {
		out = append(out, "empty messages are not echoed: "+l.NoEmptyMessages)
	}
	if l.OneMessageType != nil {
		out = append(out, "one message type per server: "+l.OneMessageTypeWhy)
	}
	if l.NoTLS != nil {
		if why := l.NoTLS(nil); why != "" {
			out = append(out, "no TLS (tls: true): "+why)
		}
	}
	if l.NoCompression != "" {
		out = append(out, "no permessage-deflate (compression: true): "+l.NoCompression)
	}
	if l.NoBroadcast != "" {
		out = append(out, "no broadcast endpoint: "+l.NoBroadcast)
	}
	return out
}

// Server is a running echo server.
type Server interface {
	// Close stops the listeners and closes every connection.
	Close() error
}

// Preset is a named, ready-to-run configuration of an adapter.
type Preset struct {
	Name      string            // e.g. "nbio_mixed"
	Framework string            // adapter name, e.g. "nbio"
	Options   map[string]string // overrides of the adapter's defaults
	Doc       string            // one line: how it serves
}

// Config is what an adapter's StartFunc receives: validated option
// values with every default applied.
type Config struct {
	Addrs   []string // listen addresses, host:port
	Path    string   // upgrade path, "/ws"
	Payload int      // expected message size, a hint for buffer sizes (>0)
	Values  map[string]string
	// TLS, when set, is served on every listener (the certificate of the
	// run's CA, see internal/wstls.RunCA); nil = plain ws://. Adapters
	// whose Limits.NoTLS refuses these values never see it set.
	TLS *tls.Config
}

// Bool returns a bool option.
func (c Config) Bool(name string) bool { b, _ := strconv.ParseBool(c.Values[name]); return b }

// Int returns an int option.
func (c Config) Int(name string) int { n, _ := strconv.Atoi(c.Values[name]); return n }

// String returns a string or enum option.
func (c Config) String(name string) string { return c.Values[name] }

// ReadBuffer returns the read_buffer option, or the payload hint when it is 0.
func (c Config) ReadBuffer() int {
	if n := c.Int("read_buffer"); n > 0 {
		return n
	}
	if c.Payload > 0 {
		return c.Payload
	}
	return 1024
}

var (
	mu       sync.RWMutex
	adapters = map[string]Adapter{}
	presets  = map[string]Preset{}
)

// Register adds an adapter's declaration; declaration files call it from
// init. It panics on a
// duplicate name, since that is a programming error.
func Register(a Adapter) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := adapters[a.Name]; dup {
		panic("frameworks: duplicate adapter " + a.Name)
	}
	adapters[a.Name] = a
}

// RegisterPreset adds a preset; declaration files call it from init.
func RegisterPreset(p Preset) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := presets[p.Name]; dup {
		panic("frameworks: duplicate preset " + p.Name)
	}
	presets[p.Name] = p
}

// Adapters returns every adapter, sorted by name.
func Adapters() []Adapter {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Adapter, 0, len(adapters))
	for _, a := range adapters {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Presets returns every preset, sorted by name.
func Presets() []Preset {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Preset, 0, len(presets))
	for _, p := range presets {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupAdapter returns the adapter with that name.
func LookupAdapter(name string) (Adapter, bool) {
	mu.RLock()
	defer mu.RUnlock()
	a, ok := adapters[name]
	return a, ok
}

// LookupPreset returns the preset with that name.
func LookupPreset(name string) (Preset, bool) {
	mu.RLock()
	defer mu.RUnlock()
	p, ok := presets[name]
	return p, ok
}

// AllOptions returns the common options followed by the adapter's own.
func (a Adapter) AllOptions() []Option {
	return append(append([]Option(nil), Common...), a.Options...)
}

// Resolve turns a server entry of a plan (a preset name, or a framework plus
// options) into the adapter to start and its complete option values. name is
// tried as a preset when framework is empty; otherwise framework names an
// adapter or a preset to start from. opts override the defaults. Every
// problem is returned, one error each: each option's own (type, enum,
// bounds) as "option NAME: ...", then, when those pass, the adapter's
// Check of the values together.
func Resolve(name, framework string, opts map[string]string) (Adapter, map[string]string, []error) {
	base := map[string]string{}
	key := framework
	if key == "" {
		key = name
	}
	if p, ok := LookupPreset(key); ok {
		key = p.Framework
		for k, v := range p.Options {
			base[k] = v
		}
	}
	a, ok := LookupAdapter(key)
	if !ok {
		return Adapter{}, nil, []error{fmt.Errorf("unknown framework %q (known: %s)", key, strings.Join(Names(), ", "))}
	}
	vals := map[string]string{}
	known := map[string]Option{}
	for _, o := range a.AllOptions() {
		known[o.Name] = o
		vals[o.Name] = o.Default
	}
	for k, v := range base {
		vals[k] = v
	}
	var errs []error
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o, ok := known[k]
		if !ok {
			errs = append(errs, fmt.Errorf("framework %s has no option %q (options: %s)", a.Name, k, strings.Join(optionNames(a), ", ")))
			continue
		}
		if err := o.check(opts[k]); err != nil {
			errs = append(errs, fmt.Errorf("option %s: %w", k, err))
			continue
		}
		vals[k] = opts[k]
	}
	if on, _ := strconv.ParseBool(vals["compression"]); on && a.Limits.NoCompression != "" {
		errs = append(errs, fmt.Errorf("option compression: %s has no permessage-deflate: %s", a.Name, a.Limits.NoCompression))
	}
	if len(errs) == 0 && a.Check != nil {
		if err := a.Check(vals); err != nil {
			errs = append(errs, err)
		}
	}
	return a, vals, errs
}

// CheckOption checks one option value against its declaration: that the
// adapter has it, its type or enum, and its bounds. The error is the
// message alone ("must be >= 1, got 0"), without the option's name.
func (a Adapter) CheckOption(name, value string) error {
	for _, o := range a.AllOptions() {
		if o.Name == name {
			return o.check(value)
		}
	}
	return fmt.Errorf("framework %s has no option %q (options: %s)", a.Name, name, strings.Join(optionNames(a), ", "))
}

// Bounds describes an int option's bounds for people ("1..", "0..67108864"),
// "" for other types.
func (o Option) Bounds() string {
	if o.Type != TypeInt {
		return ""
	}
	if o.Max > 0 {
		return fmt.Sprintf("%d..%d", o.Min, o.Max)
	}
	return fmt.Sprintf(">= %d", o.Min)
}

// Names returns every preset and adapter name, sorted, without duplicates.
func Names() []string {
	seen := map[string]bool{}
	for _, p := range Presets() {
		seen[p.Name] = true
	}
	for _, a := range Adapters() {
		seen[a.Name] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func optionNames(a Adapter) []string {
	var out []string
	for _, o := range a.AllOptions() {
		out = append(out, o.Name)
	}
	return out
}

func (o Option) check(v string) error {
	switch o.Type {
	case TypeBool:
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("want true or false, got %q", v)
		}
	case TypeInt:
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want an integer, got %q", v)
		}
		if n < o.Min {
			return fmt.Errorf("must be >= %d, got %d", o.Min, n)
		}
		if o.Max > 0 && n > o.Max {
			return fmt.Errorf("must be <= %d, got %d", o.Max, n)
		}
	case TypeEnum:
		for _, e := range o.Enum {
			if v == e {
				return nil
			}
		}
		return fmt.Errorf("want one of %s, got %q", strings.Join(o.Enum, "|"), v)
	}
	return nil
}
