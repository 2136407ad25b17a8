package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// readHeaderTimeout bounds slow-loris clients; scrapes send tiny headers.
const readHeaderTimeout = 10 * time.Second

type logConfig struct {
	level  *string
	format *string
}

func addLogFlags(app *kingpin.Application) logConfig {
	return logConfig{
		level: app.Flag("log.level", "Only log messages with the given severity or above. One of: [debug, info, warn, error]").
			Default("info").Enum("debug", "info", "warn", "error"),
		format: app.Flag("log.format", "Output format of log messages. One of: [logfmt, json]").
			Default("logfmt").Enum("logfmt", "json"),
	}
}

// build returns the go-kit logger the exporter logs through and the
// slog.Logger exporter-toolkit needs, both filtered at the same level.
func (c logConfig) build(w io.Writer) (log.Logger, *slog.Logger, error) {
	var logger log.Logger
	switch *c.format {
	case "json":
		logger = log.NewJSONLogger(log.NewSyncWriter(w))
	case "logfmt":
		logger = log.NewLogfmtLogger(log.NewSyncWriter(w))
	default:
		return nil, nil, fmt.Errorf("unknown log format %q", *c.format)
	}
	logger = log.With(logger, "ts", log.DefaultTimestampUTC, "caller", log.Caller(5))

	var (
		option level.Option
		slvl   slog.Level
	)
	switch *c.level {
	case "debug":
		option, slvl = level.AllowDebug(), slog.LevelDebug
	case "info":
		option, slvl = level.AllowInfo(), slog.LevelInfo
	case "warn":
		option, slvl = level.AllowWarn(), slog.LevelWarn
	case "error":
		option, slvl = level.AllowError(), slog.LevelError
	default:
		return nil, nil, fmt.Errorf("unknown log level %q", *c.level)
	}
	// The slog bridge gets the unfiltered logger plus the slog level, so a
	// line is filtered once, by whichever side produced it.
	return level.NewFilter(logger, option), slogFromGoKit(logger, slvl), nil
}
