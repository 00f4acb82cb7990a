package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/frameworks"
	"github.com/wsplan/wsplan/frameworks/servers"
)

func newServeCmd(stderr io.Writer) *cobra.Command {
	var (
		name    string
		opts    []string
		addrs   string
		path    string
		payload int
		tlsCert string
		tlsKey  string
	)
	cmd := &cobra.Command{
		Use:   "serve --framework NAME --addrs 127.0.0.1:9000[-9049] [--opt K=V]...",
		Short: "Run one echo server (what `run` spawns; usable by hand)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := map[string]string{}
			for _, kv := range opts {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return usageErr(fmt.Errorf("--opt %q: want KEY=VALUE", kv))
				}
				o[k] = v
			}
			// A bad framework or option is the caller's mistake (exit 2),
			// found before anything listens.
			a, vals, errs := frameworks.Resolve(name, "", o)
			if len(errs) > 0 {
				return usageErr(errors.Join(errs...))
			}
			list, err := servers.ParseAddrs(addrs)
			if err != nil {
				return usageErr(fmt.Errorf("--addrs: %w", err))
			}
			if payload < 1 {
				return usageErr(fmt.Errorf("--payload %d: want a size in bytes >= 1", payload))
			}
			if !strings.HasPrefix(path, "/") {
				return usageErr(fmt.Errorf("--path %q: want a path that starts with /", path))
			}
			var tlsCfg *tls.Config
			switch {
			case (tlsCert == "") != (tlsKey == ""):
				return usageErr(fmt.Errorf("--tls-cert and --tls-key go together"))
			case tlsCert != "":
				cert, err := tls.LoadX509KeyPair(tlsCert, tlsKey)
				if err != nil {
					return usageErr(fmt.Errorf("--tls-cert/--tls-key: %w", err))
				}
				tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
				if why := a.TLSRefusal(vals); why != "" {
					return usageErr(fmt.Errorf("%s cannot serve TLS: %s", name, why))
				}
			}
			if err := touchHost("listen " + addrs); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(stderr, "serve %s on %s%s (pid %d)\n", name, addrs, path, os.Getpid())
			// Libraries that log on their own write to the server's log.
			servers.LogOutput = stderr
			if err := servers.Serve(ctx, name, o, list, path, payload, tlsCfg); err != nil {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "framework", "", "preset or framework name (see `wsplan frameworks`)")
	cmd.Flags().StringArrayVar(&opts, "opt", nil, "framework option KEY=VALUE (repeatable)")
	cmd.Flags().StringVar(&addrs, "addrs", "127.0.0.1:9000", "listen addresses: host:port, host:port-port, comma-separated")
	cmd.Flags().StringVar(&path, "path", "/ws", "upgrade path")
	cmd.Flags().IntVar(&payload, "payload", 1024, "expected message size, a hint for buffer sizes")
	cmd.Flags().StringVar(&tlsCert, "tls-cert", "", "serve TLS (wss://) with this PEM certificate (with --tls-key)")
	cmd.Flags().StringVar(&tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	if err := cmd.MarkFlagRequired("framework"); err != nil {
		panic(err)
	}
	return cmd
}
