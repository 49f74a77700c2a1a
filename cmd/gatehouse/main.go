// Command gatehouse is the Gatehouse protocol gateway.
//
//	gatehouse serve [--config FILE] [--boundary-addr ADDR] [--admin-addr ADDR] [--internal-addr ADDR]
//	gatehouse stdio [--config FILE]
//	gatehouse validate --config FILE
//	gatehouse demo-grpc [--addr ADDR]
//	gatehouse demo-mcp [--start-delay D]
//	gatehouse demo-agent [--connect HOST:PORT] [--token T] [--id NAME]
//	gatehouse demo-chat [--listen HOST:PORT] [--token T] [--delay D] [--mcp-url URL]
//	gatehouse token --key FILE --sub NAME [--scope "a b"] [--aud A]... [--iss I] [--ttl 1h] [--kid K] [--claim N=V]...
//	gatehouse call METHOD [params-json|@file|-] | call --batch FILE   (client commands: docs/cli.md)
//	gatehouse discover | delegate CAP --in JSON | chat ROUTE MESSAGE
//	gatehouse tasks|approvals|revocations|keys|operator ACTION ...
//	gatehouse version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/cmd/gatehouse/internal/gcfloor"
	"github.com/gatehouse-dev/gatehouse/cmd/gatehouse/internal/hangup"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/server"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  gatehouse serve [--config FILE] [--boundary-addr ADDR] [--admin-addr ADDR] [--internal-addr ADDR]
  gatehouse stdio [--config FILE]     the MCP face over stdin/stdout, for a desktop agent (logs on stderr)
  gatehouse validate --config FILE
  gatehouse demo-grpc [--addr ADDR]   the demo calculator.v1 gRPC backend on its own
  gatehouse demo-mcp [--start-delay D] the demo MCP server (the conformance fixtures) over stdio
  gatehouse demo-agent [--connect HOST:PORT] [--token T] [--id NAME]
                                      the reference compute agent: dials the agent link (docs/agents.md)
  gatehouse demo-chat [--listen HOST:PORT] [--token T] [--delay D] [--mcp-url URL]
                                      the demo chat agent: session RPC over WebSocket and HTTP+SSE (docs/session.md)
  gatehouse token --key FILE --sub NAME [--scope "a b"] [--aud A]... [--iss I] [--ttl 1h] [--kid K] [--claim N=V]...
                                      mint a development JWT signed with a private key (docs/auth.md)
  gatehouse dev-certs [--force] DIR   write a local CA, a localhost server certificate and a client
                                      certificate (SPIFFE id) for TLS and mTLS in development (docs/tls.md)
  gatehouse version

client commands (docs/cli.md; --url/$GATEHOUSE_URL, --token/$GATEHOUSE_TOKEN, --api-key/$GATEHOUSE_API_KEY):
  gatehouse call METHOD [params-json|@file|-] [--ws] [--timeout D]
  gatehouse call --batch FILE [--ws]     a JSON array, or one request object per line
  gatehouse discover [--level N] [--query Q] [--json]
  gatehouse delegate CAP [--in JSON|@file|-] [--id ID]   live progress; Ctrl-C cancels the task
  gatehouse chat ROUTE MESSAGE...         the session RPC's reply as it is written
  gatehouse tasks status|cancel|suspend|resume|stream TASK_ID
  gatehouse tasks list [--status S]       every caller's tasks (admin listener, operator scope)
  gatehouse operator status|backends|catalog|errors|reload|cancel|resume   what the console shows and does
  gatehouse approvals list|approve|deny   the admin listener (--admin-url/$GATEHOUSE_ADMIN_URL)
  gatehouse revocations list|add|remove
  gatehouse keys list|rotate
