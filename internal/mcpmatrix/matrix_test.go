package mcpmatrix_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

const (
	v2025 = mcp.ProtocolVersion20251125
	v2026 = mcp.ProtocolVersion20260728
)

// pendingCell names cells the gateway cannot pass yet; an empty field matches every
// value. A pending cell still runs and its outcome is reported, but its failure does not
// fail the test — and its success does, so that the table is kept honest: when the work
// lands, delete its line.
type pendingCell struct {
	clientVersion, server, step string
	why                         string
}

// pendingCells is the one table of cells pending work on other branches of issue #21.
var pendingCells = []pendingCell{}

// knownBugs are cells that fail because of a gateway bug not fixed yet. They are judged as
// pendingCells are, except that a pass does not fail the test: whether these fail depends on
// which replica a client's answer happens to reach. Delete the line with the fix.
var knownBugs = []pendingCell{}

// match returns the first entry of table matching a step of a cell.
func match(table []pendingCell, clientVersion, server, step string) (pendingCell, bool) {
	for _, p := range table {
		if (p.clientVersion == "" || p.clientVersion == clientVersion) && (p.server == "" || p.server == server) &&
			(p.step == "" || p.step == step) {
			return p, true
		}
	}
	return pendingCell{}, false
}

// stickySteps run a second time for 2025 callers, through one replica (stickySuffix in the
// summary).
var stickySteps = []string{stepSampling, stepElicitation}

const stickySuffix = "@1replica"

// clientKind is one client SDK at one protocol version.
type clientKind struct {
	label, name, version string
	run                  goClient
}

// cellResult is the outcome of every step of one cell, for the summary.
type cellResult struct {
	client, server string
	steps          map[string]string // "ok", "n/a", "pending", "FAIL"
}

// TestVersionMatrix runs every client against every server through two gateway replicas
// sharing a Redis, a client's requests alternating between them.
func TestVersionMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Node peers, Redis and two gateways")
	}
	tl := tools(t)

	nodeServers := startNode(t, tl, "servers.cjs")
	var tsURLs struct {
		TS25 string `json:"ts25"`
		TS26 string `json:"ts26"`
	}
	if err := jsonUnmarshal(nodeServers.first(t, 30*time.Second), &tsURLs); err != nil {
		t.Fatal(err)
	}
	mcpgo25, stop1 := mcpGoServer("mcpgo25")
	t.Cleanup(stop1)
	mcpgo26, stop2 := mcpGoServer("mcpgo26")
	t.Cleanup(stop2)
	gosdk25, stop3 := goSDKServer("gosdk25", []string{v2025}, false)
	t.Cleanup(stop3)
	gosdk26, stop4 := goSDKServer("gosdk26", []string{v2026}, true)
	t.Cleanup(stop4)
	upstreams := []upstream{
		{"ts25", tsURLs.TS25, v2025}, {"ts26", tsURLs.TS26, v2026},
		{"gosdk25", gosdk25, v2025}, {"gosdk26", gosdk26, v2026},
		{"mcpgo25", mcpgo25, v2025}, {"mcpgo26", mcpgo26, v2026},
	}
	replicas := startReplicas(t, 2, replicaConfig(upstreams))

	ts := newTSClients(t, startNode(t, tl, "clients.cjs"))
	clients := []clientKind{
		{"typescript-sdk 1.32.2 @2025-11-25", "ts25c", v2025, ts.run("ts25")},
		{"typescript-client 2.4.0 @2026-07-28", "ts26c", v2026, ts.run("ts26")},
		{"go-sdk v1.8.0 @2025-11-25", "gosdk25c", v2025, runGoSDK},
		{"go-sdk v1.8.0 @2026-07-28", "gosdk26c", v2026, runGoSDK},
		{"mcp-go v1.2.1 @2025-11-25", "mcpgo25c", v2025, runMCPGo},
		{"mcp-go v1.2.1 @2026-07-28", "mcpgo26c", v2026, runMCPGo},
	}

	var mu sync.Mutex
	var results []cellResult
	// Cells on one server run one after the other: the gateway shares an upstream session
	// between callers, and relays a server's request to a caller only when it is the
	// session's only caller at that moment. Servers run side by side (goroutines rather
	// than t.Parallel, which GOMAXPROCS would bound to two at a time).
	var wg sync.WaitGroup
	for _, u := range upstreams {
		wg.Go(func() {
			for _, c := range clients {
				t.Run(u.kind+"/"+c.name, func(t *testing.T) {
					r := runCell(t, replicas, c, u)
					mu.Lock()
					results = append(results, r)
					mu.Unlock()
				})
			}
		})
	}
	wg.Wait()
	t.Log("\n" + summary(clients, upstreams, results))
}

