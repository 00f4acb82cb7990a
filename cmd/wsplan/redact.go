package main

import (
	"io"

	"github.com/wsplan/wsplan/internal/secret"
)

// secrets are the secrets of every plan this process loaded
// (plan.Plan.Secrets), each masked in every form (secret.Forms).
// Everything wsplan prints or writes — stdout, stderr, --json, --junit,
// --summary, --html, --benchfmt, validate's resolved plan, error messages
// — passes through a redacting writer. A secret is replaced when it is
// written in one Write call; wsplan writes each line, cell or document in
// one piece (child processes' output, cut anywhere, goes through
// secret.Writer instead).
var secrets secret.Set

// redactingWriter redacts every Write to w.
type redactingWriter struct {
	w io.Writer
	s *secret.Set
}

// redacting wraps w so that every Write is redacted.
func redacting(w io.Writer) io.Writer { return redactingWriter{w: w, s: &secrets} }

// Unwrap is the writer under the redaction, for terminal detection.
func (w redactingWriter) Unwrap() io.Writer { return w.w }

// Write redacts p and writes the result; it reports len(p) written when
// the redacted text was written whole (the lengths differ).
func (w redactingWriter) Write(p []byte) (int, error) {
	if w.s.Empty() {
		return w.w.Write(p)
	}
	if _, err := io.WriteString(w.w, w.s.Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
