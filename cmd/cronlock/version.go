package main

import (
	"context"
	"fmt"
	"runtime"

	"github.com/cronlock/cronlock/internal/app"
)

const versionUsage = `
Usage: cronlock version

Prints cronlock's version, the Go version it was built with, and the
platform.
`

func (c *cli) version(_ context.Context, args []string) error {
	fs := c.newFlags("version", versionUsage, false)
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "cronlock %s (%s %s/%s)\n", app.Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
