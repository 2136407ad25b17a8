package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/exporter-toolkit/web"
)

// shutdownTimeout bounds how long in-flight scrapes may finish after
// SIGTERM; a kubelet waits 30 s by default before it kills.
const shutdownTimeout = 5 * time.Second

// serve runs the server until it fails or SIGINT / SIGTERM arrives, then
// lets in-flight requests finish and calls stop, which ends the
// collectors' background work (JVM sampling, kernel log reader, cloud
// refresher).
func serve(server *http.Server, flags *web.FlagConfig, slogger *slog.Logger, logger log.Logger, stop func()) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	served := make(chan error, 1)
	go func() { served <- web.ListenAndServe(server, flags, slogger) }()

	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
		level.Info(logger).Log("msg", "Shutting down")
		shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), shutdownTimeout)
		err = server.Shutdown(shutdownCtx)
		cancelShutdown()
		if served := <-served; !errors.Is(served, http.ErrServerClosed) && err == nil {
			err = served
		}
	}
	stop()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
