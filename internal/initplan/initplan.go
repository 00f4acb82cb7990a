// Package initplan writes the starter plans of `wsplan init`: a commented
// plan for a server given by its url (or for a preset wsplan starts), in
// the protocol it speaks, that loads, validates and runs as written.
//
// The plans are text/template files embedded from templates/: one layout
// (plan.yaml.tmpl) and one file per protocol (none.tmpl for raw messages,
// then <protocol>.tmpl for each of client.Protocols()), which fills the
// layout's blocks: about, vars, server, phases and assert. The templates
// use [[ ]] as delimiters, so that the plan's own templates ({{.conn}})
// are written as they are. Plan renders a plan and loads it with the plan
// loader before returning it: a plan that would not load is an error here,
// never a file.
package initplan

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/internal/assert"
	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/proto"
)

//go:embed templates/*.tmpl
var templates embed.FS

// Defaults of Options' zero values.
const (
	DefaultConns  = 100         // connections (and script users)
	DefaultPreset = "gws"       // the preset a plan without a url measures
	DefaultFile   = "plan.yaml" // the file `wsplan init` writes
	// MaxConns bounds Conns: a starter plan; raise conns in the plan for more.
	MaxConns = 100000
	// NoProtocol names raw WebSocket messages where a protocol is asked
	// for (--protocol none); "" means the same.
	NoProtocol = "none"
)

// Options say which plan to write. The zero value is a plan for the
// DefaultPreset with raw messages and DefaultConns connections.
type Options struct {
	// URL is the server's ws:// or wss:// URL; "" = a preset wsplan starts
	// (raw messages), or the repository's example server of Protocol.
	URL string
	// Protocol is one of Protocols(); "" or NoProtocol = raw messages.
	Protocol string
	// TLS speaks wss:// (a ws:// URL becomes wss://) with a tls: block;
	// a preset is served over TLS with the run's own CA. A wss:// URL
	// sets it. Default false.
	TLS bool
	// Conns is how many connections the connect phase opens, and the
	// script's users; 0 = DefaultConns, at most MaxConns.
	Conns int
	// CI makes a CI gate: shorter phases, and the first assertion (the
	// handshakes' p99) aborts the run when it fails. Default false.
	CI bool
	// Preset is the preset a plan without a URL measures; "" =
	// DefaultPreset.
	Preset string
	// File is the file the plan is written to: its base name without the
	// extension is the plan's name, and the plan's comments quote it.
	// "" = DefaultFile.
	File string
}

// Protocols are the values Options.Protocol takes: NoProtocol, then
// every protocol of the client.
func Protocols() []string {
	return append([]string{NoProtocol}, client.Protocols()...)
}

// view is what the templates see.
type view struct {
	Name, File, Description string
	URL                     string   // "" = the preset
	Server                  string   // the url server's row name
	Preset                  string   // the preset, without a URL
	Protocol                string   // "" = raw messages
	Example                 []string // how to start the example server the URL is of; nil = the URL is the user's
	ServerName              string   // tls: server_name, the URL's host when a name
	TLS, CI, Remote         bool
	Conns, Concurrency      int
	Echoes, Messages        int
	Duration                string
	Bound                   string // the p99 bound of the phases after connect
}

