// Command wsplan benchmarks WebSocket servers from declarative YAML plans.
//
// The CLI is a thin layer over the engine packages: main calls Main, which
// builds the cobra command tree and maps every outcome to an exit code in one
// place (exitCode). Only this package prints.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/internal/engine"
	_ "github.com/wsplan/wsplan/scenarios/all" // every built-in phase kind registers itself
)

// Exit codes, as documented in README.md.
const (
	ExitOK          = 0   // every phase ran and every assertion held
	ExitFailed      = 1   // an assertion failed, or a server or phase failed
	ExitUsage       = 2   // bad plan, bad flags or failed preflight: nothing was started
	ExitInterrupted = 130 // stopped by SIGINT/SIGTERM; partial results were printed
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError marks a problem with the plan, the flags or the input files,
// found before anything started (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usageErr marks err as a plan/flag problem (exit 2).
func usageErr(err error) error { return usageError{err} }

// errInterrupted ends a run stopped by SIGINT/SIGTERM (exit 130).
var errInterrupted = errors.New("interrupted")

// commandError is an error returned by a command's RunE, as opposed to one
// of cobra's own flag and argument checks.
type commandError struct{ err error }

func (e commandError) Error() string { return e.err.Error() }
func (e commandError) Unwrap() error { return e.err }

// Main runs the CLI with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	// Redacted before wrapped: a secret is replaced whole, then the line
	// that held it wraps to the terminal.
	stdout, stderr = redacting(stdout), redacting(fitTerminal(stderr))
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	return exitCode(err, stderr)
}

// exitCode is the one place where outcomes become exit codes; it prints
// the error.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "wsplan:", err)
	var ce commandError
	var ue usageError
	switch {
	case !errors.As(err, &ce):
		return ExitUsage // cobra's flag and argument checks
	case errors.Is(err, errInterrupted):
		return ExitInterrupted
	case errors.As(err, &ue), errors.Is(err, engine.ErrPreflight):
		return ExitUsage
	}
	return ExitFailed
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "wsplan",
		Short:         "Benchmark WebSocket servers from declarative YAML plans",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newRunCmd(stdout, stderr),
		newValidateCmd(stdout, stderr),
		newFrameworksCmd(stdout),
		newServeCmd(stderr),
		newCompareCmd(stdout),
		newTuneCmd(stdout, stderr),
		newShardCmd(),
		newKubeCmd(stdout, stderr),
		newSchemaCmd(stdout),
		newVersionCmd(stdout),
		newImportCmd(stdout, stderr),
		newReportCmd(stdout),
		newInitCmd(stdout, stderr),
	)
	root.SetHelpCommand(newHelpCmd(stdout))
	setVersion(root)
	markCommandErrors(root)
	return root
}

// markCommandErrors wraps the RunE of c's subcommands, at every depth
// (kube manifest, import har, shard certs), so that exitCode tells their
// errors from cobra's own checks.
func markCommandErrors(c *cobra.Command) {
	for _, sub := range c.Commands() {
		markCommandErrors(sub)
		if run := sub.RunE; run != nil {
			sub.RunE = func(cmd *cobra.Command, args []string) error {
				if err := run(cmd, args); err != nil {
					return commandError{err}
				}
				return nil
			}
		}
	}
}

// touchHost is called just before a command first acts on the host: it
// binds a listener, pushes metrics, deploys Kubernetes objects, writes
// sysctls, starts servers or shards, or writes a file. It is a no-op; a
// test replaces it to prove that every bad flag stops its command before
// any of these (an error it returns stops the command there).
var touchHost = func(what string) error { return nil }
