package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/cmd/gatehouse/internal/client"
)

// The environment variables the client commands read (their flags win).
const (
	envURL      = "GATEHOUSE_URL"
	envAdminURL = "GATEHOUSE_ADMIN_URL"
	envToken    = "GATEHOUSE_TOKEN"
	envAPIKey   = "GATEHOUSE_API_KEY" //nolint:gosec // the name of a variable, not a credential
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	url, token, apiKey string
	timeout            time.Duration
	tty                string
	noColor            bool
	json               bool
}

// clientEnv is the process's environment as the client commands read it (tests replace it).
var clientEnv = os.Getenv

// clientStdin is what params "-" read (tests replace it).
var clientStdin io.Reader = os.Stdin

func envOr(name, def string) string {
	if v := clientEnv(name); v != "" {
		return v
	}
	return def
}

// register adds the flags to fs; admin commands address the admin listener.
func (cf *clientFlags) register(fs *flag.FlagSet, admin bool, timeout time.Duration) {
	if admin {
		fs.StringVar(&cf.url, "admin-url", envOr(envAdminURL, client.DefaultAdminURL), "the gateway's admin listener ($"+envAdminURL+")")
	} else {
		fs.StringVar(&cf.url, "url", envOr(envURL, client.DefaultURL), "the gateway's boundary ($"+envURL+")")
	}
	fs.StringVar(&cf.token, "token", clientEnv(envToken), "bearer token, a JWT or API key ($"+envToken+")")
	fs.StringVar(&cf.apiKey, "api-key", clientEnv(envAPIKey), "API key sent as X-API-Key ($"+envAPIKey+")")
	fs.DurationVar(&cf.timeout, "timeout", timeout, "give up after this long (0: never); also the call's deadline")
	fs.StringVar(&cf.tty, "tty", "auto", "output as on a terminal: auto (look at stdout), always, never")
	fs.BoolVar(&cf.noColor, "no-color", clientEnv("NO_COLOR") != "", "no colour on a terminal ($NO_COLOR)")
}

// clientCmd is what a client command needs once its flags are read.
type clientCmd struct {
	flags  clientFlags
	client *client.Client
	out    *client.Output
}

// setup reads args into fs and returns the command's positional arguments.
func (cc *clientCmd) setup(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) ([]string, error) {
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, errHelp
	}
	if err != nil {
		return nil, &client.UsageError{Msg: err.Error(), Shown: true}
	}
	if cc.out, err = client.NewOutput(stdout, stderr, client.Mode(cc.flags.tty), cc.flags.noColor); err != nil {
		return nil, err
	}
	cc.client, err = client.New(client.Options{URL: cc.flags.url, Token: cc.flags.token, APIKey: cc.flags.apiKey, Timeout: cc.flags.timeout})
	return pos, err
}

// parseInterleaved parses fs's flags wherever they stand among the positional arguments
// (`gatehouse call sum [1,2] --ws`); after "--" everything is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// interruptible returns a context ended by Ctrl-C or SIGTERM; a second signal ends the
// process as usual.
func interruptible() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

// errHelp ends a command asked for -h: its flags were printed.
var errHelp = errors.New("help")

// finish prints err (if any) and returns the command's exit code.
func finish(out *client.Output, stderr io.Writer, err error) int {
	if err == nil || errors.Is(err, errHelp) {
		return client.ExitOK
	}
	if ue, ok := errors.AsType[*client.UsageError](err); ok && ue.Shown {
		return client.ExitUsage
	}
	if out == nil {
		fmt.Fprintln(stderr, "gatehouse:", err)
	} else if !errors.Is(err, client.ErrInterrupted) {
		out.Error(err)
	}
	return client.ExitCode(err)
}

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }

func readStdin() ([]byte, error) { return io.ReadAll(clientStdin) }

// callCmd is `gatehouse call METHOD [params|@file|-]` and `gatehouse call --batch FILE`.
func callCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cc clientCmd
	cc.flags.register(fs, false, 30*time.Second)
	ws := fs.Bool("ws", false, "call over WebSocket (GET /ws) instead of HTTP (POST /rpc)")
	batch := fs.String("batch", "", "send the requests of FILE (a JSON array, or one request object per line; - for stdin) as one batch")
	pos, err := cc.setup(fs, args, stdout, stderr)
	if err != nil {
		return finish(cc.out, stderr, err)
	}
	ctx, stop := interruptible()
	defer stop()
	if *batch != "" {
		if len(pos) != 0 {
			return finish(cc.out, stderr, client.Usagef("call --batch takes no METHOD or params"))
		}
		return callBatch(ctx, &cc, *batch, *ws)
	}
	if len(pos) < 1 || len(pos) > 2 {
		return finish(cc.out, stderr, client.Usagef("usage: gatehouse call METHOD [params-json|@file|-] [flags]"))
	}
	var raw string
	if len(pos) == 2 {
		raw = pos[1]
	}
	params, err := client.Params(raw, readFile, readStdin)
	if err != nil {
		return finish(cc.out, stderr, err)
	}
	var res json.RawMessage
	if *ws {
		res, err = cc.client.CallWS(ctx, pos[0], params)
	} else {
		res, err = cc.client.Call(ctx, pos[0], params)
	}
	if err == nil || len(res) > 0 {
		if perr := cc.out.JSON(res); perr != nil && err == nil {
			err = perr
		}
	}
	return finish(cc.out, stderr, interrupted(ctx, err))
}

// interrupted turns the error of a call cut short by Ctrl-C into ErrInterrupted.
func interrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return client.ErrInterrupted
	}
	return err
}

