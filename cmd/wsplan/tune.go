package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/internal/engine"
	"github.com/wsplan/wsplan/report"
	"github.com/wsplan/wsplan/sysctl"
)

// restoreSaved puts back the values `tune --apply` or `run --tune` saved
// in file (`wsplan tune --restore FILE`).
func restoreSaved(stdout io.Writer, fs, sys sysctl.FS, file string) error {
	saved, err := sysctl.ReadSaved(file)
	if err != nil {
		return usageErr(err)
	}
	if err := touchHost("sysctl"); err != nil {
		return err
	}
	t := engine.Restoring(fs, sys, saved)
	if err := t.Restore(); err != nil {
		return err
	}
	for _, c := range t.Changes() {
		fmt.Fprintf(stdout, "restored %s = %q\n", c.Name, c.Was)
	}
	return nil
}

func newTuneCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		f       planFlags
		check   bool
		apply   bool
		restore string
		save    string
	)
	cmd := &cobra.Command{
		Use:   "tune PLAN --check|--apply [--save FILE] | tune --restore FILE",
		Short: "Host tuning alone: compare, apply, or restore the plan's host.sysctl and host.idle_poll",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			fs, sys := sysctlFS(), sysFS()
			if restore != "" {
				if len(args) > 0 || check || apply {
					return usageErr(errors.New("--restore FILE takes no plan and no --check/--apply"))
				}
				return restoreSaved(stdout, fs, sys, restore)
			}
			if len(args) != 1 || check == apply {
				return usageErr(errors.New("want: tune PLAN --check, tune PLAN --apply, or tune --restore FILE"))
			}
			if apply {
				if err := checkOutput("--save", save); err != nil {
					return err
				}
			}
			plans, err := f.loadMatrix(args[0])
			if err != nil {
				return err
			}
			wantSys, warning := engine.HostSys(sysctl.ReadIdle(sys), plans[0])
			if warning != "" {
				fmt.Fprintf(stderr, "warning: %s\n", warning)
			}
			host := engine.TuneSysctls(fs, plans)
			rows := engine.HostRows(fs, sys, host.Sysctl, wantSys)
			if err := report.Sysctl(stdout, rows, "md"); err != nil {
				return err
			}
			if check {
				if host.Warning != "" {
					fmt.Fprintf(stderr, "warning: %s\n", host.Warning)
				}
				return nil
			}
			if err := touchHost("sysctl"); err != nil {
				return err
			}
			t, err := engine.Tune(fs, sys, plans, save)
			if err != nil {
				return err
			}
			printTuned(stderr, t)
			if t.File == "" {
				fmt.Fprintln(stderr, "nothing to apply: the plan has no host.sysctl, no server port to reserve, and no host.idle_poll this host can take")
				return nil
			}
			fmt.Fprintf(stderr, "applied; previous values saved in %s: undo with `wsplan tune --restore %s`\n", save, save)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&check, "check", false, "print key, wanted, current, OK/DIFF")
	cmd.Flags().BoolVar(&apply, "apply", false, "write the plan's sysctls, saving the previous values to --save")
	cmd.Flags().StringVar(&save, "save", "wsplan-sysctl-saved.json", "where --apply saves the previous values")
	cmd.Flags().StringVar(&restore, "restore", "", "restore the values saved by --apply or by `run --tune` (after a crash)")
	return cmd
}
