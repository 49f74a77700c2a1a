package agentlink_test

import (
	"crypto/x509"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/schemas"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
	"github.com/gatehouse-dev/gatehouse/state/blob"
)

func TestTrustedAgents(t *testing.T) {
	t.Parallel()
	cert := &x509.Certificate{}
	tests := []struct {
		name      string
		auth      agentlink.AuthConfig
		p         gateway.Principal
		anonymous bool
		creds     gateway.Credentials
		want      bool
	}{
		{"the default scope", agentlink.AuthConfig{}, gateway.Principal{Subject: "gpu-7", Scopes: []string{"agent:serve", "agent:trusted"}},
			false, gateway.Credentials{Bearer: "jwt"}, true},
		{"without the scope", agentlink.AuthConfig{}, gateway.Principal{Subject: "gpu-7", Scopes: []string{"agent:serve"}},
			false, gateway.Credentials{Bearer: "jwt"}, false},
		{"a configured scope", agentlink.AuthConfig{TrustedScope: "gpu:trusted"}, gateway.Principal{Subject: "gpu-7", Scopes: []string{"gpu:trusted"}},
			false, gateway.Credentials{Bearer: "jwt"}, true},
		{"the default scope when another is configured", agentlink.AuthConfig{TrustedScope: "gpu:trusted"},
			gateway.Principal{Subject: "gpu-7", Scopes: []string{"agent:trusted"}}, false, gateway.Credentials{Bearer: "jwt"}, false},
		{"a listed certificate", agentlink.AuthConfig{TrustedCertIdentities: []string{"spiffe://ex/gpu-7"}},
			gateway.Principal{Subject: "spiffe://ex/gpu-7"}, false, gateway.Credentials{ClientCert: cert}, true},
		{"an unlisted certificate", agentlink.AuthConfig{TrustedCertIdentities: []string{"spiffe://ex/gpu-7"}},
			gateway.Principal{Subject: "spiffe://ex/gpu-8"}, false, gateway.Credentials{ClientCert: cert}, false},
		{"a listed subject with a bearer token beside the certificate", agentlink.AuthConfig{TrustedCertIdentities: []string{"gpu-7"}},
			gateway.Principal{Subject: "gpu-7"}, false, gateway.Credentials{ClientCert: cert, Bearer: "jwt"}, false},
		{"a listed subject without a certificate", agentlink.AuthConfig{TrustedCertIdentities: []string{"gpu-7"}},
			gateway.Principal{Subject: "gpu-7"}, false, gateway.Credentials{Bearer: "jwt"}, false},
		{"anonymous, whatever it claims", agentlink.AuthConfig{TrustedCertIdentities: []string{"anonymous"}},
			gateway.Principal{Subject: "anonymous", Scopes: []string{"agent:trusted"}, Anonymous: true}, true, gateway.Credentials{ClientCert: cert}, false},
	}
	for _, tt := range tests {
		if got := agentlink.Trusted(tt.auth, tt.p, tt.anonymous, tt.creds); got != tt.want {
			t.Errorf("%s: trusted = %v; want %v", tt.name, got, tt.want)
		}
	}
}

