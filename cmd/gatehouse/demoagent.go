package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// demoAgent runs the reference agent (demo.RunAgent) until SIGTERM or Ctrl-C: it dials the
// gateway's agent link and runs the operators sha256, matmul and sleep.
func demoAgent(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("connect", "127.0.0.1:50051", "the gateway's internal gRPC listener, host:port")
	token := fs.String("token", "", "a bearer JWT whose scopes allow serving the operators (agent:serve); default $GATEHOUSE_AGENT_TOKEN")
	id := fs.String("id", "", "the agent's id (default: host name and process id)")
	concurrency := fs.Int("concurrency", 4, "tasks run at once; more are rejected")
	reconnect := fs.Bool("reconnect", true, "dial again a second after a connection ends (not after a rejection)")
	fault := fs.String("fault", "", "misbehave to exercise the gateway's defences: silent, duplicate, late, unknown-result, oversized, flood")
	var versions stringList
	fs.Var(&versions, "version", "a protocol version to offer, major.minor.patch (repeatable; default 1.0.0)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *token == "" {
		*token = os.Getenv("GATEHOUSE_AGENT_TOKEN")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	err := demo.RunAgent(ctx, demo.AgentOptions{Addr: *addr, Token: *token, ID: *id, Versions: versions, MaxConcurrent: *concurrency,
		Reconnect: *reconnect, Fault: *fault, Logger: logger})
	if err != nil {
		fmt.Fprintln(stderr, "demo-agent:", err)
		return 1
	}
	return 0
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return fmt.Sprint([]string(*l)) }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}
