package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/frameworks"
)

func newFrameworksCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "frameworks",
		Short: "List every framework preset and adapter with its options",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			listFrameworks(stdout)
			return nil
		},
	}
}

func listFrameworks(w io.Writer) {
	fmt.Fprintln(w, "Presets (use as `- name: PRESET` in servers:):")
	fmt.Fprintln(w)
	for _, p := range frameworks.Presets() {
		opts := make([]string, 0, len(p.Options))
		for k, v := range p.Options {
			opts = append(opts, k+"="+v)
		}
		sort.Strings(opts)
		extra := ""
		if len(opts) > 0 {
			extra = " {" + strings.Join(opts, ", ") + "}"
		}
		fmt.Fprintf(w, "  %-18s %s%s\n  %-18s %s\n", p.Name, p.Framework, extra, "", p.Doc)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Frameworks and their options (use as `framework: NAME` + `options: {...}`):")
	for _, a := range frameworks.Adapters() {
		fmt.Fprintf(w, "\n  %s (%s): %s\n", a.Name, a.Library, a.Doc)
		if a.Broadcast != nil {
			fmt.Fprintf(w, "    broadcast: %s\n", a.Broadcast.Doc)
		} else if a.Limits.NoBroadcast == "" {
			fmt.Fprintf(w, "    broadcast: not served (%s)\n", a.NoBroadcastWhy())
		}
		for _, l := range a.Limits.Strings() {
			fmt.Fprintf(w, "    limit: %s\n", l)
		}
		for _, o := range a.AllOptions() {
			typ := string(o.Type)
			if o.Type == frameworks.TypeEnum {
				typ = strings.Join(o.Enum, "|")
			}
			def := o.Default
			if def == "" {
				def = `""`
			}
			if b := o.Bounds(); b != "" {
				typ += " " + b
			}
			fmt.Fprintf(w, "    %-20s %-22s default %-8s %s\n", o.Name, typ, def, o.Doc)
		}
	}
}
