// Command schemaq keeps a search index of database schemas fresh from NATS
// events and answers questions about them with checked SQL. One binary
// holds every role; see `schemaq help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, errSilent) {
			fmt.Fprintln(os.Stderr, "schemaq:", err)
		}
		os.Exit(exitCode(err))
	}
}
