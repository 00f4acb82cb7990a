package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/docs"
)

// newHelpCmd replaces cobra's help command: `wsplan help COMMAND` is
// cobra's help of that command, as before; `wsplan help TOPIC` prints a
// page of docs/ as it is on disk (embedded in the binary), and `wsplan
// help` adds the list of topics to the root's help. A name that is both
// a command and a topic (init) is the command; the page is then
// reachable by its path (init.md, docs/init).
func newHelpCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command | topic]",
		Short: "Help about any command, or a topic page of the docs (wsplan help lists them)",
		Long: `Help prints the help of a command (wsplan help run), or a topic page of
wsplan's docs (wsplan help plans, wsplan help echo, wsplan help mqtt): the
Markdown files of docs/, embedded in this binary. A name that is also a
command's (init) is that command; its page is wsplan help init.md.`,
		ValidArgsFunction: func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			for _, sub := range c.Root().Commands() {
				if sub.IsAvailableCommand() {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			for _, t := range docs.Topics() {
				out = append(out, cobra.CompletionWithDesc(t.Name, t.Title))
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			if len(args) == 0 {
				if err := root.Help(); err != nil {
					return err
				}
				return listTopics(stdout)
			}
			if !docs.IsPath(args[0]) {
				if cmd, _, err := root.Find(args); err == nil && cmd != root {
					cmd.InitDefaultHelpFlag()
					cmd.InitDefaultVersionFlag()
					if err := cmd.Help(); err != nil {
						return err
					}
					if t, ok := docs.Lookup(args[0] + ".md"); ok && len(args) == 1 {
						fmt.Fprintf(stdout, "\nThe topic page %s: wsplan help %s\n", t.Title, t.Path)
					}
					return nil
				}
			}
			t, ok := docs.Lookup(args[0])
			if !ok || len(args) > 1 {
				return fmt.Errorf("unknown help topic %q: wsplan help lists the commands and topics", strings.Join(args, " "))
			}
			page, err := docs.Page(t)
			if err != nil {
				return err
			}
			_, err = stdout.Write(page)
			return err
		},
	}
}

// listTopics writes the topics after the root's help.
func listTopics(w io.Writer) error {
	fmt.Fprintln(w, "\nTopics (wsplan help TOPIC prints the page; a name after / is also a topic alone: echo for kinds/echo):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range docs.Topics() {
		fmt.Fprintf(tw, "  %s\t%s\n", t.Name, t.Title)
	}
	return tw.Flush()
}
