package plan

import (
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

// protocolKeys are a protocol mapping's keys.
var protocolKeys = []string{"name", "version", "namespace", "keepalive", "username", "password", "host", "init"}

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
	return client.CheckProtocol(p.Options()) // the protocol's own settings (mqtt's version, keepalive, login)
}

// JSONSchema describes the values UnmarshalYAML takes, for package schema.
func (*Protocol) JSONSchema() map[string]any {
	names := []any{}
	for _, n := range client.Protocols() {
		names = append(names, n)
	}
	str := map[string]any{"type": "string"}
	return map[string]any{"anyOf": []any{
		map[string]any{"enum": names},
		map[string]any{"type": "object", "additionalProperties": false, "required": []any{"name"}, "properties": map[string]any{
			"name":      map[string]any{"enum": names},
			"version":   described(str, "mqtt: 3.1.1 (default) or 5"),
			"namespace": described(str, "socketio: the namespace; default /"),
			"keepalive": described(map[string]any{"$ref": "#/$defs/duration"}, "mqtt: keepalive; stomp: the client's heart-beat; default the protocol's"),
			"username":  described(str, "mqtt, stomp: login (${env:NAME} for a secret)"),
			"password":  described(str, "mqtt, stomp: password (${env:NAME} for a secret)"),
			"host":      described(str, "stomp: the virtual host (CONNECT's host header); default /, RabbitMQ's default virtual host"),
			"init":      described(str, "graphql-ws: connection_init payload (JSON)"),
		}},
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
