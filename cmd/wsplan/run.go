package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/internal/assert"
	"github.com/wsplan/wsplan/internal/engine"
	"github.com/wsplan/wsplan/internal/launch"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/result"
)

// planFlags are the flags that shape how a plan loads.
type planFlags struct {
	sets       []string
	only       []string
	onlyMatrix []string
}

func (f *planFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "override a plan variable: --set conns=2000 (repeatable)")
	cmd.Flags().StringSliceVar(&f.only, "only", nil, "run only these servers: --only gorilla,gws")
	cmd.Flags().StringArrayVar(&f.onlyMatrix, "only-matrix", nil, "run only these values of a matrix var: --only-matrix payload=64 (repeatable)")
}

func (f *planFlags) options() (plan.LoadOptions, error) {
	o := plan.LoadOptions{Sets: map[string]string{}, Only: f.only}
	for _, s := range f.sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return o, usageErr(fmt.Errorf("--set %q: want VAR=VALUE", s))
		}
		o.Sets[k] = v
	}
	for _, s := range f.onlyMatrix {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return o, usageErr(fmt.Errorf("--only-matrix %q: want VAR=VALUE", s))
		}
		if o.OnlyMatrix == nil {
			o.OnlyMatrix = map[string][]string{}
		}
		o.OnlyMatrix[k] = append(o.OnlyMatrix[k], v)
	}
	return o, nil
}

func (f *planFlags) load(path string) (*plan.Plan, error) {
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	p, err := plan.Load(path, o)
	if err != nil {
		return nil, usageErr(err)
	}
	secrets.AddSet(p.Secrets)
	return p, nil
}

// loadMatrix loads the plan once per combination of its matrix.
func (f *planFlags) loadMatrix(path string) ([]*plan.Plan, error) {
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	ps, err := plan.LoadMatrix(path, o)
	if err != nil {
		return nil, usageErr(err)
	}
	for _, p := range ps {
		secrets.AddSet(p.Secrets)
	}
	return ps, nil
}

type runFlags struct {
	planFlags
	json     string
	junit    string
	summary  string
	html     string
	baseline string
	benchfmt string
	count    int
	countSet bool // --count given: 0 is then an error, not the plan's repeat:
	out      string
	format   string
	progress string
	tune     bool
	live     liveFlags
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run PLAN",
		Short: "Run a plan: start each server, drive every phase, print tables",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.countSet = cmd.Flags().Changed("count")
			return runPlan(cmd.Context(), args[0], &f, stdout, stderr)
		},
	}
	f.register(cmd)
	f.live.register(cmd)
	cmd.Flags().StringVar(&f.json, "json", "", "write every figure as JSON to FILE")
	cmd.Flags().StringVar(&f.junit, "junit", "", "write assertions as JUnit XML to FILE (one testsuite per server)")
	cmd.Flags().StringVar(&f.summary, "summary", "", "write the Markdown report to FILE (e.g. a CI step summary)")
	cmd.Flags().StringVar(&f.html, "html", "", "write a self-contained HTML report with charts to FILE")
	cmd.Flags().StringVar(&f.baseline, "baseline", "", "compare with an earlier --json FILE: deltas in the tables, `baseline.*` in assertions")
	cmd.Flags().StringVar(&f.benchfmt, "benchfmt", "", "write the results in Go benchmark format to FILE, for benchstat (one line per repeat)")
	cmd.Flags().IntVar(&f.count, "count", 0, "run every server's phases N times, each on a fresh server, servers interleaved; tables show medians (default: the plan's repeat:, 1)")
	cmd.Flags().StringVar(&f.out, "out", "", "directory for server logs (default wsplan-out/<plan>-<time>)")
	cmd.Flags().StringVar(&f.format, "format", "md", "table format: md or ascii")
	cmd.Flags().BoolVar(&f.tune, "tune", false, "apply host.sysctl for the run, reserving the servers' ports in the client's port range, and restore it afterwards (saved in the --out dir)")
	cmd.Flags().StringVar(&f.progress, "progress", "auto", "live progress line on stderr: auto (when a terminal), on, off")
	return cmd
}

func runPlan(parent context.Context, path string, f *runFlags, stdout, stderr io.Writer) error {
	progress, err := f.check(stderr)
	if err != nil {
		return err
	}
	in, err := f.loadRun(path)
	if err != nil {
		return err
	}
	p := in.plans[0]
	// The live metrics' listener binds before anything else touches the
	// host: an address in use fails the run with nothing started.
	hub, stopLive, err := f.live.start(p, stderr)
	if err != nil {
		return err
	}
	defer stopLive()
	undoKube, err := kubeUp(parent, p, stderr) // client.kubernetes: the shards, before their preflight
	if err != nil {
		return err
	}
	defer undoKube()
	layout, err := preflight(p, f.tune, stderr)
	if err != nil {
		return err
	}
	if err := preflightMatrix(in.plans[1:], f.tune, stderr); err != nil {
		return err
	}
	out := f.out
	if out == "" {
		out = filepath.Join("wsplan-out", secrets.Redact(p.Name)+"-"+time.Now().Format("20060102-150405"))
	}
	if f.tune {
		if err := touchHost("sysctl"); err != nil {
			return err
		}
		t, err := engine.Tune(sysctlFS(), sysFS(), in.plans, filepath.Join(out, engine.SavedSysctlFile))
		if err != nil {
			return err
		}
		printTuned(stderr, t)
		defer restoreHost(stderr, t)
	}
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	exe, err := launch.SelfExe()
	if err != nil {
		return err
	}
	if err := touchHost("start servers"); err != nil {
		return err
	}
	run, runErr := engine.Run(ctx, engine.Options{Plan: p, Plans: in.plans, Count: f.count, Layout: layout, Exe: exe, OutDir: out,
		Sys: sysFS(), Progress: progress, Notice: noticer(progress, stderr), Abort: in.abort, Live: hub,
		Gated: func(server, phase, kind, metric string) bool {
			return assert.Gates(in.asserts, server, phase, kind, metric)
		}})
	if run == nil {
		return runErr
	}
	// Assertions see the median of the repeats (result.Collapse).
	run.Assertions = assert.Evaluate(in.asserts, result.Collapse(run), result.Collapse(in.baseline))
	run.Wsplan = result.NewProvenance(planLibraries(p))
	if err := writeOutputs(run, in.baseline, f, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "server logs: %s\n", out)
	return runOutcome(run, runErr)
}