// TestTrustedDispatch: a trusted agent's task carries plain URLs and one task token that
// grants exactly its ranges and upload, to it, for the task, within the task's timeout; an
// untrusted agent's (a credential without the trusted scope, or anonymous) carries signed
// URLs and no token.
func TestTrustedDispatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		token   string // "" anonymous, from loopback
		trusted bool
	}{
		{"trusted", true},
		{"all", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run("token="+tt.token, func(t *testing.T) {
			t.Parallel()
			urls, signer := blobURLs(t, true)
			h, addr := startHubOpts(t, fastConfig(), agentlink.Options{DataURLs: urls})
			a := connect(t, addr, tt.token, descriptor("gpu-7"))
			a.welcome()
			refs := []agentlink.DataRef{
				{URI: "blob:in/data", Name: "head", Offset: 4, Length: 6},
				{URI: "https://example.com/x", Name: "external", Headers: map[string]string{"X-Caller": "c"}},
				{URI: "blob:in/data", Name: "tail", Offset: 10},
			}
			start := time.Now()
			res := dispatchAsync(h, agentlink.Task{Operator: "echo", Input: echoInput("x"), Refs: refs, Timeout: 3 * time.Second, MaxOutputBytes: 100})
			d := a.dispatched()
			in := d.GetInputRefs()
			if len(in) != 3 || in[1].GetUri() != "https://example.com/x" || len(in[1].GetHeaders()) != 0 {
				t.Fatalf("input refs %v; want 3, the external one untouched and without headers", in)
			}
			for i, r := range []*agentlinkv1.DataRef{in[0], in[2]} {
				if r.GetName() != refs[2*i].Name || r.GetRange().GetOffset() != refs[2*i].Offset || r.GetRange().GetLength() != refs[2*i].Length {
					t.Errorf("ref %s: %v; want its name and range kept", refs[2*i].Name, r)
				}
			}
			up := d.GetOutputUpload()
			if !tt.trusted {
				if d.GetDataToken() != "" {
					t.Fatalf("an untrusted agent got a task token")
				}
				for _, r := range []*agentlinkv1.DataRef{in[0], in[2], up} {
					u, _ := url.Parse(r.GetUri())
					method := http.MethodGet
					if r == up {
						method = http.MethodPut
					}
					g, err := signer.Verify(method, strings.TrimPrefix(u.Path, blob.EndpointPath), u.RawQuery)
					if err != nil || g.Agent != "gpu-7" || g.Task != d.GetTaskId() || len(r.GetHeaders()) != 0 {
						t.Errorf("%s: %v (%v); want a URL signed for the task and the agent, no headers", r.GetUri(), g, err)
					}
				}
			} else {
				tok := d.GetDataToken()
				for _, r := range []*agentlinkv1.DataRef{in[0], in[2], up} {
					if u, err := url.Parse(r.GetUri()); err != nil || u.RawQuery != "" || r.GetHeaders()["Authorization"] != "Bearer "+tok {
						t.Errorf("%s (headers %v): want a plain URL with the token", r.GetUri(), r.GetHeaders())
					}
				}
				if in[0].GetUri() != "http://gw.example:8080/blobs/in/data" {
					t.Errorf("read URL %q", in[0].GetUri())
				}
				got, err := signer.VerifyToken(tok)
				if err != nil {
					t.Fatal(err)
				}
				upKey, _ := blob.ParseRef(up.GetName())
				want := []blob.Scope{
					{Method: http.MethodGet, Key: "in/data", Offset: 4, Length: 6},
					{Method: http.MethodGet, Key: "in/data", Offset: 10, Length: 6},
					{Method: http.MethodPut, Key: upKey, Length: 100},
				}
				if got.Task != d.GetTaskId() || got.Agent != "gpu-7" || len(got.Scopes) != len(want) {
					t.Fatalf("token %+v; want task %s, agent gpu-7, scopes %+v", got, d.GetTaskId(), want)
				}
				for i := range want {
					if got.Scopes[i] != want[i] {
						t.Errorf("scope %d = %+v; want %+v", i, got.Scopes[i], want[i])
					}
				}
				timeout := time.Duration(d.GetTimeoutMs()) * time.Millisecond
				if got.Expires.After(start.Add(timeout).Add(time.Second)) || got.Expires.After(time.Now().Add(timeout)) {
					t.Errorf("the token expires at %v, later than the task's timeout %v", got.Expires, timeout)
				}
				if up.GetExpiresUnixMs() != got.Expires.UnixMilli() {
					t.Errorf("the upload's expiry %d; want the token's %d", up.GetExpiresUnixMs(), got.Expires.UnixMilli())
				}
			}
			a.ack(d.GetTaskId(), true, "")
			a.result(d.GetTaskId(), agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, `{"text":"x"}`, "")
			if r := <-res; r.err != nil {
				t.Fatal(r.err)
			}
		})
	}
}

// TestTrustedDispatchRefusals: a trusted agent's task with a ref the store cannot grant
// fails before the agent sees it, naming the ref, as an untrusted one's does.
func TestTrustedDispatchRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		ref           agentlink.DataRef
		allowExternal bool
		reason        string
	}{
		{"missing", agentlink.DataRef{URI: "blob:in/nope", Name: "n"}, false, "no such blob object"},
		{"past the end", agentlink.DataRef{URI: "blob:in/data", Name: "n", Offset: 10, Length: 7}, false, "outside the object"},
		{"huge offset", agentlink.DataRef{URI: "blob:in/data", Name: "n", Offset: 1 << 63}, false, "outside the object"},
		{"invalid", agentlink.DataRef{URI: "blob:../x", Name: "n"}, false, "not a valid blob: ref"},
		{"external", agentlink.DataRef{URI: "http://169.254.169.254/", Name: "n"}, false, "only blob: data refs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			urls, _ := blobURLs(t, tt.allowExternal)
			_, err := urls.Scope(t.Context(), []agentlink.DataRef{{URI: "blob:in/data", Name: "ok"}, tt.ref}, "job/1", "gpu-7", 0, time.Second)
			data := wantCode(t, err, schemas.CodeInvalidParams)
			if data["data_ref"] != "n" || !strings.Contains(data["reason"].(string), tt.reason) {
				t.Errorf("Scope = %v; want ref n, reason %q", data, tt.reason)
			}
		})
	}
	b := agentlink.NewBlobURLs(func() *blob.Refs { return nil }, false)
	if _, err := b.Scope(t.Context(), nil, "t", "a", 0, time.Second); gateway.AsError(err).Code() != schemas.CodeUnavailable {
		t.Errorf("Scope without refs: %v", err)
	}
}

// TestTrustAndProgressDefaults: the trusted scope and the forwarded progress buffer default
// to agent:trusted and 64; set values are kept.
func TestTrustAndProgressDefaults(t *testing.T) {
	t.Parallel()
	d := agentlink.Config{}.WithDefaults()
	if d.Auth.TrustedScope != "agent:trusted" || d.ForwardedProgressBuffer != 64 {
		t.Errorf("defaults: trusted_scope %q, forwarded_progress_buffer %d", d.Auth.TrustedScope, d.ForwardedProgressBuffer)
	}
	c := agentlink.Config{ForwardedProgressBuffer: 3, Auth: agentlink.AuthConfig{TrustedScope: "gpu:trusted"}}.WithDefaults()
	if c.Auth.TrustedScope != "gpu:trusted" || c.ForwardedProgressBuffer != 3 {
		t.Errorf("set values: trusted_scope %q, forwarded_progress_buffer %d", c.Auth.TrustedScope, c.ForwardedProgressBuffer)
	}
}
