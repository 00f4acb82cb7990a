package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/report"
)

func newReportCmd(stdout io.Writer) *cobra.Command {
	var htmlOut, summary, benchOut string
	cmd := &cobra.Command{
		Use:   "report RUN.json... --html FILE",
		Short: "Render --json files again: one HTML page comparing them (--html), a Markdown summary (--summary)",
		Long: `Render runs written by --json without running anything.

--html FILE writes one self-contained page (no network request when opened)
with the tables and charts of every run; several files are compared on one
page, each run a series, the tables of every run after the first showing
their changes against the first. --summary FILE writes the Markdown summary
of the last run (with deltas against the first when there are two or more).
--benchfmt FILE writes the last run in Go benchmark format, for benchstat.
Without any of them, the tables of the last run are printed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkOutputs(map[string]string{"--html": htmlOut, "--summary": summary, "--benchfmt": benchOut}); err != nil {
				return err
			}
			runs := make([]*result.Run, len(args))
			for i, a := range args {
				r, err := readRun(a)
				if err != nil {
					return usageErr(err)
				}
				runs[i] = r
			}
			var base *result.Run
			if len(runs) > 1 {
				base = runs[0]
			}
			last := runs[len(runs)-1]
			if benchOut != "" {
				if err := writeFile(benchOut, func(w io.Writer) error { return report.Benchfmt(w, last) }); err != nil {
					return err
				}
			}
			if htmlOut == "" && summary == "" && benchOut == "" {
				return report.Tables(stdout, last, base, report.FormatMarkdown)
			}
			if htmlOut != "" {
				if err := writeHTML(htmlOut, runs); err != nil {
					return err
				}
			}
			if summary != "" {
				if err := writeFile(summary, func(w io.Writer) error { return report.Markdown(w, last, base) }); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&htmlOut, "html", "", "write one self-contained HTML page of every run to FILE")
	cmd.Flags().StringVar(&summary, "summary", "", "write the Markdown report of the last run to FILE")
	cmd.Flags().StringVar(&benchOut, "benchfmt", "", "write the last run in Go benchmark format to FILE (every repeat), for benchstat")
	return cmd
}

// writeHTML writes the HTML report of runs to path; "" writes nothing.
func writeHTML(path string, runs []*result.Run) error {
	if path == "" {
		return nil
	}
	return writeFile(path, func(w io.Writer) error { return report.HTML(w, runs) })
}
