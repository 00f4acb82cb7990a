package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/engine"
	"github.com/wsplan/wsplan/internal/launch"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/report"
)

// planFlags are the flags that shape how a plan loads.
type planFlags struct {
	sets []string
	only []string
}

func (f *planFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "override a plan variable: --set conns=2000 (repeatable)")
	cmd.Flags().StringSliceVar(&f.only, "only", nil, "run only these servers: --only gorilla,gws")
}

func (f *planFlags) load(path string) (*plan.Plan, error) {
	sets := map[string]string{}
	for _, s := range f.sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageErr(fmt.Errorf("--set %q: want VAR=VALUE", s))
		}
		sets[k] = v
	}
	p, err := plan.Load(path, plan.LoadOptions{Sets: sets, Only: f.only})
	if err != nil {
		return nil, usageErr(err)
	}
	return p, nil
}

type runFlags struct {
	planFlags
	json     string
	out      string
	format   string
	progress string
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run PLAN",
		Short: "Run a plan: start each server, drive every phase, print tables",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(cmd.Context(), args[0], &f, stdout, stderr)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.json, "json", "", "write every figure as JSON to FILE")
	cmd.Flags().StringVar(&f.out, "out", "", "directory for server logs (default wsplan-out/<plan>-<time>)")
	cmd.Flags().StringVar(&f.format, "format", "md", "table format: md or ascii")
	cmd.Flags().StringVar(&f.progress, "progress", "auto", "live progress line on stderr: auto (when a terminal), on, off")
	return cmd
}

func runPlan(parent context.Context, path string, f *runFlags, stdout, stderr io.Writer) error {
	if f.format != "md" && f.format != "ascii" {
		return usageErr(fmt.Errorf("--format %q: want md or ascii", f.format))
	}
	var progress io.Writer
	switch f.progress {
	case "on":
		progress = stderr
	case "off":
	case "auto":
		if isTerminal(stderr) {
			progress = stderr
		}
	default:
		return usageErr(fmt.Errorf("--progress %q: want auto, on or off", f.progress))
	}
	p, err := f.load(path)
	if err != nil {
		return err
	}
	out := f.out
	if out == "" {
		out = filepath.Join("wsplan-out", p.Name+"-"+time.Now().Format("20060102-150405"))
	}
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()

	notice := func(format string, args ...any) {
		if progress != nil {
			fmt.Fprint(progress, "\r\033[K")
		}
		fmt.Fprintf(stderr, format+"\n", args...)
	}
	exe, err := launch.SelfExe()
	if err != nil {
		return &exitError{ExitFailed, err}
	}
	run, runErr := engine.Run(ctx, engine.Options{Plan: p, Exe: exe, OutDir: out, Progress: progress, Notice: notice})
	if run == nil {
		return &exitError{ExitFailed, runErr}
	}
	if err := report.Host(stdout, run); err != nil {
		return err
	}
	if err := report.Tables(stdout, run, f.format); err != nil {
		return err
	}
	if len(run.Assertions) > 0 {
		if err := report.Assertions(stdout, run, f.format); err != nil {
			return err
		}
	}
	if f.json != "" {
		if err := run.WriteFile(f.json); err != nil {
			return &exitError{ExitFailed, fmt.Errorf("writing %s: %w", f.json, err)}
		}
	}
	fmt.Fprintf(stderr, "server logs: %s\n", out)
	if errors.Is(runErr, context.Canceled) || run.Interrupted {
		return &exitError{ExitInterrupted, errors.New("interrupted: partial results above")}
	}
	if runErr != nil {
		return &exitError{ExitFailed, runErr}
	}
	if n := failures(run); n > 0 {
		return &exitError{ExitFailed, fmt.Errorf("%d failure(s): see the Verdict column", n)}
	}
	return nil
}

// failures counts failed results and assertions.
func failures(run *result.Run) int {
	n := 0
	for _, r := range run.Results {
		if !r.OK {
			n++
		}
	}
	for _, a := range run.Assertions {
		if !a.Pass {
			n++
		}
	}
	return n
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
