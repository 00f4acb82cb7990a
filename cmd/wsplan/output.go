package main

// Where a run's results go: the files --json, --html, --junit, --summary
// and --benchfmt name (checked before anything starts), the tables on
// stdout, fitted to a terminal.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/report"
	"github.com/wsplan/wsplan/scenarios"
)

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
