// Package signals turns SIGTERM and SIGINT into context cancellation, the
// one shutdown path of every Napwake binary.
//
// It must not decide a shutdown order: each main writes its own
// (doorman/main.go).
package signals

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Context returns a context cancelled on the first SIGTERM or SIGINT. A
// second signal exits at once with status 1, for a person whose Ctrl-C did
// not seem to work.
func Context(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-ch
		cancel()
		<-ch
		os.Exit(1)
	}()
	return ctx
}
