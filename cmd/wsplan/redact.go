package main

import (
	"io"
	"strings"
	"sync"

	"github.com/wsplan/wsplan/internal/plan"
)

// secrets are the values of ${env:NAME} of every plan this process loaded
// (plan.Plan.Secrets). Everything wsplan prints or writes — stdout,
// stderr, --json, --junit, --summary, --html, validate's resolved plan,
// error messages — passes through a redacting writer that replaces them
// with plan.Redacted. A secret is replaced when it is written in one
// Write call; wsplan writes each line, cell or document in one piece.
var secrets redactor

// redactor is a growing set of secret values, safe for concurrent use.
type redactor struct {
	mu     sync.RWMutex
	values []string // longest first
}

// add registers the plan's secrets.
func (r *redactor) add(p *plan.Plan) {
	if p == nil || len(p.Secrets) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range p.Secrets {
		if !contains(r.values, s) {
			r.values = append(r.values, s)
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	for i := 1; i < len(r.values); i++ {
		for j := i; j > 0 && len(r.values[j]) > len(r.values[j-1]); j-- {
			r.values[j], r.values[j-1] = r.values[j-1], r.values[j]
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// redact returns s without the secrets.
func (r *redactor) redact(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, plan.Redacted)
	}
	return s
}

// writer wraps w so that every Write is redacted.
func (r *redactor) writer(w io.Writer) io.Writer { return redactingWriter{w: w, r: r} }

type redactingWriter struct {
	w io.Writer
	r *redactor
}

// Unwrap is the writer under the redaction, for terminal detection.
func (w redactingWriter) Unwrap() io.Writer { return w.w }

// Write redacts p and writes the result; it reports len(p) written when
// the redacted text was written whole (the lengths differ).
func (w redactingWriter) Write(p []byte) (int, error) {
	w.r.mu.RLock()
	none := len(w.r.values) == 0
	w.r.mu.RUnlock()
	if none {
		return w.w.Write(p)
	}
	out := w.r.redact(string(p))
	if _, err := io.WriteString(w.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}
