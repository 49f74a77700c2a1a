package soak

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options configure a run.
type Options struct {
	Duration time.Duration
	// Dir holds the processes' logs, the configuration and the report.
	Dir string
	// Repo is the repository's root; Bin the gatehouse binary.
	Repo, Bin string
	// Load is the share of the measured capacity the traffic runs at (0.7).
	Load float64
	// Budget is every call's deadline; Bound how long past it a call may take to end before
	// it counts as hung.
	Budget, Bound time.Duration
	// Tolerance is the flatness criterion (0.05 = ±5%).
	Tolerance float64
	// Docs writes the plots to docs/img under Repo.
	Docs bool
	Log  io.Writer
}

// Event is one chaos event as it happened.
type Event struct {
	Name   string
	At     time.Time
	Took   time.Duration
	Err    error
	Window Window
}

// Report is what a run found.
type Report struct {
	Start, WarmEnd, End time.Time
	Capacity, Rate      float64
	Sent, Shed          int64
	Results             []Result
	Outcomes            []Outcome
	Events              []Event
	// Series per replica and resource ("rss_kb", "open_files", "goroutines"), and Redis.
	Series  map[string]map[int][]Sample
	Redis   []Sample
	Failed  []string
	options Options
}

// Run starts the platform, measures, drives the traffic with the chaos schedule, and
// judges the run. The error is a failure to run at all; Report.Failed lists the criteria a
// run that completed did not meet.
func Run(ctx context.Context, o Options) (*Report, error) {
	logf := func(format string, args ...any) {
		fmt.Fprintf(o.Log, "%s soak: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	logf("starting Redis, the gRPC backend, %d replicas and the agent in %s", Replicas, o.Dir)
	p, err := Start(ctx, o.Dir, o.Repo, o.Bin)
	defer func() {
		if p != nil {
			p.Stop()
		}
	}()
	if err != nil {
		return nil, err
	}
	c := newCaller(p, o.Budget, o.Bound)
	defer c.close()

	// Warm-up: every face answers on every replica (the agent registered, the pools filled).
	logf("waiting for every face to answer on every replica")
	if err := c.warm(ctx, 90*time.Second); err != nil {
		return nil, err
	}

	rep := &Report{options: o, Series: map[string]map[int][]Sample{}}
	c.capacity(ctx, 8, 5*time.Second) // unmeasured: the state the traffic keeps builds up
	capacity := c.capacity(ctx, 8, 15*time.Second)
	rep.Capacity = capacity
	rep.Rate = capacity * o.Load
	logf("capacity %.0f calls/s (closed loop, 8 workers, the mix); driving %.0f calls/s open loop for %v", capacity, rep.Rate, o.Duration)
	if rep.Rate < 1 {
		return nil, errors.New("measured capacity below 1 call/s")
	}

	rep.Start = time.Now()
	warm := max(o.Duration/5, 20*time.Second)
	rep.WarmEnd = rep.Start.Add(warm)
	rep.End = rep.Start.Add(o.Duration)
	runCtx, stop := context.WithDeadline(ctx, rep.End)
	defer stop()

	var wg sync.WaitGroup
	var mu sync.Mutex
	// The sampler.
	every := o.Duration / 300
	every = min(max(every, time.Second), 5*time.Second)
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			p.sample(rep, &mu)
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
		}
	})
	// The chaos schedule, spread over the run between warm-up and its last quarter, which
	// stays quiet: the steady state after every event is judged too.
	wg.Go(func() {
		rep.Events = p.chaos(runCtx, rep.WarmEnd, rep.End.Add(-o.Duration/4), logf)
	})
	// The open-loop traffic.
	var results []Result
	var rmu sync.Mutex
	var inflight atomic.Int64
	var calls sync.WaitGroup
	maxInflight := int64(4000)
	interval := time.Duration(float64(time.Second) / rep.Rate)
	next := time.Now()
	var seq int64
	for runCtx.Err() == nil {
		now := time.Now()
		if now.Before(next) {
			time.Sleep(next.Sub(now))
			continue
		}
		next = next.Add(interval)
		seq++
		if inflight.Load() >= maxInflight {
			rep.Shed++
			continue
		}
		face := Faces[int(seq)%len(Faces)]
		replica := int(seq/int64(len(Faces))) % Replicas
		inflight.Add(1)
		calls.Add(1)
		rep.Sent++
		go func(seq int64) {
			defer calls.Done()
			defer inflight.Add(-1)
			r := c.call(face, replica, seq)
			rmu.Lock()
			results = append(results, r)
			rmu.Unlock()
		}(seq)
	}
	logf("traffic stopped after %d calls; waiting for the ones in flight", rep.Sent)
	calls.Wait() // every call ends by its budget + bound (its context)
	wg.Wait()
	rep.Results = results
	rep.judge()
	if err := rep.write(); err != nil {
		return rep, err
	}
	return rep, nil
}