// Plan renders the starter plan of o, loads it with the plan loader and
// compiles its assertions: the bytes returned are a plan `wsplan run`
// accepts.
func Plan(o Options) ([]byte, error) {
	v, err := o.view()
	if err != nil {
		return nil, err
	}
	file := "none.tmpl"
	if v.Protocol != "" {
		file = v.Protocol + ".tmpl"
	}
	t, err := template.New("plan.yaml.tmpl").Delims("[[", "]]").
		Funcs(template.FuncMap{"quote": quote}).
		ParseFS(templates, "templates/plan.yaml.tmpl", "templates/common.tmpl", "templates/"+file)
	if err != nil {
		return nil, fmt.Errorf("protocol %q: %w", v.Protocol, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return nil, err
	}
	if err := Check(v.File, b.Bytes()); err != nil {
		return nil, fmt.Errorf("the plan written for %s does not load (a bug of wsplan init): %w", v.Description, err)
	}
	return b.Bytes(), nil
}

// Check loads data as the plan file name and compiles its assertions, as
// `wsplan validate` does before its preflight.
func Check(name string, data []byte) error {
	p, err := plan.LoadBytes(name, data, plan.LoadOptions{})
	if err != nil {
		return err
	}
	_, err = assert.Compile(p)
	return err
}

// Check reports what is wrong with o, naming the flag: the checks Plan
// makes before it renders.
func (o Options) Check() error {
	_, err := o.view()
	return err
}

// view resolves o's defaults and checks them.
func (o Options) view() (view, error) {
	v := view{Protocol: o.Protocol, TLS: o.TLS, CI: o.CI, Conns: o.Conns, Preset: o.Preset, File: o.File, Server: "target"}
	if v.Protocol == NoProtocol {
		v.Protocol = ""
	}
	if v.Protocol != "" && !slices.Contains(client.Protocols(), v.Protocol) {
		return v, fmt.Errorf("--protocol %q: want one of %s", o.Protocol, strings.Join(Protocols(), ", "))
	}
	if v.Conns == 0 {
		v.Conns = DefaultConns
	}
	if v.Conns < 1 || v.Conns > MaxConns {
		return v, fmt.Errorf("--conns %d: want 1 to %d", o.Conns, MaxConns)
	}
	if v.File == "" {
		v.File = DefaultFile
	}
	v.Name = strings.TrimSuffix(filepath.Base(v.File), filepath.Ext(v.File))
	if v.File == "-" || v.Name == "" {
		v.Name = "starter"
	}
	v.Concurrency = min(v.Conns, 50)
	v.Bound = "500ms" // a protocol's exchanges: a request and its answer, via the application
	if v.Protocol == "" {
		v.Bound = "250ms"
	}
	v.Echoes, v.Messages, v.Duration = 20*v.Conns, 20, "5s"
	if v.CI {
		v.Echoes, v.Messages, v.Duration = 10*v.Conns, 10, "3s"
	}
	raw := o.URL
	if raw == "" && v.Protocol != "" {
		ex, _ := proto.ExampleOf(v.Protocol)
		raw, v.Example = ex.URL, ex.Start
	}
	if raw == "" {
		if v.Preset == "" {
			v.Preset = DefaultPreset
		}
		if !slices.Contains(frameworks.Names(), v.Preset) {
			return v, fmt.Errorf("--preset %q: want one of %s", o.Preset, strings.Join(frameworks.Names(), ", "))
		}
		v.Description = "the preset " + v.Preset
		return v, nil
	}
	if o.Preset != "" {
		return v, fmt.Errorf("--preset %q: a plan for --url %s measures that server, not a preset", o.Preset, o.URL)
	}
	if err := v.target(raw); err != nil {
		return v, err
	}
	return v, nil
}

// target sets the view's URL from raw: wss:// with TLS, Socket.IO's
// endpoint for a socketio URL without one, whether the host is remote.
func (v *view) target(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("--url %q: want a ws:// or wss:// URL: %w", raw, err)
	}
	switch u.Scheme {
	case "ws":
		if v.TLS {
			u.Scheme = "wss"
		}
	case "wss":
		v.TLS = true
	default:
		return fmt.Errorf("--url %q: want a ws:// or wss:// URL", raw)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("--url %q: no host", raw)
	}
	if ex, _ := proto.ExampleOf(v.Protocol); ex.Query != "" && !strings.Contains(u.RawQuery, ex.Key) {
		if u.Path == "" || u.Path == "/" {
			u.Path = ex.Path
		}
		u.RawQuery = strings.TrimPrefix(u.RawQuery+"&"+ex.Query, "&")
	}
	ip := net.ParseIP(host)
	v.Remote = host != "localhost" && (ip == nil || !ip.IsLoopback())
	if v.TLS && ip == nil {
		v.ServerName = host
	}
	v.URL = u.String()
	v.Description = u.Scheme + "://" + u.Host
	if v.Protocol != "" {
		v.Description += " (" + v.Protocol + ")"
	}
	return nil
}

// quote writes s as a YAML double-quoted scalar (JSON's escapes are
// YAML's); a plan's ${var} in it is still substituted.
func quote(s string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false) // a query's & as it is
	_ = e.Encode(s)        // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
