package main

import (
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/shard"
)

// newShardCmd is the client shard process `run` starts when a plan asks for
// client shards; it speaks JSON lines on stdin/stdout (see internal/shard).
func newShardCmd() *cobra.Command {
	var (
		opts          client.Options
		targets, srcs string
	)
	cmd := &cobra.Command{
		Use:    "shard --targets ADDRS [--source IPS] [--loops N]",
		Short:  "A client shard driven by `wsplan run` over stdin/stdout",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Targets = strings.Split(targets, ",")
			if srcs != "" {
				opts.SourceAddrs = strings.Split(srcs, ",")
			}
			// The event loops hold locked threads; leave one P for the rest.
			runtime.GOMAXPROCS(opts.Loops + 1)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
			defer stop()
			if err := shard.Serve(ctx, opts, os.Stdin, os.Stdout); err != nil {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&targets, "targets", "", "server addresses, comma-separated")
	cmd.Flags().StringVar(&srcs, "source", "", "local addresses to bind, comma-separated")
	cmd.Flags().StringVar(&opts.Path, "path", "/ws", "upgrade path")
	cmd.Flags().IntVar(&opts.Loops, "loops", 1, "event loops")
	cmd.Flags().BoolVar(&opts.NoDelay, "nodelay", true, "TCP_NODELAY")
	return cmd
}
