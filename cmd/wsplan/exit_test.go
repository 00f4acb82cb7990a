package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/engine"
)

// TestExitCode: every outcome maps to its documented exit code in exitCode,
// and the error is printed once.
func TestExitCode(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"ok", nil, ExitOK},
		{"cobra flag check", errors.New(`unknown flag: --nope`), ExitUsage},
		{"bad flag value", commandError{usageErr(errors.New("--format x"))}, ExitUsage},
		{"preflight", commandError{fmt.Errorf("wrapped: %w", engine.ErrPreflight)}, ExitUsage},
		{"interrupted", commandError{fmt.Errorf("%w: partial results above", errInterrupted)}, ExitInterrupted},
		{"failed run", commandError{errors.New("2 failure(s)")}, ExitFailed},
	}
	for _, c := range cases {
		var stderr strings.Builder
		if got := exitCode(c.err, &stderr); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
		if c.err != nil && stderr.String() != "wsplan: "+c.err.Error()+"\n" {
			t.Errorf("%s: stderr %q", c.name, stderr.String())
		}
	}
	// Through Main: cobra's own checks and a command's usage error.
	for _, args := range [][]string{{"nope"}, {"run"}, {"run", "--format", "x", "plan.yaml"}, {"tune", "plan.yaml"}} {
		if got := Main(args, io.Discard, io.Discard); got != ExitUsage {
			t.Errorf("wsplan %s: exit %d, want %d", strings.Join(args, " "), got, ExitUsage)
		}
	}
}
