package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/sysctl"
)

// newShardCmd is the client shard process: `run` starts it over
// stdin/stdout when a plan asks for client shards, and with --listen it
// serves remote orchestrators over mutual TLS (see internal/shard).
func newShardCmd() *cobra.Command {
	var (
		opts          client.Options
		targets, srcs string
		listen, certs string
		idleExit      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "shard (--targets ADDRS [--source IPS] [--loops N] | --listen ADDR --certs DIR [--idle-exit D])",
		Short: "A client shard: driven by `wsplan run` over stdin/stdout, or a remote one with --listen",
		Long: "Without --listen, a client shard `wsplan run` starts itself and drives over stdin/stdout.\n" +
			"With --listen ADDR, a remote shard: it serves one orchestrator at a time over mutual TLS\n" +
			"with the certificates in --certs (made by `wsplan shard certs DIR`; a plan names the same\n" +
			"directory in client.certs), refuses and logs every other peer, and exits after --idle-exit\n" +
			"without an orchestrator (the plan's client.idle_exit replaces it once one came).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkShardFlags(cmd, listen, certs, targets, srcs, opts); err != nil {
				return err
			}
			if listen != "" {
				ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
				defer stop()
				return serveRemote(ctx, cmd, listen, certs, idleExit, opts.Loops)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
			defer stop()
			opts.Targets = strings.Split(targets, ",")
			if srcs != "" {
				opts.SourceAddrs = strings.Split(srcs, ",")
			}
			if err := touchHost("shard"); err != nil {
				return err
			}
			// The event loops hold locked threads; leave one P for the rest.
			runtime.GOMAXPROCS(opts.Loops + 1)
			if err := shard.Serve(ctx, opts, os.Stdin, os.Stdout); err != nil {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&targets, "targets", "", "server addresses, comma-separated")
	cmd.Flags().StringVar(&srcs, "source", "", "local addresses to bind, comma-separated")
	cmd.Flags().StringVar(&opts.Path, "path", "/ws", "upgrade path")
	cmd.Flags().IntVar(&opts.Loops, "loops", 1, "event loops (with --listen: when the plan leaves client.loops 0; 0 = one per CPU)")
	cmd.Flags().BoolVar(&opts.NoDelay, "nodelay", true, "TCP_NODELAY")
	cmd.Flags().StringVar(&listen, "listen", "", "serve remote orchestrators on ADDR (host:port) over mutual TLS")
	cmd.Flags().StringVar(&certs, "certs", "", "with --listen: the run's certificate directory (ca.pem, shard.pem, shard.key)")
	cmd.Flags().DurationVar(&idleExit, "idle-exit", shard.DefaultIdleExit, "with --listen: exit after this long without an orchestrator (< 0 = never)")
	cmd.AddCommand(&cobra.Command{
		Use:   "certs DIR",
		Short: "Make a throw-away CA and the certificates of remote shards and their orchestrator in DIR",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := touchHost("write " + args[0]); err != nil {
				return err
			}
			if _, err := shard.NewCerts(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s, %s and %s for `wsplan shard --listen ADDR --certs %[1]s`; %s and %s for the plan's client.certs\n",
				args[0], shard.CAFile, shard.ShardCertFile, shard.ShardKeyFile, shard.OrchCertFile, shard.OrchKeyFile)
			return nil
		},
	})
	return cmd
}

// Flags a local shard (driven over stdin/stdout) and a remote one
// (--listen) take alone.
var (
	localShardFlags  = []string{"targets", "source", "path", "nodelay"}
	remoteShardFlags = []string{"certs", "idle-exit"}
)

// checkShardFlags checks the shard's flags before it binds, raises a
// limit or serves: their values, and that a local shard's are not given
// to a remote one (whose orchestrator sends them) or the other way round.
func checkShardFlags(cmd *cobra.Command, listen, certs, targets, srcs string, o client.Options) error {
	if o.Loops < 0 {
		return usageErr(fmt.Errorf("--loops %d: want >= 0 (0: one per CPU)", o.Loops))
	}
	if listen != "" {
		for _, name := range localShardFlags {
			if cmd.Flags().Changed(name) {
				return usageErr(fmt.Errorf("--%s is a local shard's: with --listen, the orchestrator sends it", name))
			}
		}
		if !validListen(listen) {
			return usageErr(fmt.Errorf("--listen %q: want HOST:PORT, e.g. :7070", listen))
		}
		if certs == "" {
			return usageErr(errors.New("shard --listen needs --certs DIR (make one with `wsplan shard certs DIR`)"))
		}
		return nil
	}
	for _, name := range remoteShardFlags {
		if cmd.Flags().Changed(name) {
			return usageErr(fmt.Errorf("--%s goes with --listen", name))
		}
	}
	if targets == "" {
		return usageErr(errors.New("shard needs --targets ADDRS (or --listen ADDR for a remote shard)"))
	}
	for _, t := range strings.Split(targets, ",") {
		if _, port, err := net.SplitHostPort(t); err != nil || port == "" {
			return usageErr(fmt.Errorf("--targets: %q: want HOST:PORT", t))
		}
	}
	if o.Loops == 0 {
		return usageErr(errors.New("--loops 0: want >= 1 for a local shard (0, one per CPU, is a remote shard's)"))
	}
	if srcs != "" {
		for _, s := range strings.Split(srcs, ",") {
			if _, err := netip.ParseAddr(s); err != nil {
				return usageErr(fmt.Errorf("--source: %q: want an IP address", s))
			}
		}
	}
	if !strings.HasPrefix(o.Path, "/") {
		return usageErr(fmt.Errorf("--path %q: want a path that starts with /", o.Path))
	}
	return nil
}

// serveRemote is `wsplan shard --listen`: it logs to stderr and returns
// nil when it exits for want of an orchestrator.
func serveRemote(ctx context.Context, cmd *cobra.Command, addr, certs string, idle time.Duration, loops int) error {
	cfg, err := shard.ShardTLS(certs)
	if err != nil {
		return usageErr(fmt.Errorf("--certs: %w", err))
	}
	if err := touchHost("listen " + addr); err != nil {
		return err
	}
	if _, _, err := sysctl.RaiseNoFile(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "wsplan shard: raising the open-file soft limit: %v\n", err)
	}
	if loops <= 0 {
		loops = runtime.NumCPU()
	}
	runtime.GOMAXPROCS(max(runtime.NumCPU(), loops+1))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	lg := log.New(cmd.ErrOrStderr(), "wsplan shard: ", log.LstdFlags|log.LUTC)
	lg.Printf("listening on %s (pid %d)", ln.Addr(), os.Getpid())
	err = shard.Listen(ctx, shard.ListenSpec{Listener: ln, TLS: cfg, IdleExit: idle, Logf: lg.Printf, Loops: loops})
	if errors.Is(err, shard.ErrIdle) {
		lg.Printf("exiting: %v", err)
		return nil
	}
	return err
}
