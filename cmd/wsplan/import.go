package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/internal/har"
)

// newImportCmd is `wsplan import`: plans from recordings. Its one source
// so far is a browser's HAR file (`wsplan import har FILE`).
func newImportCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Write a plan from a recording (import har FILE: a browser's HAR file)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newImportHARCmd(stdout, stderr))
	return cmd
}

func newImportHARCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		o   = har.Options{Users: 1} // the flag's default, also without the flag
		out string
	)
	cmd := &cobra.Command{
		Use:   "har FILE",
		Short: "A plan from a browser's HAR file: a script phase per WebSocket, its messages as sends and expects",
		Long: "Reads the WebSockets a browser recorded in a HAR file (Chromium's DevTools: \"Save all as HAR\";\n" +
			"Firefox's entries with their messages as _webSocketMessages) and writes a plan: one server, one\n" +
			"script phase per WebSocket, each sent message a send template, each received one an expect.\n" +
			"Ids a reply carries back become correlate:, values a reply gave that a later send carries back are\n" +
			"captured, pauses are the recorded gaps. Cookies, Authorization and tokens are written ${env:WSPLAN_HAR_…}:\n" +
			"the variables to set are printed on stderr. See docs/har.md.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return importHAR(args[0], out, o, stdout, stderr)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the plan to this file (default: stdout)")
	if key := har.UsersKey(); key != "" { // "" in a build without the script kind
		cmd.Flags().IntVar(&o.Users, key, 1, "users of each script phase, each on its own connection")
	}
	cmd.Flags().StringVar(&o.Name, "name", "", "the plan's name (default: the HAR file's base name)")
	cmd.Flags().StringVar(&o.URL, "url", "", "the server's ws:// or wss:// URL instead of the recorded one")
	cmd.Flags().StringVar(&o.Match, "match", "", "import only the WebSockets whose URL contains this")
	return cmd
}

// importHAR reads file, writes the plan to out (stdout when ""), and says
// on stderr what was left out and which variables to set. A file that
// cannot be read or imported is a usage error (exit 2).
func importHAR(file, out string, o har.Options, stdout, stderr io.Writer) error {
	if o.Users < 1 {
		return usageErr(fmt.Errorf("--%s: must be >= 1, got %d", har.UsersKey(), o.Users))
	}
	if err := o.Check(); err != nil {
		return usageErr(fmt.Errorf("--%w", err))
	}
	if out != "" {
		if err := checkOutput("--output", out); err != nil {
			return err
		}
	}
	b, err := readHAR(file)
	if err != nil {
		return usageErr(err)
	}
	a, err := har.Parse(b)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", file, err))
	}
	o.Source = file
	res, err := har.Generate(a, o)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", file, err))
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "wsplan: warning: %s\n", w)
	}
	where := "stdout"
	if out == "" {
		if _, err := stdout.Write(res.Plan); err != nil {
			return err
		}
	} else {
		if err := touchHost("write " + out); err != nil {
			return err
		}
		if err := os.WriteFile(out, res.Plan, 0o644); err != nil {
			return err
		}
		where = out
	}
	fmt.Fprintf(stderr, "wsplan: wrote %s: %d WebSocket(s), %d sent and %d received messages\n", where, res.WebSockets, res.Sent, res.Received)
	if len(res.Env) > 0 {
		fmt.Fprintf(stderr, "wsplan: the plan reads secrets from the environment: set %s to the values the browser sent before `wsplan run`\n", strings.Join(res.Env, ", "))
	}
	return nil
}

// readHAR reads at most har.MaxInput bytes of a HAR file.
func readHAR(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, har.MaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(b) > har.MaxInput {
		return nil, fmt.Errorf("%s: more than the %d MiB a HAR file may have", file, har.MaxInput>>20)
	}
	return b, nil
}
