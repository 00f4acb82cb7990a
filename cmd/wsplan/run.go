package main

import (
	"bytes"
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
	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/assert"
	"github.com/wsplan/wsplan/internal/engine"
	"github.com/wsplan/wsplan/internal/launch"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/report"
	"github.com/wsplan/wsplan/scenarios"
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

// checkOutputs checks that every file the run writes at its end can be
// created where the flags say: its directory exists.
func (f *runFlags) checkOutputs() error {
	if err := checkOutputs(map[string]string{
		"--json": f.json, "--junit": f.junit, "--summary": f.summary, "--html": f.html, "--benchfmt": f.benchfmt,
	}); err != nil {
		return err
	}
	if st, err := os.Stat(f.out); f.out != "" && err == nil && !st.IsDir() {
		return usageErr(fmt.Errorf("--out %s: not a directory", f.out))
	}
	return nil
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

// checkOutput checks that the file a flag names can be created: its
// directory exists and it is not itself a directory.
func checkOutput(flag, path string) error {
	if path == "" {
		return usageErr(fmt.Errorf("%s: want a file name", flag))
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return usageErr(fmt.Errorf("%s %s: no directory %s to write it in", flag, path, filepath.Dir(path)))
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usageErr(fmt.Errorf("%s %s: a directory, want a file", flag, path))
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

// writeOutputs prints the report and writes the files the flags ask for.
// The JSON and benchfmt files keep every repeat; the tables, the summary
// and the HTML page show their medians.
func writeOutputs(run, baseline *result.Run, f *runFlags, stdout io.Writer) error {
	// Every string, before any format escapes it in its own way.
	secrets.RedactValue(run)
	if err := printTables(stdout, run, baseline, f); err != nil {
		return err
	}
	if f.benchfmt != "" {
		if err := writeFile(f.benchfmt, func(w io.Writer) error { return report.Benchfmt(w, run) }); err != nil {
			return err
		}
	}
	if f.json != "" {
		if err := writeFile(f.json, run.Write); err != nil {
			return err
		}
	}
	if f.junit != "" {
		if err := writeFile(f.junit, func(w io.Writer) error { return report.JUnit(w, run) }); err != nil {
			return err
		}
	}
	if f.summary != "" {
		if err := writeFile(f.summary, func(w io.Writer) error { return report.Markdown(w, run, baseline) }); err != nil {
			return err
		}
	}
	return writeHTML(f.html, []*result.Run{run})
}

// writeFile creates path and writes it with write, redacted as one piece
// (no secret of the plan reaches a file, whatever the writes' boundaries).
func writeFile(path string, write func(io.Writer) error) error {
	if err := touchHost("write " + path); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := redacting(fh).Write(buf.Bytes()); err != nil {
		fh.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return err
	}
	return nil
}

// readRun reads a --json file back, with each metric's Go type restored.
func readRun(path string) (*result.Run, error) {
	return result.ReadFile(path, scenarios.ResultDefs)
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

// isTerminal reports whether w (seen through the redacting writer) is a
// terminal.
func isTerminal(w io.Writer) bool {
	f, ok := fileOf(w)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// fileOf is the file under w's wrappers (the secrets' redacting writer),
// if there is one: terminal-ness is the file's, not the wrapper's.
func fileOf(w io.Writer) (*os.File, bool) {
	for {
		switch x := w.(type) {
		case *os.File:
			return x, true
		case interface{ Unwrap() io.Writer }:
			w = x.Unwrap()
		default:
			return nil, false
		}
	}
}

// printTables prints the host, the tables and the assertions. On a
// terminal narrower than the tables it prints the compact view instead,
// and says where the full tables are; pipes and files get the full tables.
func printTables(stdout io.Writer, run, baseline *result.Run, f *runFlags) error {
	if err := report.Host(stdout, run); err != nil {
		return err
	}
	compact, err := report.TablesFit(stdout, run, baseline, f.format, terminalWidth(stdout), fullTablesAt(f))
	if err != nil {
		return err
	}
	if len(run.Assertions) > 0 && !compact {
		return report.Assertions(stdout, run, f.format)
	}
	return nil
}

// fullTablesAt says where the full tables of a compact view are, in two
// lines that fit 80 columns.
func fullTablesAt(f *runFlags) string {
	var at []string
	for _, file := range []string{f.summary, f.html} {
		if file != "" {
			at = append(at, file)
		}
	}
	s := "compact view (the terminal is narrower than the tables); full tables:\n  "
	if len(at) > 0 {
		return s + strings.Join(at, ", ") + ", or pipe the output: wsplan run ... | less -S"
	}
	return s + "pipe the output (wsplan run ... | less -S), or --summary F, --html F"
}

// terminalWidth is the width of w when it is a terminal, else 0.
func terminalWidth(w io.Writer) int {
	f, ok := fileOf(w)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 0
	}
	return int(ws.Col)
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
