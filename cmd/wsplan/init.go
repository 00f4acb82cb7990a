package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/initplan"
)

// initPlanFlags are the flags that say which plan `wsplan init` writes:
// given any of them, it asks nothing.
var initPlanFlags = []string{"url", "protocol", "tls", "conns", "ci", "preset"}

func newInitCmd(stdout, stderr io.Writer) *cobra.Command {
	var o initplan.Options
	var force bool
	cmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented starter plan for your server (asks on a terminal)",
		Long: `Write a commented starter plan to FILE (default ` + initplan.DefaultFile + `; - writes it to stdout):
the connect phase, then an echo and a rate phase for raw messages or a
script in the server's protocol, and p99 assertions. The plan loads as
written: wsplan validate FILE, then wsplan run FILE.

On a terminal, without any of --url, --protocol, --tls, --conns, --ci and
--preset, it asks for them; otherwise it takes the flags. Without --url it
writes a plan for a preset wsplan starts itself (raw messages), or for the
repository's example server of the protocol. An existing FILE is never
overwritten without --force (on a terminal, it asks).`,
		Example: `  wsplan init
  wsplan init --url ws://127.0.0.1:7000/ws
  wsplan init --url ws://127.0.0.1:9883/mqtt --protocol mqtt mqtt.yaml
  wsplan init --url wss://bench.example.com/socket.io/ --protocol socketio --ci ci.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = initplan.DefaultFile
			if len(args) == 1 {
				o.File = args[0]
			}
			if o.Conns == 0 { // 0 is initplan's default: here, asked for
				return usageErr(fmt.Errorf("--conns 0: want 1 to %d", initplan.MaxConns))
			}
			in := cmd.InOrStdin()
			if !isTerminalInput(in) || anyChanged(cmd.Flags(), initPlanFlags) {
				return writeInit(o, force, nil, stdout)
			}
			p := &prompter{in: bufio.NewReader(in), out: stderr}
			if err := p.options(&o); err != nil {
				return err
			}
			return writeInit(o, force, p, stdout)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.URL, "url", "", "your server's ws:// or wss:// URL (default: a preset, or the protocol's example server)")
	fl.StringVar(&o.Protocol, "protocol", initplan.NoProtocol, "the protocol it speaks: "+strings.Join(initplan.Protocols(), ", "))
	fl.BoolVar(&o.TLS, "tls", false, "speak wss:// with a tls: block (a preset: served with the run's own CA)")
	fl.IntVar(&o.Conns, "conns", initplan.DefaultConns, "connections to open (and users of the script)")
	fl.BoolVar(&o.CI, "ci", false, "a CI gate: shorter phases, and a failed handshake bound aborts the run")
	fl.StringVar(&o.Preset, "preset", "", "the preset a plan without --url measures (default "+initplan.DefaultPreset+"; wsplan frameworks lists them)")
	fl.BoolVar(&force, "force", false, "overwrite FILE when it exists")
	return cmd
}

// anyChanged reports whether any of the flags names was given.
func anyChanged(fs *pflag.FlagSet, names []string) bool {
	for _, n := range names {
		if fs.Changed(n) {
			return true
		}
	}
	return false
}

// isTerminalInput reports whether r is a terminal (not a pipe or a file).
func isTerminalInput(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// writeInit renders the plan of o and writes it to o.File (- = stdout);
// an existing file is overwritten with force, or when p (a terminal) is
// told so.
func writeInit(o initplan.Options, force bool, p *prompter, stdout io.Writer) error {
	if err := o.Check(); err != nil {
		return usageErr(err)
	}
	data, err := initplan.Plan(o)
	if err != nil {
		return err
	}
	if o.File == "-" {
		_, err := stdout.Write(data)
		return err
	}
	if _, err := os.Stat(o.File); err == nil && !force {
		if p == nil {
			return usageErr(fmt.Errorf("%s exists: --force overwrites it", o.File))
		}
		yes, err := p.yesNo(o.File+" exists: overwrite it?", false)
		if err != nil {
			return err
		}
		if !yes {
			return fmt.Errorf("%s exists: not overwritten", o.File)
		}
		force = true
	}
	if err := touchHost("write " + o.File); err != nil {
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(o.File, flags, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n  check it: wsplan validate %s\n  run it:   wsplan run %s\n", o.File, o.File, o.File)
	return nil
}

// prompter asks for the plan's options on a terminal: one question a
// line, the default in brackets, asked again until the answer is valid.
type prompter struct {
	in  *bufio.Reader
	out io.Writer
}

// errNoAnswer ends the questions when the terminal's input ends.
var errNoAnswer = errors.New("init: no answer (input closed)")

// ask asks q until check accepts the answer; an empty answer is def,
// shown in brackets as hint ("" = def).
func (p *prompter) ask(q, hint, def string, check func(string) error) (string, error) {
	if hint == "" {
		hint = def
	}
	for {
		if hint != "" {
			fmt.Fprintf(p.out, "%s [%s]: ", q, hint)
		} else {
			fmt.Fprintf(p.out, "%s: ", q)
		}
		line, err := p.in.ReadString('\n')
		if err != nil && (err != io.EOF || line == "") {
			fmt.Fprintln(p.out)
			return "", errNoAnswer
		}
		a := strings.TrimSpace(line)
		if a == "" {
			a = def
		}
		if err := check(a); err != nil {
			fmt.Fprintf(p.out, "  %v\n", err)
			continue
		}
		return a, nil
	}
}

// yesNo asks a yes/no question.
func (p *prompter) yesNo(q string, def bool) (bool, error) {
	hint, d := "y/N", "n"
	if def {
		hint, d = "Y/n", "y"
	}
	a, err := p.ask(q, hint, d, func(a string) error {
		switch strings.ToLower(a) {
		case "y", "yes", "n", "no":
			return nil
		}
		return errors.New("answer y or n")
	})
	if err != nil {
		return false, err
	}
	return strings.HasPrefix(strings.ToLower(a), "y"), nil
}

// options asks for every option of the plan, in the order a user thinks
// of them: the server, its protocol, TLS, the load, a CI gate.
func (p *prompter) options(o *initplan.Options) error {
	fmt.Fprintln(p.out, "wsplan init: a starter plan (Enter takes the default in brackets)")
	var err error
	o.URL, err = p.ask("Your server's URL, ws://… or wss://… (empty: a preset wsplan starts, or the protocol's example server)", "", "",
		func(a string) error { return initplan.Options{URL: a}.Check() })
	if err != nil {
		return err
	}
	o.Protocol, err = p.ask("Protocol ("+strings.Join(initplan.Protocols(), ", ")+")", "", initplan.NoProtocol,
		func(a string) error { return initplan.Options{URL: o.URL, Protocol: a}.Check() })
	if err != nil {
		return err
	}
	if u, _ := url.Parse(o.URL); u == nil || u.Scheme != "wss" {
		if o.TLS, err = p.yesNo("TLS (wss://)?", false); err != nil {
			return err
		}
	}
	conns, err := p.ask("Connections", "", strconv.Itoa(initplan.DefaultConns), func(a string) error {
		n, err := strconv.Atoi(a)
		if err != nil {
			return fmt.Errorf("want a number of connections, got %q", a)
		}
		return initplan.Options{Conns: n}.Check()
	})
	if err != nil {
		return err
	}
	o.Conns, _ = strconv.Atoi(conns) // checked above
	o.CI, err = p.yesNo("A CI gate (short phases; a failed handshake bound stops the run)?", false)
	return err
}
