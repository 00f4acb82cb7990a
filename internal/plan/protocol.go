package plan

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/proto"
)

// Protocol is `protocol:` as written, on a server or in defaults: what the
// server speaks over its WebSocket messages (a name, or a mapping with
// name and the protocol's settings); nil = raw messages. The settings'
// keys, defaults, bounds and docs are the protocol's own declaration
// (proto.Def.Settings): nothing here names one, and internal/schema
// generates `protocol:`'s schema from the same registry.
type Protocol struct {
	Name string
	// Settings points to the protocol's settings struct, its defaults
	// filled in.
	Settings any
}

// UnmarshalYAML takes a protocol's name, or a mapping of name and
// settings. A key of another protocol is an error that names the
// protocols it belongs to.
func (p *Protocol) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return p.set(n.Value, nil)
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("want a protocol's name (%s) or a mapping with name", strings.Join(proto.Names(), ", "))
	}
	var name *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" {
			name = n.Content[i+1]
		}
	}
	if name == nil || name.Kind != yaml.ScalarNode {
		return fmt.Errorf("name: is required: want one of %s", strings.Join(proto.Names(), ", "))
	}
	return p.set(name.Value, n)
}

// set makes p the protocol name with the settings of mapping n (nil =
// none), its defaults filled in, checked.
func (p *Protocol) set(name string, n *yaml.Node) error {
	d, ok := proto.Lookup(name)
	if !ok {
		return fmt.Errorf("unknown protocol %q: want one of %s (or leave protocol out for raw messages)", name, strings.Join(proto.Names(), ", "))
	}
	s := reflect.New(d.Settings).Interface()
	if n != nil {
		if err := checkKeys(d, n); err != nil {
			return err
		}
		if err := n.Decode(s); err != nil {
			return err
		}
	}
	decl.Defaults(s)
	*p = Protocol{Name: name, Settings: s}
	return d.Check(s)
}

// checkKeys reports the keys of mapping n that d's settings do not have:
// another protocol's ("version is a mqtt setting, not stomp's"), or none's.
func checkKeys(d *proto.Def, n *yaml.Node) error {
	keys := append([]string{"name"}, d.Keys()...)
	var errs []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		switch owners := proto.Owners(k); {
		case slices.Contains(keys, k):
		case len(owners) > 0:
			errs = append(errs, fmt.Sprintf("%s is a %s setting, not %s's", k, strings.Join(owners, " and "), d.Name))
		default:
			errs = append(errs, fmt.Sprintf("unknown key %q: want %s", k, strings.Join(keys, ", ")))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Options returns the client's protocol options.
func (p *Protocol) Options() client.ProtocolOptions {
	if p == nil {
		return client.ProtocolOptions{}
	}
	return client.ProtocolOptions{Name: p.Name, Settings: p.Settings}
}

// ProtocolName is the protocol's name, "" for raw messages.
func (p *Protocol) ProtocolName() string {
	if p == nil {
		return ""
	}
	return p.Name
}

// Secrets calls f with each setting declared secret:"true" (a password)
// and, with json true, each declared secret:"json" (a JSON payload that
// carries credentials: graphql-ws's init).
func (p *Protocol) Secrets(f func(v string, json bool)) {
	if p == nil || p.Settings == nil {
		return
	}
	for _, fd := range decl.Fields(reflect.ValueOf(p.Settings)) {
		if s, ok := fd.Value.Interface().(string); ok && s != "" {
			switch fd.Struct.Tag.Get("secret") {
			case "true":
				f(s, false)
			case "json":
				f(s, true)
			}
		}
	}
}

// String is the protocol as wsplan validate prints it: its name, then its
// settings with the protocol's defaults filled in, as the client will use
// them, as a flow mapping (mqtt {version: "5", keepalive: 30s}); a
// setting declared secret:"true" shows as Redacted.
func (p *Protocol) String() string {
	if p == nil {
		return ""
	}
	set := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	eff := proto.Effective(p.Options())
	if eff == nil {
		return p.Name
	}
	for _, f := range decl.Fields(reflect.ValueOf(eff)) {
		if f.Value.IsZero() {
			continue
		}
		val := f.Value.Interface()
		if f.Struct.Tag.Get("secret") == "true" {
			val = Redacted
		}
		var n yaml.Node
		if err := n.Encode(val); err != nil {
			return p.Name + " " + err.Error()
		}
		set.Content = append(set.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f.Key}, &n)
	}
	if len(set.Content) == 0 {
		return p.Name
	}
	b, err := yaml.Marshal(set)
	if err != nil {
		return p.Name + " " + err.Error()
	}
	return p.Name + " " + strings.TrimSpace(string(b))
}
