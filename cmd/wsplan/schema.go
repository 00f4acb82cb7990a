package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/internal/schema"
)

func newSchemaCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the plan's JSON Schema (draft 2020-12), for editors",
		Long: "Print the JSON Schema of a plan file, generated from the declarations the loader uses:\n" +
			"every key with its type, default, bounds and doc, each phase kind's parameters and each\n" +
			"framework's options. The repository keeps a copy in wsplan.schema.json; a plan names it on\n" +
			"its first line for yaml-language-server:\n\n" +
			"  # yaml-language-server: $schema=../wsplan.schema.json",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			b, err := schema.Generate()
			if err != nil {
				return err
			}
			_, err = stdout.Write(b)
			return err
		},
	}
}
