// Package logging sets up the structured logger every Napwake binary uses: a
// logr.Logger over log/slog, JSON for machines or text for people.
//
// It must not know any component: each binary passes its own name and flags.
package logging

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
)

// Options are the logging flags every binary shares.
type Options struct {
	// Format is "json" (default, for log collectors) or "text".
	Format string
	// Level is "debug", "info" (default), "warn" or "error".
	Level string
}

// BindFlags registers --log-format and --log-level on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Format, "log-format", "json", `log format: "json" or "text"`)
	fs.StringVar(&o.Level, "log-level", "info", `least severe level logged: "debug", "info", "warn" or "error"`)
}

// Validate reports a flag value that New would refuse.
func (o Options) Validate() error {
	if _, err := parseLevel(o.Level); err != nil {
		return err
	}
	switch o.Format {
	case "json", "text", "":
		return nil
	}
	return fmt.Errorf("--log-format %q: want \"json\" or \"text\"", o.Format)
}

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
}

// New returns a logger writing to w. logr's V(1) maps to slog's debug level.
func New(w io.Writer, o Options) (logr.Logger, error) {
	if err := o.Validate(); err != nil {
		return logr.Discard(), err
	}
	level, _ := parseLevel(o.Level)
	ho := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if o.Format == "text" {
		h = slog.NewTextHandler(w, ho)
	} else {
		h = slog.NewJSONHandler(w, ho)
	}
	return logr.FromSlogHandler(h), nil
}
