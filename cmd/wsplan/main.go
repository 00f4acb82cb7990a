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

// exitError carries an exit code up to Main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErr marks err as a plan/flag/preflight problem (exit 2).
func usageErr(err error) error { return &exitError{ExitUsage, err} }

// Main runs the CLI with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	return exitCode(err, stderr)
}

// exitCode is the one place where outcomes become exit codes.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "wsplan:", ee.err)
		}
		return ee.code
	}
	// Anything else comes from cobra's flag and argument checks.
	fmt.Fprintln(stderr, "wsplan:", err)
	return ExitUsage
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
		newSchemaCmd(stdout),
	)
	return root
}