// warm calls every face on every replica until each has answered ok once.
func (c *caller) warm(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for i := range Replicas {
		for _, f := range Faces {
			var last Result
			for seq := int64(100); ; seq++ {
				last = c.call(f, i, seq*10) // seq*10: never the victim token
				if Classify(last, nil, c.bound) == OK {
					break
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					return fmt.Errorf("%s on replica %d never answered ok: code %d %s %s", f, i, last.Code, last.Name, last.why())
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	return nil
}

// capacity runs the mix closed-loop with workers for d and returns the ok calls per second.
func (c *caller) capacity(ctx context.Context, workers int, d time.Duration) float64 {
	var ok atomic.Int64
	var seq atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				n := seq.Add(1) * 10 // never the victim token
				r := c.call(Faces[int(n/10)%len(Faces)], int(n/10/int64(len(Faces)))%Replicas, n)
				if Classify(r, nil, c.bound) == OK {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(ok.Load()) / d.Seconds()
}

// sample reads every replica's RSS, open files and goroutines, and Redis's memory.
func (p *Platform) sample(rep *Report, mu *sync.Mutex) {
	now := time.Now()
	mu.Lock()
	defer mu.Unlock()
	add := func(kind string, i int, v float64) {
		if rep.Series[kind] == nil {
			rep.Series[kind] = map[int][]Sample{}
		}
		rep.Series[kind][i] = append(rep.Series[kind][i], Sample{At: now, Value: v})
	}
	for i, r := range p.replicas {
		pid := r.pid()
		if pid == 0 {
			continue
		}
		if v, err := rssKB(pid); err == nil {
			add(kindRSS, i, v)
		}
		// Established sockets counted apart, each against a bound rather than for flatness:
		// the state store's pooled connections (they stay at their high-water mark for
		// go-redis's idle time, 30 min, which a burst of calls retried after a Redis restart
		// raises) and the clients' connections to the replica's listeners (as many as the
		// load's in-flight calls have needed lately: its pool opens and closes them). A socket
		// whose peer went away and which the replica has not closed is not established and so
		// stays in open_files: one left open is a leak there.
		clients := -1.0
		if socks, err := sockets(pid); err == nil {
			var redis, served float64
			for _, s := range socks {
				switch {
				case !s.established: // closing (a peer that went away): a leak if it stays
				case s.remote == p.redisPort():
					redis++
				case r.listens(s.local):
					served++
				}
			}
			add(kindRedisConns, i, redis)
			add(kindClientConns, i, served)
			if v, err := openFiles(pid); err == nil {
				add("open_files", i, v-redis-served)
			}
			clients = served
		}
		// net/http serves each connection on a goroutine of its own, so the goroutines are
		// judged less one per client connection.
		if v, err := goroutines(r.admin); err == nil && clients >= 0 {
			add("goroutines", i, v-clients)
		}
	}
	if v, err := redisUsedMemory(p.Redis); err == nil {
		rep.Redis = append(rep.Redis, Sample{At: now, Value: v})
	}
}

// goroutines reads go_goroutines from a replica's /metrics.
func goroutines(admin string) (float64, error) {
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Get("http://" + admin + "/metrics")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, errors.New("no go_goroutines in /metrics")
}

// Chaos event names, in the order of the schedule.
const (
	EvRotate  = "rotate signing keys"
	EvBackend = "kill -9 + restart gRPC backend"
	EvMCP     = "kill -9 MCP child of replica 1"
	EvReload  = "SIGHUP reload of replica 1"
	EvAgent   = "kill -9 + restart agent"
	EvRedis   = "restart Redis"
	EvReplica = "kill -9 + restart replica 2"
	EvRevoke  = "revoke the victim token"
)

// killedReplica is the replica the schedule kills and restarts.
const killedReplica = 2

// settle is how long after an event's recovery its window lasts.
const settle = 10 * time.Second

// chaos runs the schedule: the events evenly spread between from and to.
func (p *Platform) chaos(ctx context.Context, from, to time.Time, logf func(string, ...any)) []Event {
	names := []string{EvRotate, EvBackend, EvMCP, EvReload, EvAgent, EvRedis, EvReplica, EvRevoke}
	step := to.Sub(from) / time.Duration(len(names))
	var out []Event
	for k, name := range names {
		at := from.Add(step*time.Duration(k) + step/2)
		select {
		case <-ctx.Done():
			return out
		case <-time.After(time.Until(at)):
		}
		e := Event{Name: name, At: time.Now()}
		e.Window = Window{Event: name, Start: e.At, Down: -1}
		e.Err = p.event(ctx, name, &e.Window)
		e.Took = time.Since(e.At)
		e.Window.End = time.Now().Add(settle)
		if e.Err != nil {
			logf("chaos %d %s: FAILED after %v: %v", k+1, name, e.Took.Round(time.Millisecond), e.Err)
		} else {
			logf("chaos %d %s: done in %v", k+1, name, e.Took.Round(time.Millisecond))
		}
		out = append(out, e)
	}
	return out
}

func (p *Platform) event(ctx context.Context, name string, w *Window) error {
	switch name {
	case EvRotate:
		_, err := p.adminCall(p.replicas[0], "admin.keys.rotate", `{"reason":"soak"}`)
		return err
	case EvBackend:
		p.backend.kill()
		time.Sleep(2 * time.Second)
		if err := p.backend.start(); err != nil {
			return err
		}
		return waitTCP(p.Backend, 20*time.Second)
	case EvMCP:
		r := p.replicas[1]
		old := r.children()
		if len(old) == 0 {
			return errors.New("replica 1 has no child process")
		}
		for _, pid := range old {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// The replica must start another.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			for _, pid := range r.children() {
				if !slices.Contains(old, pid) {
					return nil
				}
			}
		}
		return fmt.Errorf("replica 1 started no new MCP child within 30s of killing %v", old)
	case EvReload:
		return p.replicas[1].signal(syscall.SIGHUP)
	case EvAgent:
		p.agent.kill()
		time.Sleep(2 * time.Second)
		return p.agent.start()
	case EvRedis:
		// SHUTDOWN SAVE writes the dump the restarted server reads back: a restart, not a loss.
		_, _ = redisCmd(p.Redis, "SHUTDOWN", "SAVE")
		select {
		case <-p.redis.exited:
		case <-time.After(20 * time.Second):
			p.redis.kill()
		}
		time.Sleep(time.Second)
		if err := p.redis.start(); err != nil {
			return err
		}
		return waitTCP(p.Redis, 20*time.Second)
	case EvReplica:
		r := p.replicas[killedReplica]
		w.Down = killedReplica
		r.kill()
		time.Sleep(2 * time.Second)
		if err := r.start(); err != nil {
			return err
		}
		return p.waitReady(ctx, r, 90*time.Second)
	case EvRevoke:
		_, err := p.adminCall(p.replicas[0], "admin.revocations.add", fmt.Sprintf(`{"jti":%q,"ttl":"6h","reason":"soak"}`, p.VictimJTI))
		return err
	}
	return fmt.Errorf("unknown event %q", name)
}

// judge classifies every call and checks the criteria.
func (rep *Report) judge() {
	var windows []Window
	for _, e := range rep.Events {
		windows = append(windows, e.Window)
	}
	rep.Outcomes = make([]Outcome, len(rep.Results))
	counts := map[Outcome]int{}
	for i, r := range rep.Results {
		rep.Outcomes[i] = Classify(r, windows, rep.options.Bound)
		counts[rep.Outcomes[i]]++
	}
	if n := counts[Unexpected]; n > 0 {
		rep.Failed = append(rep.Failed, fmt.Sprintf("%d unexpected outcomes", n))
	}
	if n := counts[Hung]; n > 0 {
		rep.Failed = append(rep.Failed, fmt.Sprintf("%d calls hung", n))
	}
	if counts[OK] == 0 {
		rep.Failed = append(rep.Failed, "no call succeeded")
	}
	for _, e := range rep.Events {
		if e.Err != nil {
			rep.Failed = append(rep.Failed, fmt.Sprintf("chaos event %q: %v", e.Name, e.Err))
		}
	}
	if len(rep.Events) < 8 {
		rep.Failed = append(rep.Failed, fmt.Sprintf("only %d of 8 chaos events ran", len(rep.Events)))
	}
	for _, kind := range seriesKinds {
		for i := range Replicas {
			if i == killedReplica {
				continue // restarted: its series starts again
			}
			f := Flat(Outside(rep.Series[kind][i], windows), rep.WarmEnd, rep.options.Tolerance, slackOf(kind))
			if !f.Flat {
				rep.Failed = append(rep.Failed, fmt.Sprintf("replica %d %s not flat: %s", i, kind, f.describe()))
			}
		}
	}
	for i := range Replicas {
		for _, smp := range rep.Series[kindRedisConns][i] {
			if smp.Value > redisConnBound {
				rep.Failed = append(rep.Failed, fmt.Sprintf("replica %d holds %.0f connections to Redis, past its pool of %d and %d subscriptions", i, smp.Value, redisPoolSize, redisSubscriptions))
				break
			}
		}
	}
	if f := Flat(Outside(rep.Redis, windows), rep.WarmEnd, rep.options.Tolerance, 0); !f.Flat {
		rep.Failed = append(rep.Failed, "Redis used_memory not flat: "+f.describe())
	}
}

// kindRSS is the series of resident memory (KiB).
const kindRSS = "rss_kb"

var seriesKinds = []string{kindRSS, "open_files", "goroutines"}

// kindRedisConns is the series of a replica's connections to Redis, judged against the
// pool size rather than for flatness; kindClientConns its clients' established connections
// to its listeners, reported. "open_files" counts the other descriptors, "goroutines" the
// goroutines less one per client connection.
const (
	kindRedisConns  = "redis_conns"
	kindClientConns = "client_conns"
)

// redisPoolSize is state.redis.pool_size in the soak's configuration; redisSubscriptions
// the bus subscriptions a replica holds at most, each on a connection of its own outside
// the pool (the key ring's and the revocation list's channels, and the MCP face's own once
// it relays a request another replica may answer). redisConnBound is their sum.
const (
	redisPoolSize      = 16
	redisSubscriptions = 3
	redisConnBound     = redisPoolSize + redisSubscriptions
)

// countSlack is the absolute change of a count (open files, goroutines) always allowed: at
// about 60 descriptors ±5% is three, which the load's pooled connections to a replica
// (opened and closed as the in-flight calls vary) move by themselves. A leak grows past it
// within minutes at the soak's rate.
const countSlack = 3

func slackOf(kind string) float64 {
	if kind == kindRSS {
		return 0
	}
	return countSlack
}

func (f Flatness) describe() string {
	if f.Why != "" {
		return f.Why
	}
	return fmt.Sprintf("%.0f → %.0f (%+.1f%%, %d samples)", f.First, f.Last, 100*f.Change, f.N)
}

// write writes report.md in Dir (and to the log) and the plots (to docs/img with Docs).
func (rep *Report) write() error {
	text := rep.Text()
	fmt.Fprint(rep.options.Log, text)
	if err := os.WriteFile(filepath.Join(rep.options.Dir, "report.md"), []byte(text), 0o600); err != nil {
		return err
	}
	var marks []Mark
	for _, e := range rep.Events {
		marks = append(marks, Mark{At: e.At, Label: e.Name})
	}
	plots := map[string]string{
		"soak-rss.svg":        SVG("RSS per replica over the soak (MiB)", "MiB", rep.Start, rep.series(kindRSS, 1.0/1024), marks),
		"soak-goroutines.svg": SVG("Goroutines per replica over the soak, less one per client connection", "goroutines", rep.Start, rep.series("goroutines", 1), marks),
	}
	for name, svg := range plots {
		if err := os.WriteFile(filepath.Join(rep.options.Dir, name), []byte(svg), 0o600); err != nil {
			return err
		}
		if rep.options.Docs {
			if err := os.WriteFile(filepath.Join(rep.options.Repo, "docs", "img", name), []byte(svg), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rep *Report) series(kind string, scale float64) []Series {
	var out []Series
	for i := range Replicas {
		s := Series{Name: fmt.Sprintf("replica %d", i)}
		if i == killedReplica {
			s.Name += " (restarted)"
		}
		for _, v := range rep.Series[kind][i] {
			s.Samples = append(s.Samples, Sample{At: v.At, Value: v.Value * scale})
		}
		out = append(out, s)
	}
	return out
}

// Text is the report in Markdown.
func (rep *Report) Text() string {
	var b strings.Builder
	o := rep.options
	fmt.Fprintf(&b, "\n# Soak report\n\n")
	fmt.Fprintf(&b, "- duration %v (warm-up %v), capacity %.0f calls/s, driven at %.0f calls/s (%.0f%%), open loop\n",
		o.Duration, rep.WarmEnd.Sub(rep.Start), rep.Capacity, rep.Rate, 100*o.Load)
	fmt.Fprintf(&b, "- calls sent %d, shed by the driver (over its in-flight cap) %d; budget %v, hung past budget + %v\n", rep.Sent, rep.Shed, o.Budget, o.Bound)
	if len(rep.Failed) == 0 {
		fmt.Fprintf(&b, "- verdict: PASS\n")
	} else {
		fmt.Fprintf(&b, "- verdict: FAIL\n")
		for _, f := range rep.Failed {
			fmt.Fprintf(&b, "  - %s\n", f)
		}
	}

	fmt.Fprintf(&b, "\n## Outcomes per face\n\n| face | calls | ok | typed | expected | unexpected | hung | p50 | p99 | typed codes |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range append(append([]string(nil), Faces...), "all") {
		var n int
		cnt := map[Outcome]int{}
		codes := map[string]int{}
		var lat []time.Duration
		for i, r := range rep.Results {
			if f != "all" && r.Face != f {
				continue
			}
			n++
			cnt[rep.Outcomes[i]]++
			if rep.Outcomes[i] == Typed {
				codes[r.label()]++
			}
			if rep.Outcomes[i] != Hung {
				lat = append(lat, r.Took)
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %v | %v | %s |\n", f, n, cnt[OK], cnt[Typed], cnt[Expected], cnt[Unexpected], cnt[Hung],
			Percentile(lat, 0.5).Round(10*time.Microsecond), Percentile(lat, 0.99).Round(10*time.Microsecond), codeList(codes))
	}

	fmt.Fprintf(&b, "\n## Chaos events and their windows\n\nEach window runs from the event to %v after the platform recovered; a call counts in every window it overlaps.\n\n", settle)
	fmt.Fprintf(&b, "| # | at | event | took | window | calls | ok | typed | expected | unexpected | hung | typed codes |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	steady := make([]bool, len(rep.Results))
	for i := range steady {
		steady[i] = true
	}
	for k, e := range rep.Events {
		cnt := map[Outcome]int{}
		codes := map[string]int{}
		var n int
		for i, r := range rep.Results {
			if !e.Window.Covers(r.Start, r.Took) {
				continue
			}
			steady[i] = false
			n++
			cnt[rep.Outcomes[i]]++
			if rep.Outcomes[i] == Typed {
				codes[r.label()]++
			}
		}
		status := "ok"
		if e.Err != nil {
			status = "FAILED: " + e.Err.Error()
		}
		fmt.Fprintf(&b, "| %d | +%v | %s (%s) | %v | %v | %d | %d | %d | %d | %d | %d | %s |\n", k+1, e.At.Sub(rep.Start).Round(time.Second), e.Name, status,
			e.Took.Round(time.Millisecond), e.Window.End.Sub(e.Window.Start).Round(time.Second), n, cnt[OK], cnt[Typed], cnt[Expected], cnt[Unexpected], cnt[Hung], codeList(codes))
	}
	cnt := map[Outcome]int{}
	codes := map[string]int{}
	var n int
	for i, r := range rep.Results {
		if steady[i] {
			n++
			cnt[rep.Outcomes[i]]++
			if rep.Outcomes[i] == Typed {
				codes[r.label()]++
			}
		}
	}
	fmt.Fprintf(&b, "| – | | outside every window | | | %d | %d | %d | %d | %d | %d | %s |\n", n, cnt[OK], cnt[Typed], cnt[Expected], cnt[Unexpected], cnt[Hung], codeList(codes))

	fmt.Fprintf(&b, "\n## Typed errors: one example per face and code\n\n")
	seen := map[string]bool{}
	for i, r := range rep.Results {
		k := r.Face + " " + r.label()
		if rep.Outcomes[i] != Typed || seen[k] {
			continue
		}
		seen[k] = true
		fmt.Fprintf(&b, "- %s: %s\n", k, strings.TrimSpace(r.Msg))
	}

	fmt.Fprintf(&b, "\n## Unexpected and hung calls (first 20)\n\n")
	shown := 0
	for i, r := range rep.Results {
		if (rep.Outcomes[i] == Unexpected || rep.Outcomes[i] == Hung) && shown < 20 {
			shown++
			fmt.Fprintf(&b, "- +%v %s replica %d took %v: %s\n", r.Start.Sub(rep.Start).Round(time.Millisecond), r.Face, r.Replica, r.Took.Round(time.Millisecond), r.why())
		}
	}
	if shown == 0 {
		fmt.Fprintf(&b, "none\n")
	}

	var windows []Window
	for _, e := range rep.Events {
		windows = append(windows, e.Window)
	}
	fmt.Fprintf(&b, "\n## Resources after warm-up, outside the chaos windows (median of the first third → median of the last third)\n\n| series | replica 0 | replica 1 | replica 2 |\n|---|---|---|---|\n")
	for _, kind := range seriesKinds {
		fmt.Fprintf(&b, "| %s |", kind)
		for i := range Replicas {
			f := Flat(Outside(rep.Series[kind][i], windows), rep.WarmEnd, o.Tolerance, slackOf(kind))
			note := ""
			if i == killedReplica {
				note = " (restarted: not judged)"
			}
			fmt.Fprintf(&b, " %s%s |", f.describe(), note)
		}
		fmt.Fprintf(&b, "\n")
	}
	fmt.Fprintf(&b, "| Redis used_memory | %s | | |\n", Flat(Outside(rep.Redis, windows), rep.WarmEnd, o.Tolerance, 0).describe())
	for _, row := range []struct{ kind, what string }{
		{kindRedisConns, fmt.Sprintf("at most %d: the pool and %d subscriptions", redisConnBound, redisSubscriptions)},
		{kindClientConns, "as many as the load's in-flight calls needed lately"},
	} {
		fmt.Fprintf(&b, "| %s (%s; not judged for flatness) |", row.kind, row.what)
		for i := range Replicas {
			most, when := 0.0, time.Time{}
			for _, smp := range rep.Series[row.kind][i] {
				if smp.Value > most {
					most, when = smp.Value, smp.At
				}
			}
			fmt.Fprintf(&b, " at most %.0f (+%v) |", most, when.Sub(rep.Start).Round(time.Second))
		}
		fmt.Fprintf(&b, "\n")
	}

	fmt.Fprintf(&b, "\n## Samples\n\n| t | ")
	for i := range Replicas {
		fmt.Fprintf(&b, "r%d RSS MiB | r%d fds (not sockets) | r%d goroutines (less clients) | ", i, i, i)
	}
	fmt.Fprintf(&b, "Redis MiB |\n|---|")
	for range Replicas*3 + 1 {
		fmt.Fprintf(&b, "---|")
	}
	fmt.Fprintf(&b, "\n")
	for j, s := range rep.Redis {
		fmt.Fprintf(&b, "| +%v | ", s.At.Sub(rep.Start).Round(time.Second))
		for i := range Replicas {
			for _, kind := range seriesKinds {
				v, ok := at(rep.Series[kind][i], s.At)
				switch {
				case !ok:
					fmt.Fprintf(&b, "– | ")
				case kind == kindRSS:
					fmt.Fprintf(&b, "%.1f | ", v/1024)
				default:
					fmt.Fprintf(&b, "%.0f | ", v)
				}
			}
		}
		fmt.Fprintf(&b, "%.2f |\n", rep.Redis[j].Value/(1<<20))
	}
	return b.String()
}

// at is the sample of s taken within a second of t.
func at(s []Sample, t time.Time) (float64, bool) {
	for _, v := range s {
		if d := v.At.Sub(t); d > -time.Second && d < time.Second {
			return v.Value, true
		}
	}
	return 0, false
}

func (r Result) label() string {
	switch {
	case r.Name != "" && r.Code != 0:
		return fmt.Sprintf("%s/%d", r.Name, r.Code)
	case r.Name != "":
		return r.Name
	}
	return strconv.Itoa(r.Code)
}

func (r Result) why() string {
	switch {
	case r.TimedOut:
		return "no end by budget + bound"
	case r.Wrong != "":
		return "wrong: " + r.Wrong
	case r.Transport != nil:
		return "transport: " + r.Transport.Error()
	}
	return "took past budget + bound"
}

func codeList(m map[string]int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
