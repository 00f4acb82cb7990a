package plan

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
)

// Protocol is `protocol:` as written, on a server or in defaults: what the
// server speaks over its WebSocket messages (a name, or a mapping with
// name and the protocol's settings); nil = raw messages.
type Protocol struct {
	Name      string         `yaml:"name"`
	Version   string         `yaml:"version"`
	Namespace string         `yaml:"namespace"`
	Keepalive units.Duration `yaml:"keepalive"`
	Username  string         `yaml:"username"`
	Password  string         `yaml:"password"`
	Host      string         `yaml:"host"`
	Init      string         `yaml:"init"`
}

// protocolSettings are a protocol mapping's keys after name: the
// protocols that read each and what it is. A setting of another protocol
// than the mapping's name is an error that names the protocols it
// belongs to; the schema's descriptions say the same.
var protocolSettings = []struct {
	key    string
	protos []string
	doc    string
}{
	{"version", []string{client.ProtoMQTT}, "3.1.1 (default) or 5"},
	{"namespace", []string{client.ProtoSocketIO}, "the namespace, a path such as /chat; default /"},
	{"keepalive", []string{client.ProtoMQTT, client.ProtoSTOMP, client.ProtoGraphQLWS}, "how often the client shows it is alive (MQTT keepalive, STOMP heart-beat, GraphQL ping); default the protocol's"},
	{"username", []string{client.ProtoMQTT, client.ProtoSTOMP}, "login (${env:NAME} for a secret)"},
	{"password", []string{client.ProtoMQTT, client.ProtoSTOMP}, "password (${env:NAME} for a secret)"},
	{"host", []string{client.ProtoSTOMP}, "the virtual host (CONNECT's host header); default /, RabbitMQ's default virtual host"},
	{"init", []string{client.ProtoGraphQLWS}, "connection_init payload (JSON)"},
}

// protocolKeys are a protocol mapping's keys.
var protocolKeys = func() []string {
	keys := []string{"name"}
	for _, s := range protocolSettings {
		keys = append(keys, s.key)
	}
	return keys
}()

// UnmarshalYAML takes a protocol's name, or a mapping of name and
// settings.
func (p *Protocol) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*p = Protocol{Name: n.Value}
		return p.check()
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("want a protocol's name (%s) or a mapping with name", strings.Join(client.Protocols(), ", "))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !slices.Contains(protocolKeys, k) {
			return fmt.Errorf("unknown key %q: want %s", k, strings.Join(protocolKeys, ", "))
		}
	}
	type plain Protocol
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*p = Protocol(v)
	return p.check()
}

// check validates the protocol's name and version.
func (p *Protocol) check() error {
	if !slices.Contains(client.Protocols(), p.Name) {
		return fmt.Errorf("unknown protocol %q: want one of %s (or leave protocol out for raw messages)", p.Name, strings.Join(client.Protocols(), ", "))
	}
	if p.Keepalive < 0 {
		return fmt.Errorf("keepalive must be >= 0, got %s", p.Keepalive)
	}
	if err := p.checkOwners(); err != nil {
		return err
	}
	return client.CheckProtocol(p.Options()) // the protocol's own settings (mqtt's version, keepalive, login)
}

// checkOwners reports the settings given that p's protocol does not read,
// naming the protocols that do.
func (p *Protocol) checkOwners() error {
	var foreign []string
	for _, s := range protocolSettings {
		if !slices.Contains(s.protos, p.Name) && !p.setting(s.key).IsZero() {
			foreign = append(foreign, fmt.Sprintf("%s is a %s setting, not %s's", s.key, strings.Join(s.protos, " and "), p.Name))
		}
	}
	if len(foreign) > 0 {
		return errors.New(strings.Join(foreign, "; "))
	}
	return nil
}

// setting returns the field of p whose key is key.
func (p *Protocol) setting(key string) reflect.Value {
	v := reflect.ValueOf(p).Elem()
	for i := range v.NumField() {
		if k, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); k == key {
			return v.Field(i)
		}
	}
	panic("plan: Protocol has no field for " + key)
}

// JSONSchema describes the values UnmarshalYAML takes, for package schema.
func (*Protocol) JSONSchema() map[string]any {
	names := []any{}
	for _, n := range client.Protocols() {
		names = append(names, n)
	}
	props := map[string]any{"name": map[string]any{"enum": names}}
	for _, set := range protocolSettings {
		t := map[string]any{"type": "string"}
		if _, isDuration := new(Protocol).setting(set.key).Interface().(units.Duration); isDuration {
			t = map[string]any{"$ref": "#/$defs/duration"}
		}
		props[set.key] = described(t, strings.Join(set.protos, ", ")+": "+set.doc)
	}
	return map[string]any{"anyOf": []any{
		map[string]any{"enum": names},
		map[string]any{"type": "object", "additionalProperties": false, "required": []any{"name"}, "properties": props},
	}}
}

// Options returns the client's protocol options.
func (p *Protocol) Options() client.ProtocolOptions {
	if p == nil {
		return client.ProtocolOptions{}
	}
	return client.ProtocolOptions{Name: p.Name, Version: p.Version, Namespace: p.Namespace, Keepalive: p.Keepalive.D(),
		Username: p.Username, Password: p.Password, Host: p.Host, Init: p.Init}
}

// ProtocolName is the protocol's name, "" for raw messages.
func (p *Protocol) ProtocolName() string {
	if p == nil {
		return ""
	}
	return p.Name
}

// protocolSecrets are the protocol's settings wsplan never prints.
var protocolSecrets = []string{"password"}

// String is the protocol as wsplan validate prints it: its name, then the
// settings the plan gives, with the protocol's defaults filled in, as a
// flow mapping (mqtt {version: "5", keepalive: 30s}); a password shows as
// Redacted.
func (p *Protocol) String() string {
	if p == nil {
		return ""
	}
	set := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	r := *p // with the protocol's defaults, as the client will use them
	o := client.ProtocolSettings(p.Options())
	r.Version, r.Namespace, r.Keepalive, r.Host = o.Version, o.Namespace, units.Duration(o.Keepalive), o.Host
	v := reflect.ValueOf(r)
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		val := v.Field(i).Interface()
		if key == "name" || v.Field(i).IsZero() {
			continue
		}
		if slices.Contains(protocolSecrets, key) {
			val = Redacted
		}
		var n yaml.Node
		if err := n.Encode(val); err != nil {
			return p.Name + " " + err.Error()
		}
		set.Content = append(set.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &n)
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
