package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	benchechov1 "github.com/gatehouse-dev/gatehouse/bench/peers/gen/benchecho/v1"
	calculatorgw "github.com/gatehouse-dev/gatehouse/bench/peers/gen/calculatorgw/calculator/v1"
	"github.com/gatehouse-dev/gatehouse/demo"
	calculatorv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/calculator/v1"
)

// echoServer implements benchecho.v1.EchoService.
type echoServer struct {
	benchechov1.UnimplementedEchoServiceServer
}

func (echoServer) Echo(_ context.Context, r *benchechov1.EchoRequest) (*benchechov1.EchoResponse, error) {
	return &benchechov1.EchoResponse{Doc: r.GetDoc()}, nil
}

// signalContext is done on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// runBackend serves the demo calculator (with health and reflection) and the echo service on
// one gRPC listener.
func runBackend(args []string) error {
	fs := flag.NewFlagSet("backend", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof's /debug/pprof/ on this address (empty: off)")
	_ = fs.Parse(args)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	gs := demo.NewCalculatorServer()
	benchechov1.RegisterEchoServiceServer(gs, echoServer{})
	ctx, stop := signalContext()
	defer stop()
	servePprof(ctx, *pprofAddr)
	go func() { <-ctx.Done(); gs.Stop() }()
	if err := gs.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// runGRPCGateway serves grpc-gateway v2's reverse proxy for the calculator and the echo
// service, every method unbound (POST /<service>/<method>, the body is the request message).
func runGRPCGateway(args []string) error {
	fs := flag.NewFlagSet("grpcgw", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	backend := fs.String("backend", "", "gRPC backend address")
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof's /debug/pprof/ on this address (empty: off)")
	_ = fs.Parse(args)
	ctx, stop := signalContext()
	defer stop()
	servePprof(ctx, *pprofAddr)
	mux := runtime.NewServeMux()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if err := calculatorgw.RegisterCalculatorServiceHandlerFromEndpoint(ctx, mux, *backend, opts); err != nil {
		return err
	}
	if err := benchechov1.RegisterEchoServiceHandlerFromEndpoint(ctx, mux, *backend, opts); err != nil {
		return err
	}
	return serveHTTP(ctx, *addr, mux)
}

// runFloor serves the least a JSON-RPC→gRPC front made of net/http and grpc-go can do per
// small call, as the floor the fronts are measured against: net/http serves the request, the
// handler reads the body and compares it with the one call it answers (no JSON parsing), makes
// the Subtract RPC with the generated client (one HTTP/2 connection, no deadline, no metadata
// of its own) and writes the JSON-RPC answer with strconv. It is not a gateway: anything a
// front must add to this (decoding, policy, deadlines, metrics) is the front's own cost.
func runFloor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	backend := fs.String("backend", "", "gRPC backend address")
	body := fs.String("body", "", "the one request body answered")
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof's /debug/pprof/ on this address (empty: off)")
	_ = fs.Parse(args)
	ctx, stop := signalContext()
	defer stop()
	servePprof(ctx, *pprofAddr)
	conn, err := grpc.NewClient(*backend, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	calc := calculatorv1.NewCalculatorServiceClient(conn)
	want := []byte(*body)
	req := &calculatorv1.SubtractRequest{Minuend: 42, Subtrahend: 23}
	return serveHTTP(ctx, *addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || !bytes.Equal(b, want) {
			http.Error(w, "not the request this floor answers", http.StatusBadRequest)
			return
		}
		resp, err := calc.Subtract(r.Context(), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out := strconv.AppendFloat([]byte(`{"jsonrpc":"2.0","result":`), resp.GetResult(), 'g', -1, 64)
		out = append(out, `,"id":1}`...)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
}

// runMCPUpstream serves an MCP server with one tool, echo {text}, over streamable HTTP at /mcp
// (mcp-go, stateful sessions: what a typical MCP server does).
func runMCPUpstream(args []string) error {
	fs := flag.NewFlagSet("mcpup", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof's /debug/pprof/ on this address (empty: off)")
	wireLog := fs.Bool("wire-log", false, "count the HTTP requests the server receives by method, MCP method, protocol "+
		"version and answer type, log the first requests of each kind whole, and print the counts when it exits")
	_ = fs.Parse(args)
	ctx, stop := signalContext()
	defer stop()
	servePprof(ctx, *pprofAddr)
	s := server.NewMCPServer("bench-upstream", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Returns its text."),
		mcp.WithString("text", mcp.Required(), mcp.Description("The text to return."))),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, err := req.RequireString("text")
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText(text), nil
		})
	mux := http.NewServeMux()
	var h http.Handler = server.NewStreamableHTTPServer(s, server.WithStateful(true))
	if *wireLog {
		wl := newWireLog(h, os.Stdout)
		defer wl.report()
		h = wl
	}
	mux.Handle("/mcp", h)
	return serveHTTP(ctx, *addr, mux)
}

func serveHTTP(ctx context.Context, addr string, h http.Handler) error {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving %s: %w", addr, err)
	}
	return nil
}

// servePprof serves net/http/pprof's index and CPU profile on addr until ctx ends; an empty
// addr serves nothing.
func servePprof(ctx context.Context, addr string) {
	if addr == "" {
		return
	}
	pm := http.NewServeMux()
	pm.HandleFunc("/debug/pprof/", pprof.Index)
	pm.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go func() { _ = serveHTTP(ctx, addr, pm) }()
}
