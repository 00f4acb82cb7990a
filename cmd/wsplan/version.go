package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/result"
)

// setVersion makes `wsplan --version` print the same first line as
// `wsplan version`.
func setVersion(root *cobra.Command) {
	root.Version = result.NewProvenance(nil).String()
	root.SetVersionTemplate("{{.Version}}\n")
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print wsplan's version, VCS revision, Go version and every framework library's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			p := result.NewProvenance(allLibraries())
			fmt.Fprintln(stdout, p.String())
			for _, l := range p.LibraryNames() {
				fmt.Fprintf(stdout, "  %s %s\n", l, p.Libraries[l])
			}
			return nil
		},
	}
}

// allLibraries lists the module of every registered framework adapter.
func allLibraries() []string {
	var out []string
	for _, a := range frameworks.Adapters() {
		out = append(out, a.Library)
	}
	return out
}

// planLibraries lists the modules of the framework adapters a plan starts
// (servers given as command: or url: have none).
func planLibraries(p *plan.Plan) []string {
	var out []string
	for _, s := range p.Servers {
		if a, ok := frameworks.LookupAdapter(s.Adapter); ok && s.Adapter != "" {
			out = append(out, a.Library)
		}
	}
	return out
}