`

// run is main without the process exit, so tests can drive it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "stdio":
		return stdio(args[1:], os.Stdin, stdout, stderr)
	case "validate":
		return validate(args[1:], stdout, stderr)
	case "demo-grpc":
		return demoGRPC(args[1:], stderr)
	case "demo-mcp":
		return demoMCP(args[1:], stderr)
	case "demo-agent":
		return demoAgent(args[1:], stderr)
	case "demo-chat":
		return demoChat(args[1:], stderr)
	case "token":
		return token(args[1:], stdout, stderr)
	case "dev-certs":
		return devCerts(args[1:], stdout, stderr)
	case "call":
		return callCmd(args[1:], stdout, stderr)
	case "discover":
		return discoverCmd(args[1:], stdout, stderr)
	case "delegate":
		return delegateCmd(args[1:], stdout, stderr)
	case "chat":
		return chatCmd(args[1:], stdout, stderr)
	case "tasks", "approvals", "revocations", "keys", "operator":
		return adminCmd(args[0], args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "gatehouse", buildVersion())
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "gatehouse: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

func validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("config", "", "configuration file to check")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" {
		fmt.Fprintln(stderr, "gatehouse validate: --config is required")
		return 2
	}
	cfg, err := loadConfig(*file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok\n", *file)
	printEnforcement(stdout, cfg)
	return 0
}

func serve(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("config", "", "configuration file (default: the embedded configuration)")
	boundary := fs.String("boundary-addr", "", "boundary listener address, overriding server.boundary.addr")
	admin := fs.String("admin-addr", "", "admin listener address, overriding server.admin.addr")
	internal := fs.String("internal-addr", "", "internal gRPC listener address, overriding server.internal.addr")
	pprofOn := fs.Bool("pprof", false, "serve /debug/pprof/ on the admin listener (server.admin.pprof) and grant its scope to anonymous loopback callers")
	consoleOn := fs.Bool("console", false, "serve the operator console at /console on the admin listener (server.admin.console.enabled) and grant its scopes to anonymous loopback callers")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// The signals are caught before anything is built: a SIGHUP's default action ends the
	// process (exit 129), so it is caught from the process's start (package hangup), and
	// one sent while the server starts is a reload asked for — it waits in hangup.C and
	// runs once the server is up. SIGTERM in that time stops it cleanly.
	defer hangup.Stop()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := loadConfig(*file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	overrides := server.ListenOverrides{BoundaryAddr: *boundary, AdminAddr: *admin, InternalAddr: *internal, Pprof: *pprofOn, Console: *consoleOn}
	overrides.Apply(cfg)

	level := new(slog.LevelVar)
	logger, err := observability.NewLogger(cfg.Log, stderr, level)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if t := gcfloor.Start(cfg.GCHeapFloor()); t != nil {
		defer t.Stop()
	}
	srv, err := server.New(cfg, server.Options{Logger: logger, LogLevel: level, Overrides: overrides})
	if err != nil {
		logger.Error("starting", "err", err)
		return 1
	}

	go reloadOnHangup(ctx, srv, *file, hangup.C, logger)
	if *file != "" {
		srv.MarkLoaded(*file)
		if cfg.WatchEnabled() {
			go func() {
				if err := srv.Watch(ctx, *file); err != nil {
					logger.Warn("not watching the configuration file", "err", err)
				}
			}()
		}
	}
	if err := srv.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("server stopped with an error", "err", err)
		return 1
	}
	return 0
}

// stdio serves the gateway's MCP face to the process that spawned it, over stdin and
// stdout, until stdin ends or a signal; logs go to stderr, since stdout carries the protocol.
func stdio(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("config", "", "configuration file (default: the embedded configuration)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := loadConfig(*file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	level := new(slog.LevelVar)
	logger, err := observability.NewLogger(cfg.Log, stderr, level)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// An agent that goes away closes stdout and stderr too: writing to them must fail with
	// an error, not end the process with SIGPIPE before it has stopped its children.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := server.ServeStdio(ctx, cfg, server.Options{Logger: logger, LogLevel: level}, stdin, stdout); err != nil {
		logger.Error("stdio server stopped with an error", "err", err)
		return 1
	}
	return 0
}

// demoGRPC serves the demo calculator backend until SIGTERM or Ctrl-C.
func demoGRPC(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo-grpc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:50061", "address to serve calculator.v1 on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stderr, "calculator.v1 serving on %s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := demo.ServeCalculator(ctx, ln); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// demoMCP serves the demo MCP server over stdin and stdout until stdin ends or a signal.
func demoMCP(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	startDelay := fs.Duration("start-delay", 0, "wait this long before answering anything, like a server that is slow to start (npm servers take about a second)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	select {
	case <-ctx.Done():
		return 0
	case <-time.After(*startDelay):
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if err := demo.NewMCP(demo.MCPOptions{Logger: logger}).ServeStdio(ctx, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// selfEnv names the variable holding this binary's path, so a configuration can start the
// binary's own demo servers (`command: ${GATEHOUSE_BIN}`, args [demo-mcp]) wherever it lives.
const selfEnv = "GATEHOUSE_BIN"

func loadConfig(file string) (*server.Config, error) {
	if os.Getenv(selfEnv) == "" {
		if exe, err := os.Executable(); err == nil {
			_ = os.Setenv(selfEnv, exe)
		}
	}
	if file == "" {
		return server.Default()
	}
	return server.Load(file)
}

// reloadOnHangup reloads the configuration file on every SIGHUP received on hup; without
// a file (the embedded configuration) there is nothing to reload, and the signal is only
// logged.
func reloadOnHangup(ctx context.Context, srv *server.Server, file string, hup <-chan os.Signal, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if file == "" {
				log.Info("SIGHUP: no configuration file to reload (serving the embedded configuration)")
				continue
			}
			_ = srv.ReloadFile(file)
		}
	}
}
