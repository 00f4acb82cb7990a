package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/report"
)

func newCompareCmd(stdout io.Writer) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "compare OLD.json NEW.json",
		Short: "Print NEW's tables with deltas against OLD, without running anything",
		Args:  cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			if format != "md" && format != "ascii" {
				return usageErr(fmt.Errorf("--format %q: want md or ascii", format))
			}
			old, err := readRun(args[0])
			if err != nil {
				return usageErr(err)
			}
			cur, err := readRun(args[1])
			if err != nil {
				return usageErr(err)
			}
			return report.Tables(stdout, cur, old, format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "md", "table format: md or ascii")
	return cmd
}
