package plan

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"

	"github.com/wsplan/wsplan/internal/secret"
	"github.com/wsplan/wsplan/scenarios"
)

// Redacted replaces a secret in everything wsplan prints or writes.
const Redacted = secret.Redacted

// Secrets.
//
// A plan's secrets (Plan.Secrets) are the values of ${env:NAME} and the
// credentials it writes itself: a protocol's password, a header named
// like a credential (Authorization, Cookie, X-Auth-Token: the value, and
// the credential after its scheme), a URL's query parameter so named or
// its user-info password, and a graphql-ws init's members so named
// (secret.IsSecretKey decides); and the same in a phase's own headers,
// query and JSON messages (scenarios.Credentialed). Plan.Redact and every output of wsplan
// mask each in every form (secret.Forms). An error about a value that
// holds one names the key and what is wrong, never the value.

// Redact returns s with every form of every secret of the plan replaced
// by Redacted. A nil plan redacts nothing.
func (p *Plan) Redact(s string) string {
	if p == nil {
		return s
	}
	return p.Secrets.Redact(s)
}

// literalSecrets adds to set the credentials the plan writes itself (see
// Secrets above).
func literalSecrets(p *Plan, set *secret.Set) {
	targets := []*Target{&p.Defaults.Target}
	for i := range p.Servers {
		targets = append(targets, &p.Servers[i].Target)
		for _, u := range p.Servers[i].URLs { // url: too (resolveTargets)
			URLSecrets(u, set)
		}
	}
	for _, t := range targets {
		headerSecrets(t.Headers, set)
		t.Protocol.Secrets(func(v string, json bool) {
			if json {
				initSecrets(v, set)
			} else {
				set.Add(v)
			}
		})
	}
	headerSecrets(p.Metrics.Headers, set)
	URLSecrets(p.Metrics.RemoteWrite, set)
	URLSecrets(p.Metrics.OTLP, set)
}

// phaseSecrets adds the credentials a phase writes itself, once decoded
// (scenarios.Credentialed), as a server's are found, but a value its
// templates render ({{ … }}) is the run's, not the plan's: left out.
func phaseSecrets(ph scenarios.Phase, set *secret.Set) {
	c, ok := ph.(scenarios.Credentialed)
	if !ok {
		return
	}
	found := &secret.Set{}
	cr := c.Credentials()
	headerSecrets(cr.Headers, found)
	if cr.Query != "" {
		URLSecrets("?"+cr.Query, found)
	}
	for _, msg := range cr.JSON {
		initSecrets(msg, found)
	}
	for _, v := range found.Values() {
		if !strings.Contains(v, "{{") {
			set.Add(v)
		}
	}
}

// headerSecrets adds the credential headers' values.
func headerSecrets(h map[string]string, set *secret.Set) {
	for k, v := range h {
		credential(k, v, set)
	}
}

// credential adds the value of a credential named name (see
// secret.IsSecretKey). An Authorization's is masked after its scheme
// (Bearer, Basic; the scheme stays visible) when that part is long enough
// to be masked, else whole; for Basic, the decoded user:pass and pass too.
func credential(name, v string, set *secret.Set) {
	if !secret.IsSecretKey(name) {
		return
	}
	if !strings.Contains(strings.ToLower(name), "authorization") {
		set.Add(v)
		return
	}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	cred = strings.TrimSpace(cred)
	if !ok || len(cred) < secret.MinLen {
		set.Add(v)
		return
	}
	set.Add(cred)
	if strings.EqualFold(scheme, "basic") {
		if b, err := base64.StdEncoding.DecodeString(cred); err == nil {
			_, pass, _ := strings.Cut(string(b), ":")
			set.Add(string(b), pass)
		}
	}
}

// URLSecrets adds a URL's user-info password and credential query
// parameters, as written and decoded.
func URLSecrets(raw string, set *secret.Set) {
	_, rest, _ := strings.Cut(raw, "://")
	if at := strings.LastIndexByte(strings.SplitN(rest, "/", 2)[0], '@'); at >= 0 {
		if _, pass, ok := strings.Cut(rest[:at], ":"); ok {
			set.Add(pass)
			if u, err := url.PathUnescape(pass); err == nil {
				set.Add(u)
			}
		}
	}
	_, query, _ := strings.Cut(raw, "?")
	query, _, _ = strings.Cut(query, "#")
	for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
		k, v, _ := strings.Cut(kv, "=")
		credential(k, v, set)
		if u, err := url.QueryUnescape(v); err == nil {
			credential(k, u, set)
		}
	}
}

// initSecrets adds the credential members of a graphql-ws init (a JSON
// object), at any depth.
func initSecrets(init string, set *secret.Set) {
	var v any
	if json.Unmarshal([]byte(init), &v) != nil {
		return
	}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				walk(k, y)
			}
		case []any:
			for _, y := range x {
				walk(key, y)
			}
		case string:
			credential(key, x, set)
		}
	}
	walk("", v)
}

// quoted matches a Go-quoted string in a message.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// unquoted is msg without the values it quotes: for a message about a
// value that holds a secret, where a quoted part of it (a URL's bad
// escape, a JSON error's character) could show a piece of the secret no
// redaction recognises.
func unquoted(msg string) string {
	return quoted.ReplaceAllString(msg, "(not shown)")
}
