package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/schemaq/schemaq/events"
)

// replyError prints a wire error and makes the command fail.
func replyError(e *env, err error) error {
	var we *events.Error
	if errors.As(err, &we) {
		fmt.Fprintf(e.stderr, "schemaq: %s: %s\n", we.Code, we.Message)
		return errSilent
	}
	return err
}

func printText(e *env, on bool, text string) {
	if !on {
		return
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(e.stdout, "      %s\n", line)
	}
}
