package plan

import (
	"sort"
	"strings"
)

// Redacted replaces a secret in everything wsplan prints or writes.
const Redacted = "***"

// sortSecrets lists the secret values longest first, so that a secret that
// contains another is replaced whole.
func sortSecrets(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// Redact returns s with every secret of the plan (values of ${env:NAME})
// replaced by ***. A nil plan redacts nothing.
func (p *Plan) Redact(s string) string {
	if p == nil {
		return s
	}
	for _, secret := range p.Secrets {
		s = strings.ReplaceAll(s, secret, Redacted)
	}
	return s
}