// runCell runs one client against one server through a fresh alternating proxy, and
// judges each step against pendingCells.
func runCell(t *testing.T, replicas []string, c clientKind, u upstream) cellResult {
	proxy := newAlternating(t, replicas)
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(allSteps)+len(stickySteps)+2)*stepTimeout)
	defer cancel()
	res := cellResult{client: c.label, server: u.kind, steps: map[string]string{}}
	outcomes, err := c.run(ctx, hc, proxy.URL+"/mcp", c.version, u.kind, c.name, allSteps)
	if err != nil {
		t.Errorf("%s → %s: connecting: %v", c.label, u.kind, err)
		for _, s := range allSteps {
			res.steps[s] = "FAIL"
		}
		return res
	}
	for _, step := range allSteps {
		err, ran := outcomes[step]
		pending, isPending := match(pendingCells, c.version, u.kind, step)
		bug, isBug := match(knownBugs, c.version, u.kind, step)
		switch {
		case !ran:
			t.Errorf("%s: not run", step)
			res.steps[step] = "FAIL"
		case errors.Is(err, errNoTaskAPI):
			res.steps[step] = "n/a"
		case isPending && err != nil:
			t.Logf("%s: pending (%s): %v", step, pending.why, err)
			res.steps[step] = "pending"
		case isPending:
			t.Errorf("%s passes now: delete its line from pendingCells (%s)", step, pending.why)
			res.steps[step] = "ok"
		case isBug && err != nil:
			t.Logf("%s: known bug (%s): %v", step, bug.why, err)
			res.steps[step] = "bug"
		case err != nil:
			t.Errorf("%s: %v", step, err)
			res.steps[step] = "FAIL"
		default:
			res.steps[step] = "ok"
		}
	}
	for i := range proxy.served {
		if proxy.served[i].Load() == 0 {
			t.Errorf("replica %d served none of the cell's requests", i)
		}
	}
	if c.version == v2025 {
		// The same round trips with the client held to one replica, as behind a balancer
		// with session affinity: these work today and must keep working.
		sticky := newSticky(t, replicas)
		outcomes, err := c.run(ctx, hc, sticky.URL+"/mcp", c.version, u.kind, c.name, stickySteps)
		for _, step := range stickySteps {
			key := step + stickySuffix
			switch {
			case err != nil:
				t.Errorf("%s: connecting: %v", key, err)
				res.steps[key] = "FAIL"
			case outcomes[step] != nil:
				t.Errorf("%s: %v", key, outcomes[step])
				res.steps[key] = "FAIL"
			default:
				res.steps[key] = "ok"
			}
		}
	}
	return res
}

// summary is the table of cells: a row per client, a column per server, each cell the
// steps that did not pass (✓: all passed; steps the client SDK cannot make are left out).
func summary(clients []clientKind, upstreams []upstream, results []cellResult) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprint(w, "client \\ server")
	for _, u := range upstreams {
		fmt.Fprintf(w, "\t%s (%s)", u.kind, u.version)
	}
	fmt.Fprintln(w)
	for _, c := range clients {
		fmt.Fprint(w, c.label)
		for _, u := range upstreams {
			i := slices.IndexFunc(results, func(r cellResult) bool { return r.client == c.label && r.server == u.kind })
			if i < 0 {
				fmt.Fprint(w, "\tnot run")
				continue
			}
			var notes []string
			for _, s := range slices.Concat(allSteps, []string{stepSampling + stickySuffix, stepElicitation + stickySuffix}) {
				if st, ran := results[i].steps[s]; ran && st != "ok" && st != "n/a" {
					notes = append(notes, s+":"+st)
				}
			}
			if len(notes) == 0 {
				notes = []string{"✓"}
			}
			fmt.Fprint(w, "\t"+strings.Join(notes, " "))
		}
		fmt.Fprintln(w)
	}
	_ = w.Flush()
	fmt.Fprintf(&b, "steps: %s, and for 2025 clients sampling and elicitation again through one replica (%s); "+
		"pending: pendingCells; bug: knownBugs; steps the client SDK has no API for are left out\n", strings.Join(allSteps, ", "), stickySuffix)
	return b.String()
}