// check checks every flag that needs no plan, before the plan loads and
// anything touches the host, and returns where the live progress line
// goes (nil: nowhere).
func (f *runFlags) check(stderr io.Writer) (io.Writer, error) {
	if f.format != "md" && f.format != "ascii" {
		return nil, usageErr(fmt.Errorf("--format %q: want md or ascii", f.format))
	}
	if f.countSet && (f.count < 1 || f.count > plan.MaxRepeat) {
		return nil, usageErr(fmt.Errorf("--count %d: want 1 to %d (leave it out for the plan's repeat:)", f.count, plan.MaxRepeat))
	}
	if err := f.live.check(); err != nil {
		return nil, err
	}
	if err := f.checkOutputs(); err != nil {
		return nil, err
	}
	switch f.progress {
	case "on":
		return stderr, nil
	case "off":
		return nil, nil
	case "auto":
		if isTerminal(stderr) {
			return stderr, nil
		}
		return nil, nil
	}
	return nil, usageErr(fmt.Errorf("--progress %q: want auto, on or off", f.progress))
}

// checkOutputs checks each flag's output file that is set (flag → path),
// in the flags' order of name.
func checkOutputs(files map[string]string) error {
	flags := make([]string, 0, len(files))
	for flag := range files {
		flags = append(flags, flag)
	}
	sort.Strings(flags)
	for _, flag := range flags {
		if files[flag] == "" {
			continue
		}
		if err := checkOutput(flag, files[flag]); err != nil {
			return err
		}
	}
	return nil
}

// runInput is what a run reads before it starts anything: the plan (once
// per matrix combination), its compiled assertions and the baseline.
type runInput struct {
	plans    []*plan.Plan
	asserts  []*assert.Assertion
	baseline *result.Run
}

func (f *runFlags) loadRun(path string) (*runInput, error) {
	plans, err := f.loadMatrix(path)
	if err != nil {
		return nil, err
	}
	p := plans[0]
	in := &runInput{plans: plans}
	if in.asserts, err = assert.Compile(p); err != nil {
		return nil, usageErr(err)
	}
	if f.baseline != "" {
		if in.baseline, err = readRun(f.baseline); err != nil {
			return nil, usageErr(fmt.Errorf("--baseline: %w", err))
		}
	}
	for _, a := range in.asserts {
		if a.UsesBaseline() && in.baseline == nil {
			return nil, usageErr(fmt.Errorf("%s:%d: assertion %q reads baseline: pass --baseline OLD.json", p.File, a.Line, a.Label()))
		}
	}
	return in, nil
}

// abort is the engine's Abort: the first failed `abort: true` assertion
// on a finished phase stops the run.
func (in *runInput) abort(r *result.Result, run *result.Run) string {
	for _, a := range in.asserts {
		if !a.Abort || !a.Applies(r) {
			continue
		}
		if o := a.Check(r, run, in.baseline); !o.Pass {
			return fmt.Sprintf("assertion %q failed for %s/%s", a.Label(), r.Server, r.Phase)
		}
	}
	return ""
}

// noticer prints the engine's notices on stderr, clearing the live
// progress line first.
func noticer(progress, stderr io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		if progress != nil {
			fmt.Fprint(progress, "\r\033[K")
		}
		fmt.Fprintf(stderr, format+"\n", args...)
	}
}

// runOutcome is the error a finished run ends with (exitCode maps it).
func runOutcome(run *result.Run, runErr error) error {
	if run.Aborted != "" {
		return fmt.Errorf("stopped early (abort: true): %s", run.Aborted)
	}
	if errors.Is(runErr, context.Canceled) || run.Interrupted {
		return fmt.Errorf("%w: partial results above", errInterrupted)
	}
	if runErr != nil {
		return runErr
	}
	if n := failures(run); n > 0 {
		return fmt.Errorf("%d failure(s): see the Verdict column and the assertions", n)
	}
	return nil
}

// failures counts failed results and assertions.
func failures(run *result.Run) int {
	n := assert.Failed(run.Assertions)
	for _, r := range run.Results {
		if !r.OK {
			n++
		}
	}
	return n
}

// printMatrix says how many times `wsplan run` runs the plan: the repeats
// and the matrix combinations (printPlan shows the first combination).
func printMatrix(w io.Writer, p *plan.Plan) {
	if p.Repeat > 1 {
		fmt.Fprintf(w, "repeat: %d (each server's phases, each time on a fresh server)\n", p.Repeat)
	}
	if len(p.Matrix) == 0 {
		return
	}
	n := 1
	var parts []string
	for _, m := range p.Matrix {
		n *= len(m.Values)
		parts = append(parts, m.Name+" ["+strings.Join(m.Values, ", ")+"]")
	}
	fmt.Fprintf(w, "matrix: %s: %d combinations (above: the first)\n", strings.Join(parts, " × "), n)
}
