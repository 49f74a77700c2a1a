package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// cardTarget stands for the NEKTE target: it serves nekte.discover and provides the card.
type cardTarget struct{ fail bool }

func (cardTarget) Name() string { return "nekte" }

func (cardTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return gateway.NewResult([]byte(`{"agent":"gatehouse","caps":[]}`)), nil
}

func (c cardTarget) AgentCard(endpoint string) ([]byte, error) {
	if c.fail {
		return nil, errors.New("catalog unavailable")
	}
	return json.Marshal(nekte.AgentCard{Nekte: nekte.ProtocolVersion, Agent: "gatehouse", Endpoint: endpoint,
		Caps: []string{"echo"}, Auth: nekte.AuthNone, BudgetSupport: true})
}

var _ agentCardProvider = cardTarget{}

// noAnonymous is baseConfig without anonymous access: /rpc asks for a credential.
var noAnonymous = strings.Replace(baseConfig, "auth:\n  anonymous: {}\n", "", 1)

// getCard fetches path from the boundary with an optional Host.
func getCard(t *testing.T, ts *testServer, path, host string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode, resp.Header, readAll(t, resp)
}

func TestAgentCard(t *testing.T) {
	paths := []string{"/.well-known/nekte.json", "/rpc/.well-known/nekte.json"}
	t.Run("served at both paths without a credential", func(t *testing.T) {
		ts := start(t, noAnonymous, map[string]gateway.Target{nekte.MethodDiscover: cardTarget{}})
		host := strings.TrimPrefix(ts.base, "http://")
		for _, p := range paths {
			status, hdr, body := getCard(t, ts, p, "")
			want := `{"nekte":"` + nekte.ProtocolVersion + `","agent":"gatehouse","endpoint":"http://` + host +
				`/rpc","caps":["echo"],"auth":"none","budget_support":true}`
			if status != http.StatusOK || body != want || hdr.Get("Content-Type") != "application/json" {
				t.Fatalf("%s: %d %s %q\nwant %s", p, status, hdr.Get("Content-Type"), body, want)
			}
		}
		// The endpoint is the one the caller addressed.
		if _, _, body := getCard(t, ts, paths[1], "agents.example.com"); !strings.Contains(body, `"endpoint":"http://agents.example.com/rpc"`) {
			t.Fatalf("with Host agents.example.com: %s", body)
		}
		// /rpc itself still asks for one.
		if status, _, _ := ts.post(`{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":0},"id":1}`); status != http.StatusUnauthorized {
			t.Fatalf("/rpc without a credential: %d", status)
		}
	})
	t.Run("404 without NEKTE", func(t *testing.T) {
		ts := start(t, baseConfig, nil)
		for _, p := range paths {
			status, hdr, body := getCard(t, ts, p, "")
			r := decodeOne(t, body)
			if status != http.StatusNotFound || hdr.Get("Content-Type") != "application/json" || r.Error == nil ||
				r.Error.Code != -32600 || r.Error.Message != "NEKTE is not enabled" {
				t.Fatalf("%s: %d %s", p, status, body)
			}
		}
	})
	t.Run("a provider that fails", func(t *testing.T) {
		ts := start(t, baseConfig, map[string]gateway.Target{nekte.MethodDiscover: cardTarget{fail: true}})
		status, _, body := getCard(t, ts, paths[0], "")
		if r := decodeOne(t, body); status != http.StatusInternalServerError || r.Error == nil || r.Error.Code != -32603 ||
			strings.Contains(body, "catalog unavailable") {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("only GET", func(t *testing.T) {
		ts := start(t, baseConfig, map[string]gateway.Target{nekte.MethodDiscover: cardTarget{}})
		req, _ := http.NewRequest(http.MethodPost, ts.base+paths[0], strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("POST %s: %d", paths[0], resp.StatusCode)
		}
	})
}