func callBatch(ctx context.Context, cc *clientCmd, file string, ws bool) int {
	var data []byte
	var err error
	if file == "-" {
		data, err = readStdin()
	} else {
		data, err = readFile(file)
	}
	if err != nil {
		return finish(cc.out, nil, client.Usagef("batch: %v", err))
	}
	members, withID, err := client.ParseBatch(data)
	if err != nil {
		return finish(cc.out, nil, err)
	}
	var rs []client.Response
	if ws {
		rs, err = cc.client.BatchWS(ctx, members, withID)
	} else {
		rs, err = cc.client.Batch(ctx, members)
	}
	if err != nil {
		return finish(cc.out, nil, interrupted(ctx, err))
	}
	if rs == nil {
		rs = []client.Response{}
	}
	if err := cc.out.Value(rs); err != nil {
		return finish(cc.out, nil, err)
	}
	// The exit code is the first failed member's (in the order of the answer).
	for _, r := range rs {
		if r.Error != nil {
			return client.ExitCode(r.Error)
		}
	}
	return client.ExitOK
}

// discoverCmd is `gatehouse discover [--level N] [--query Q]`.
func discoverCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("discover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cc clientCmd
	cc.flags.register(fs, false, 30*time.Second)
	fs.BoolVar(&cc.flags.json, "json", false, "print the result as JSON, even on a terminal")
	level := fs.Int("level", 1, "detail: 0 ids and hashes, 1 descriptions, 2 input and output schemas")
	query := fs.String("query", "", "search ids and descriptions (best first)")
	category := fs.String("category", "", "only this category")
	topK := fs.Int("top-k", 0, "at most this many results of a query (0: the gateway's default)")
	pos, err := cc.setup(fs, args, stdout, stderr)
	if err != nil {
		return finish(cc.out, stderr, err)
	}
	if len(pos) > 0 {
		return finish(cc.out, stderr, client.Usagef("discover takes no arguments, only flags (got %q)", pos[0]))
	}
	params, err := client.DiscoverParams(*level, *query, *category, *topK)
	if err != nil {
		return finish(cc.out, stderr, err)
	}
	ctx, stop := interruptible()
	defer stop()
	res, err := cc.client.Call(ctx, "nekte.discover", params)
	if err == nil {
		if cc.out.TTY && !cc.flags.json {
			err = cc.out.DiscoverTable(res, *level)
		} else {
			err = cc.out.JSON(res)
		}
	}
	return finish(cc.out, stderr, interrupted(ctx, err))
}

// delegateCmd is `gatehouse delegate CAP --in JSON|@file|-`.
func delegateCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("delegate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cc clientCmd
	cc.flags.register(fs, false, 0)
	in := fs.String("in", "", "the capability's input: JSON, @file or - (default {})")
	id := fs.String("id", "", "the task's id (default: cli- and 12 random hex digits)")
	desc := fs.String("desc", "", "the task's description (default: the capability)")
	maxTokens := fs.Int("max-tokens", 4096, "the budget's max_tokens")
	detail := fs.String("detail", "full", "the budget's detail_level: minimal, compact or full")
	pos, err := cc.setup(fs, args, stdout, stderr)
	if err != nil {
		return finish(cc.out, stderr, err)
	}
	if len(pos) != 1 {
		return finish(cc.out, stderr, client.Usagef("usage: gatehouse delegate CAP [--in JSON|@file|-] [flags]"))
	}
	input, err := client.Params(*in, readFile, readStdin)
	if err != nil {
		return finish(cc.out, stderr, err)
	}
	task := &client.Task{ID: *id, Cap: pos[0], Desc: *desc, In: input, MaxTokens: *maxTokens, Detail: *detail,
		TimeoutMS: cc.flags.timeout.Milliseconds()}
	if task.ID == "" {
		task.ID = client.NewTaskID()
	}
	// --timeout is the task's running time, not a bound on the stream: the client follows
	// the task as long as it runs.
	ctx, stop := interruptible()
	defer stop()
	noTimeout, _ := client.New(client.Options{URL: cc.flags.url, Token: cc.flags.token, APIKey: cc.flags.apiKey})
	return finish(cc.out, stderr, noTimeout.Delegate(ctx, task, cc.out.NewRenderer(task.ID)))
}

// chatCmd is `gatehouse chat ROUTE MESSAGE`.
func chatCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cc clientCmd
	cc.flags.register(fs, false, 0)
	session := fs.String("session", "", "the session id, to keep a conversation's queue (default: a new one)")
	options := fs.String("options", "", "chat.start's options: JSON, @file or -")
	events := fs.Bool("events", false, "print every session envelope as a JSON line instead of the text")
	pos, err := cc.setup(fs, args, stdout, stderr)
	if err != nil {
		return finish(cc.out, stderr, err)
	}
	if len(pos) < 2 {
		return finish(cc.out, stderr, client.Usagef("usage: gatehouse chat ROUTE MESSAGE... [flags]"))
	}
	opts, err := client.Params(*options, readFile, readStdin)
	if err != nil {
		return finish(cc.out, stderr, err)
	}
	ctx, stop := interruptible()
	defer stop()
	if cc.flags.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cc.flags.timeout)
		defer cancel()
	}
	err = cc.client.Chat(ctx, client.Chat{Route: pos[0], Message: strings.Join(pos[1:], " "), SessionID: *session,
		Options: opts, Events: *events}, cc.out)
	if errors.Is(err, client.ErrInterrupted) && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		err = context.DeadlineExceeded
	}
	return finish(cc.out, stderr, err)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
