package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// agentToken mints a development token for an agent sub with scopes.
func agentToken(t *testing.T, sub, scopes string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"token", "--key", devKey, "--sub", sub, "--scope", scopes}, &stdout, &stderr); code != 0 {
		t.Fatalf("token: %s", stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// TestTrustedAgentProcess: a demo-agent process holding a JWT with agent:trusted hashes a
// caller's bytes, whole and by range, through plain URLs and its task token.
func TestTrustedAgentProcess(t *testing.T) {
	p := startProcess(t, dataRefConfig(t))
	startAgent(t, p.internal, "gpu-7", true, "--token", agentToken(t, "gpu-7", "agent:serve agent:trusted"))
	capsWith(t, p, "agent.sha256")
	data := []byte("the quick brown fox jumps over the lazy dog")
	ref := uploadBlob(t, p, blobToken(t, "blobs:write"), data)
	tests := []struct {
		name, params string
		want         []byte
	}{
		{"whole", `{"data_refs":[{"uri":%q}]}`, data},
		{"range", `{"data_refs":[{"uri":%q,"offset":4,"length":5}]}`, data[4:9]},
		{"offset to the end", `{"data_refs":[{"uri":%q,"offset":40}]}`, data[40:]},
	}
	for _, tt := range tests {
		r := p.rpcCall(t, "", "agent.sha256", fmt.Sprintf(tt.params, ref))
		want := fmt.Sprintf(`"sha256":%q`, hexSum(tt.want))
		if errorCode(r) != 0 || !strings.Contains(r.body, want) || !strings.Contains(r.body, `"bytes":`+strconv.Itoa(len(tt.want))) {
			t.Fatalf("%s: %s; want %s", tt.name, r.body, want)
		}
	}
}

// TestTrustedAgentTokenRefusals: a trusted agent's task gets plain URLs and a task token
// (in the DataRefs' headers) that reads its range and writes its output, and is refused
// without the token, for another key, range or method, and once expired.
func TestTrustedAgentTokenRefusals(t *testing.T) {
	p := startProcess(t, dataRefConfig(t))
	seen := make(chan probeTask, 8)
	startProbeAgentToken(t, p, seen, agentToken(t, "probe", "agent:serve agent:trusted"))
	writer := blobToken(t, "blobs:write")
	data := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	ref := uploadBlob(t, p, writer, data)
	other := uploadBlob(t, p, writer, []byte("other bytes"))

	r := p.rpcCall(t, "", "agent.copy", fmt.Sprintf(`{"upload":true,"data_refs":[{"uri":%q,"offset":10,"length":6}]}`, ref))
	var res struct {
		DataRefs []struct{ URI string } `json:"data_refs"`
	}
	if err := json.Unmarshal(r.reply.Result, &res); err != nil || len(res.DataRefs) != 1 {
		t.Fatalf("agent.copy: %s", r.body)
	}
	task := <-seen
	in, up := task.refs[0], task.upload
	auth := in.GetHeaders()["Authorization"]
	for _, u := range []string{in.GetUri(), up.GetUri()} {
		if pu, err := url.Parse(u); err != nil || pu.RawQuery != "" || !strings.HasPrefix(auth, "Bearer ghbt1.") {
			t.Fatalf("URL %q with Authorization %q: want a plain URL and a task token", u, auth)
		}
	}
	reader := blobToken(t, "blobs:read")
	out := p.blobBase() + strings.TrimPrefix(res.DataRefs[0].URI, "blob:")
	if status, _, body := httpDo(t, http.MethodGet, out, nil, "Authorization", "Bearer "+reader); status != http.StatusOK || body != "abcdef" {
		t.Fatalf("the output: %d %q; want the range the agent read and wrote", status, body)
	}

	otherURL := p.blobBase() + strings.TrimPrefix(other, "blob:")
	tests := []struct {
		name, method, url string
		header            []string
		status            int
		reason            string
	}{
		{"the granted range", http.MethodGet, in.GetUri(), []string{"Authorization", auth}, http.StatusPartialContent, ""},
		{"without the token", http.MethodGet, in.GetUri(), nil, http.StatusUnauthorized, "unsigned"},
		{"another key", http.MethodGet, otherURL, []string{"Authorization", auth}, http.StatusForbidden, "not_granted"},
		{"another range", http.MethodGet, in.GetUri(), []string{"Authorization", auth, "Range", "bytes=0-3"}, http.StatusRequestedRangeNotSatisfiable, "range_not_satisfiable"},
		{"another method", http.MethodPut, in.GetUri(), []string{"Authorization", auth}, http.StatusForbidden, "not_granted"},
		{"a second upload", http.MethodPut, up.GetUri(), []string{"Authorization", auth}, http.StatusConflict, "exists"},
		{"tampered", http.MethodGet, in.GetUri(), []string{"Authorization", auth[:len(auth)-3] + "AAA"}, http.StatusUnauthorized, "bad_signature"},
	}
	for _, tt := range tests {
		status, _, body := httpDo(t, tt.method, tt.url, []byte("x"), tt.header...)
		if status != tt.status || (tt.reason != "" && !strings.Contains(body, `"reason":"`+tt.reason+`"`)) {
			t.Errorf("%s: %d %s; want %d %s", tt.name, status, body, tt.status, tt.reason)
		}
	}
	// The token lives at most blobs.url_ttl (2s), and no longer than the task's timeout.
	time.Sleep(time.Until(time.UnixMilli(in.GetExpiresUnixMs())) + 50*time.Millisecond)
	if status, _, body := httpDo(t, http.MethodGet, in.GetUri(), nil, "Authorization", auth); status != http.StatusUnauthorized || !strings.Contains(body, `"reason":"expired"`) {
		t.Errorf("after expiry: %d %s; want 401 expired", status, body)
	}
}
